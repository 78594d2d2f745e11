//! How long a PPDU and its response hold the medium (integer nanoseconds).
//!
//! IEEE Std 802.11-2020 (clause numbers as in 802.11-2016 where they agree):
//! - 802.11a OFDM, 17.3.5.4 (Eq. 17-11/17-12): TXTIME = 16 us preamble + 4 us SIGNAL
//!   + 4 us x ceil((16 + 8 L + 6) / N_DBPS);
//! - HT mixed format, 19.4.3 (Eq. 19-135): L-STF + L-LTF + L-SIG 20 us, HT-SIG 8 us,
//!   HT-STF 4 us, 4 us per HT-LTF, data symbols of 4 us (3.6 us short GI, the sum
//!   rounded up to a 4 us multiple); at 2.4 GHz a 6 us signal extension;
//! - VHT, 21.4.3 (Eq. 21-105): legacy 20 us + VHT-SIG-A 8 + VHT-STF 4 + 4 per VHT-LTF
//!   + VHT-SIG-B 4, symbols as HT;
//! - HE SU, 27.4.3 (Eq. 27-135): legacy 20 us + RL-SIG 4 + HE-SIG-A 8 + HE-STF 4 +
//!   N_HE-LTF x (6.4 us + GI) (2x HE-LTF; the 3.2 us GI goes with the 4x HE-LTF,
//!   12.8 us + GI, 27.3.11.10), data symbols 12.8 us + GI; no packet extension.
//!
//! N_DBPS = N_SD x N_BPSCS x R x N_SS (the MCS tables of 19.5, 21.5, 27.5). Number of
//! LTFs for 1, 2, 3, 4 spatial streams: 1, 2, 4, 4 (the N_LTF tables of clauses 19, 21
//! and 27).
//!
//! Approximations, stated: HT/VHT tail bits 6 x N_ES with N_ES = ceil(short-GI rate /
//! 300 Mbit/s) for HT (19.3.5: two encoders above 300 Mbit/s) and / 600 Mbit/s for VHT
//! (the VHT MCS tables' N_ES, to within a symbol); HE is LDPC-coded (no tail bits,
//! no LDPC extra symbol, 27.3.12.5.2); HE N_DBPS is rounded down when fractional.

/// The 802.11 amendment whose PHY and MAC timing a medium follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standard {
    A,
    N,
    Ac,
    Ax,
}

/// The band (SIFS and the 2.4 GHz signal extension depend on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    TwoFour,
    Five,
    Six,
}

/// MAC overhead of one data MPDU (9.2.4.1, 9.3.2.1): a QoS data header of 26 B (a
/// non-QoS 802.11a DCF station sends 24 B), LLC/SNAP 8 B, FCS 4 B.
pub const LLC_SNAP: u32 = 8;
pub const FCS: u32 = 4;
/// ACK frame 14 B, compressed BlockAck 32 B (9.3.1.3, 9.3.1.8, 64-bit bitmap).
pub const ACK_BYTES: u32 = 14;
pub const BLOCK_ACK_BYTES: u32 = 32;
/// A-MPDU subframe delimiter (9.7.1, Figure 9-1040).
pub const DELIMITER: u32 = 4;
pub const SLOT_NS: u64 = 9_000;

/// N_BPSCS and coding rate (numerator, denominator) of HT/VHT/HE MCS 0..11
/// (19.5 Table 19-27.., 21.5, 27.5: BPSK 1/2 .. 1024-QAM 5/6).
const MODULATION: [(u64, u64, u64); 12] = [
    (1, 1, 2), (2, 1, 2), (2, 3, 4), (4, 1, 2), (4, 3, 4), (6, 2, 3),
    (6, 3, 4), (6, 5, 6), (8, 3, 4), (8, 5, 6), (10, 3, 4), (10, 5, 6),
];
/// 802.11a N_DBPS of 6, 9, 12, 18, 24, 36, 48, 54 Mbit/s (17.3.2.3, Table 17-4).
pub const OFDM_N_DBPS: [u64; 8] = [24, 36, 48, 72, 96, 144, 192, 216];

/// Data subcarriers per width (the N_SD of the MCS tables, 19.5, 21.5, 27.5; the HE
/// numbers are those of the full-band 242/484/996/2x996-tone RUs).
pub fn data_subcarriers(standard: Standard, width_mhz: u32) -> u64 {
    match (standard, width_mhz) {
        (Standard::A, _) => 48,
        (Standard::Ax, 20) => 234,
        (Standard::Ax, 40) => 468,
        (Standard::Ax, 80) => 980,
        (Standard::Ax, _) => 1960,
        (_, 20) => 52,
        (_, 40) => 108,
        (_, 80) => 234,
        _ => 468,
    }
}

/// (N_DBPS numerator, denominator) before rounding: the caller checks divisibility.
pub fn n_dbps_exact(standard: Standard, width_mhz: u32, nss: u32, mcs: u32) -> (u64, u64) {
    if standard == Standard::A {
        return (OFDM_N_DBPS[mcs as usize], 1);
    }
    let (bpscs, num, den) = MODULATION[mcs as usize];
    (data_subcarriers(standard, width_mhz) * bpscs * num * nss as u64, den)
}

/// The PHY timing of the configured data rate, precomputed once.
#[derive(Debug, Clone)]
pub struct Airtime {
    pub standard: Standard,
    pub n_dbps: u64,
    /// preamble and headers before the first data symbol
    preamble_ns: u64,
    /// the data symbol (with its guard interval)
    symbol_ns: u64,
    /// HT/VHT short GI: the data field is rounded up to a 4 us multiple
    short_gi: bool,
    /// SERVICE (16) + tail bits (6 N_ES; 0 for LDPC-coded HE)
    extra_bits: u64,
    /// 6 us signal extension at 2.4 GHz (19.4.3, 18.3.2.4)
    signal_extension_ns: u64,
    pub sifs_ns: u64,
    /// the control response rate's N_DBPS (6/12/24 Mbit/s, 10.6.6.5)
    response_n_dbps: u64,
    pub mac_header: u32,
}

fn ltf_count(nss: u32) -> u64 {
    [1, 2, 4, 4][(nss.clamp(1, 4) - 1) as usize]
}

impl Airtime {
    pub fn new(standard: Standard, band: Band, width_mhz: u32, nss: u32, mcs: u32, gi_ns: u32) -> Airtime {
        let (num, den) = n_dbps_exact(standard, width_mhz, nss, mcs);
        let n_dbps = num / den; // exact for a/HT/VHT (checked by spec.rs); HE rounds down
        let gi = gi_ns as u64;
        let ltfs = ltf_count(nss);
        let (preamble_ns, symbol_ns) = match standard {
            Standard::A => (20_000, 4_000),
            Standard::N => (20_000 + 8_000 + 4_000 + 4_000 * ltfs, 3_200 + gi),
            Standard::Ac => (20_000 + 8_000 + 4_000 + 4_000 * ltfs + 4_000, 3_200 + gi),
            Standard::Ax => {
                let ltf = if gi_ns == 3200 { 12_800 + gi } else { 6_400 + gi };
                (20_000 + 4_000 + 8_000 + 4_000 + ltfs * ltf, 12_800 + gi)
            }
        };
        // N_ES from the short-GI rate: N_DBPS / 3.6 us in Mbit/s
        let encoders = |limit_mbps: u64| (n_dbps * 10).div_ceil(36 * limit_mbps).max(1);
        let extra_bits = match standard {
            Standard::A => 16 + 6,
            Standard::N => 16 + 6 * encoders(300),
            Standard::Ac => 16 + 6 * encoders(600),
            Standard::Ax => 16,
        };
        let two_four = band == Band::TwoFour;
        // the highest basic rate (6, 12, 24 Mbit/s) not above the data rate (10.6.6.5.2):
        // rate_mbps >= r  <=>  N_DBPS x 1000 >= r x symbol_ns
        let response_n_dbps = [(24u64, 96u64), (12, 48), (6, 24)]
            .into_iter()
            .find(|&(rate, _)| n_dbps * 1000 >= rate * symbol_ns)
            .map(|(_, bits)| bits)
            .unwrap_or(24);
        Airtime {
            standard,
            n_dbps,
            preamble_ns,
            symbol_ns,
            short_gi: gi_ns == 400,
            extra_bits,
            signal_extension_ns: if two_four && standard != Standard::A { 6_000 } else { 0 },
            sifs_ns: if two_four { 10_000 } else { 16_000 },
            response_n_dbps,
            // 802.11a: a non-QoS DCF data frame (24 B); n/ac/ax: QoS data (26 B)
            mac_header: if standard == Standard::A { 24 } else { 26 },
        }
    }

    /// One MPDU carrying an IP packet of `ip_bytes` (header + LLC/SNAP + IP + FCS).
    #[inline]
    pub fn mpdu_bytes(&self, ip_bytes: u32) -> u32 {
        self.mac_header + LLC_SNAP + ip_bytes + FCS
    }

    /// An A-MPDU subframe: delimiter + MPDU, padded to a 4-byte multiple (9.7.1; the
    /// last subframe's padding is counted too, as VHT/HE require and HT allows).
    #[inline]
    pub fn subframe_bytes(&self, ip_bytes: u32) -> u32 {
        (DELIMITER + self.mpdu_bytes(ip_bytes)).next_multiple_of(4)
    }

    /// Whether a PPDU of `mpdus` MPDUs is an A-MPDU (carries delimiters): any VHT/HE
    /// PPDU (a VHT single MPDU, 10.12.7), an HT PPDU with more than one.
    #[inline]
    pub fn delimited(&self, mpdus: usize) -> bool {
        match self.standard {
            Standard::A => false,
            Standard::N => mpdus > 1,
            Standard::Ac | Standard::Ax => true,
        }
    }

    /// The data PPDU carrying a PSDU of `psdu_bytes` at the configured MCS.
    #[inline]
    pub fn data_ppdu_ns(&self, psdu_bytes: u64) -> u64 {
        let symbols = (self.extra_bits + 8 * psdu_bytes).div_ceil(self.n_dbps);
        let data_ns = if self.short_gi {
            // HT/VHT short GI: T_SYML x ceil(T_SYMS x N_SYM / T_SYML) (Eq. 19-135, 21-105)
            (self.symbol_ns * symbols).div_ceil(4_000) * 4_000
        } else {
            self.symbol_ns * symbols
        };
        self.preamble_ns + data_ns + self.signal_extension_ns
    }

    /// A legacy (non-HT) OFDM PPDU at the rate with `n_dbps` (17.3.5.4; at 2.4 GHz an
    /// ERP-OFDM PPDU with its 6 us signal extension, 18.3.2.4).
    #[inline]
    pub fn legacy_ppdu_ns(&self, psdu_bytes: u64, n_dbps: u64) -> u64 {
        let extension = if self.sifs_ns == 10_000 { 6_000 } else { 0 };
        20_000 + 4_000 * (16 + 8 * psdu_bytes + 6).div_ceil(n_dbps) + extension
    }

    /// ACK (14 B) at the control response rate.
    pub fn ack_ns(&self) -> u64 {
        self.legacy_ppdu_ns(ACK_BYTES as u64, self.response_n_dbps)
    }

    /// Compressed BlockAck (32 B) at the control response rate.
    pub fn block_ack_ns(&self) -> u64 {
        self.legacy_ppdu_ns(BLOCK_ACK_BYTES as u64, self.response_n_dbps)
    }

    /// A group-addressed frame: one MPDU at 6 Mbit/s legacy OFDM (10.6.6.2: the basic
    /// rate; the lowest mandatory one here), never aggregated.
    pub fn multicast_ppdu_ns(&self, ip_bytes: u32) -> u64 {
        self.legacy_ppdu_ns(self.mpdu_bytes(ip_bytes) as u64, OFDM_N_DBPS[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(standard: Standard, band: Band, width: u32, nss: u32, mcs: u32, gi: u32) -> Airtime {
        Airtime::new(standard, band, width, nss, mcs, gi)
    }

    #[test]
    fn ofdm_1500_bytes_at_54_mbps_is_248_us() {
        // PSDU 24 + 8 + 1500 + 4 = 1536 B: (16 + 12288 + 6) / 216 = 56.99 -> 57 symbols,
        // 20 + 57 x 4 = 248 us; its ACK at 24 Mbit/s: (16 + 112 + 6) / 96 -> 2, 28 us
        let a = at(Standard::A, Band::Five, 20, 1, 7, 800);
        assert_eq!(a.mpdu_bytes(1500), 1536);
        assert_eq!(a.data_ppdu_ns(1536), 248_000);
        assert_eq!(a.ack_ns(), 28_000);
        assert_eq!(a.sifs_ns, 16_000);
        // 6 Mbit/s: ACK (134 bits) / 24 -> 6 symbols, 44 us; a 1500-B multicast:
        // 12310 / 24 -> 513 symbols, 2072 us
        let slow = at(Standard::A, Band::Five, 20, 1, 0, 800);
        assert_eq!(slow.ack_ns(), 44_000);
        assert_eq!(a.multicast_ppdu_ns(1500), 2_072_000);
    }

    #[test]
    fn vht_80_mhz_mcs7_one_1500_byte_mpdu_is_84_us() {
        // subframe 4 + (26 + 8 + 1500 + 4) = 1542 -> 1544 B; N_DBPS 234 x 6 x 5/6 = 1170;
        // (16 + 6 + 12352) / 1170 = 10.58 -> 11 symbols x 4 us = 44 us; preamble
        // 20 + 8 + 4 + 4 (one VHT-LTF) + 4 (VHT-SIG-B) = 40 us: 84 us. Short GI: 11 x 3.6
        // = 39.6 -> 40 us: 80 us. BlockAck at 24 Mbit/s: (16 + 256 + 6)/96 -> 3, 32 us.
        let v = at(Standard::Ac, Band::Five, 80, 1, 7, 800);
        assert_eq!(v.n_dbps, 1170);
        assert_eq!(v.subframe_bytes(1500), 1544);
        assert_eq!(v.data_ppdu_ns(1544), 84_000);
        assert_eq!(at(Standard::Ac, Band::Five, 80, 1, 7, 400).data_ppdu_ns(1544), 80_000);
        assert_eq!(v.block_ack_ns(), 32_000);
    }

    #[test]
    fn he_80_mhz_mcs7_one_1500_byte_mpdu_is_84_us() {
        // N_DBPS 980 x 6 x 5/6 = 4900; (16 + 12352) / 4900 = 2.52 -> 3 symbols x 13.6 us
        // = 40.8 us; preamble 20 + 4 + 8 + 4 + (6.4 + 0.8) = 43.2 us: 84.0 us
        let h = at(Standard::Ax, Band::Five, 80, 1, 7, 800);
        assert_eq!(h.n_dbps, 4900);
        assert_eq!(h.data_ppdu_ns(1544), 84_000);
        // two streams: two HE-LTFs, N_DBPS 9800, 12368 / 9800 -> 2 symbols: 27.2 + 50.4
        assert_eq!(at(Standard::Ax, Band::Five, 80, 2, 7, 800).data_ppdu_ns(1544), 77_600);
    }

    #[test]
    fn ht_at_2_4_ghz_has_the_signal_extension_and_short_sifs() {
        // HT 20 MHz MCS 7: N_DBPS 52 x 6 x 5/6 = 260; 1538-B MPDU (no delimiter alone):
        // (22 + 12304) / 260 = 47.4 -> 48 symbols = 192 us; 20 + 8 + 4 + 4 = 36 us
        // preamble; + 6 us extension = 234 us; SIFS 10 us
        let h = at(Standard::N, Band::TwoFour, 20, 1, 7, 800);
        assert!(!h.delimited(1));
        assert_eq!(h.data_ppdu_ns(1538), 234_000);
        assert_eq!(h.sifs_ns, 10_000);
    }
}
