//! ROS 2's standard message types as CDR-serialized samples: the Rust twin of
//! probes/common/ros_types.cpp and src/linklab/probes/ros_types.py (layouts, where seq
//! and send time live, the geometry for a size). A sample is the encapsulation header
//! CDR_LE (00 01 00 00) and the XCDR1 body, byte for byte what Fast DDS 2.9 serializes.

use crate::types::Kind;

const ENCAP: usize = 4;
const IMAGE_CHANNELS: u64 = 3;
const POINT_STEP: u32 = 16;
const FLOAT32: u8 = 7; // sensor_msgs/PointField FLOAT32
const POINT_FIELDS: [(&str, u32); 4] = [("x", 0), ("y", 4), ("z", 8), ("intensity", 12)];
const SEQ_DIGITS: usize = 16;
pub const STRING_HEAD: u32 = 32;
pub const ARRAY_HEAD: u32 = 16;

/// (height, width, step) of an rgb8 image of n bytes: height = the largest divisor h of
/// n with 3*h*h <= n, step = n / h, width = step / 3.
pub fn image_geometry(n: u32) -> (u32, u32, u32) {
    let mut h = 1u64;
    let mut d = 1u64;
    while IMAGE_CHANNELS * d * d <= n as u64 {
        if n as u64 % d == 0 {
            h = d;
        }
        d += 1;
    }
    let step = n / h as u32;
    (h as u32, step / IMAGE_CHANNELS as u32, step)
}

/// Why a type cannot carry n payload bytes ("" when it can).
pub fn size_refusal(kind: Kind, n: u32) -> String {
    match kind {
        Kind::PointCloud2 if n % POINT_STEP != 0 => format!(
            "PointCloud2 carries whole 16-byte points (x, y, z, intensity as float32): expected \
             a multiple of 16 bytes, got {n}"),
        Kind::String if n < STRING_HEAD => format!(
            "String carries its seq and send time in its first 32 characters: expected at least \
             32 bytes, got {n}"),
        Kind::UInt8MultiArray if n < ARRAY_HEAD => format!(
            "UInt8MultiArray carries its seq and send time in its first 16 octets: expected at \
             least 16 bytes, got {n}"),
        _ => String::new(),
    }
}

/// probes/common's fill_pattern: xorshift32 bytes (nothing compresses them).
pub fn fill_pattern(out: &mut [u8]) {
    let mut x: u32 = 2463534242;
    for b in out.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
}

/// String's printable filler (never NUL).
fn fill_text(out: &mut [u8]) {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fill_pattern(out);
    for b in out.iter_mut() {
        *b = ALPHABET[(*b & 63) as usize];
    }
}

fn write_hex16(out: &mut [u8], v: u64) {
    out[..16].copy_from_slice(format!("{v:016x}").as_bytes());
}

fn read_hex16(text: &[u8]) -> Option<u64> {
    if text.len() != SEQ_DIGITS || !text.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(text).ok()?, 16).ok()
}

struct Writer {
    b: Vec<u8>,
}

impl Writer {
    fn align(&mut self, n: usize) {
        while (self.b.len() - ENCAP) % n != 0 {
            self.b.push(0);
        }
    }
    fn u8(&mut self, v: u8) {
        self.b.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.b.extend_from_slice(&v.to_le_bytes());
    }
    fn string(&mut self, s: &[u8]) {
        self.u32(s.len() as u32 + 1);
        self.b.extend_from_slice(s);
        self.b.push(0);
    }
    /// The stamp and a 16-digit frame_id; returns the stamp's offset.
    fn header(&mut self) -> usize {
        self.align(4);
        let at = self.b.len();
        self.b.extend_from_slice(&[0; 8]);
        self.string(&[b'0'; SEQ_DIGITS]);
        at
    }
    /// A sequence<octet> of n pattern bytes; returns the offset of its first octet.
    fn octets(&mut self, n: u32) -> usize {
        self.u32(n);
        let at = self.b.len();
        self.b.resize(at + n as usize, 0);
        fill_pattern(&mut self.b[at..]);
        at
    }
}

/// One serialized sample of a ROS 2 type for n payload bytes, built once; `stamp`
/// rewrites only seq and send time.
pub struct CdrSample {
    kind: Kind,
    at: usize,
    pub buffer: Vec<u8>,
}

impl CdrSample {
    pub fn new(kind: Kind, n: u32) -> CdrSample {
        let mut w = Writer { b: vec![0x00, 0x01, 0x00, 0x00] };
        let at = match kind {
            Kind::Image => {
                let (height, width, step) = image_geometry(n);
                let at = w.header();
                w.u32(height);
                w.u32(width);
                w.string(b"rgb8");
                w.u8(0); // is_bigendian
                w.u32(step);
                w.octets(n);
                at
            }
            Kind::PointCloud2 => cloud(&mut w, n),
            Kind::String => {
                w.u32(n + 1);
                let at = w.b.len();
                w.b.resize(at + n as usize + 1, 0);
                fill_text(&mut w.b[at..at + n as usize]);
                at
            }
            _ => {
                // UInt8MultiArray: one dimension "linklab" of n - 16, data_offset 16
                w.u32(1);
                w.string(b"linklab");
                w.u32(n - ARRAY_HEAD); // size
                w.u32(n - ARRAY_HEAD); // stride
                w.u32(ARRAY_HEAD); // data_offset
                w.octets(n)
            }
        };
        CdrSample { kind, at, buffer: w.b }
    }

    pub fn stamp(&mut self, seq: u64, t_ns: i64) {
        let at = self.at;
        let b = &mut self.buffer;
        match self.kind {
            Kind::Image | Kind::PointCloud2 => {
                let sec = t_ns.div_euclid(1_000_000_000) as i32;
                let nanosec = t_ns.rem_euclid(1_000_000_000) as u32;
                b[at..at + 4].copy_from_slice(&sec.to_le_bytes());
                b[at + 4..at + 8].copy_from_slice(&nanosec.to_le_bytes());
                write_hex16(&mut b[at + 12..], seq);
            }
            Kind::String => {
                write_hex16(&mut b[at..], seq);
                write_hex16(&mut b[at + 16..], t_ns as u64);
            }
            _ => {
                b[at..at + 8].copy_from_slice(&seq.to_le_bytes());
                b[at + 8..at + 16].copy_from_slice(&t_ns.to_le_bytes());
            }
        }
    }
}

/// PointCloud2's fields around n bytes of 16-byte points; returns the stamp's offset.
fn cloud(w: &mut Writer, n: u32) -> usize {
    let at = w.header();
    w.u32(1); // height
    w.u32(n / POINT_STEP); // width
    w.u32(POINT_FIELDS.len() as u32);
    for (name, offset) in POINT_FIELDS {
        w.string(name.as_bytes());
        w.u32(offset);
        w.u8(FLOAT32);
        w.u32(1);
    }
    w.u8(0); // is_bigendian
    w.u32(POINT_STEP);
    w.u32(n); // row_step
    w.octets(n);
    w.u8(1); // is_dense
    at
}

struct Reader<'a> {
    d: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn need(&mut self, k: usize) -> Option<usize> {
        let at = self.pos;
        if k > self.d.len() - at {
            return None;
        }
        self.pos += k;
        Some(at)
    }
    fn align(&mut self, n: usize) -> Option<()> {
        let pad = (n - (self.pos - ENCAP) % n) % n;
        self.need(pad).map(|_| ())
    }
    fn u8(&mut self) -> Option<u8> {
        let at = self.need(1)?;
        Some(self.d[at])
    }
    fn u32(&mut self) -> Option<u32> {
        self.align(4)?;
        let at = self.need(4)?;
        Some(u32::from_le_bytes(self.d[at..at + 4].try_into().ok()?))
    }
    fn string(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        let at = self.need(n)?;
        if n == 0 || self.d[at + n - 1] != 0 {
            return None;
        }
        Some(&self.d[at..at + n - 1])
    }
    fn octets(&mut self) -> Option<(usize, u32)> {
        let n = self.u32()?;
        Some((self.need(n as usize)?, n))
    }
    /// (seq, send time) of a std_msgs/Header.
    fn header(&mut self) -> Option<(u64, i64)> {
        self.align(4)?;
        let at = self.need(8)?;
        let sec = i32::from_le_bytes(self.d[at..at + 4].try_into().ok()?);
        let nanosec = u32::from_le_bytes(self.d[at + 4..at + 8].try_into().ok()?);
        let seq = read_hex16(self.string()?)?;
        Some((seq, sec as i64 * 1_000_000_000 + nanosec as i64))
    }
}

/// (seq, t_send_ns, payload bytes) of a serialized sample, or None when it is not a
/// linklab sample of this type (truncated, not CDR_LE, no seq/send time in it).
pub fn read(kind: Kind, data: &[u8]) -> Option<(u64, i64, u32)> {
    if data.len() < ENCAP || data[0] != 0x00 || data[1] != 0x01 {
        return None;
    }
    let mut r = Reader { d: data, pos: ENCAP };
    match kind {
        Kind::Image => {
            let (seq, t) = r.header()?;
            r.u32()?;
            r.u32()?;
            r.string()?;
            r.u8()?;
            r.u32()?;
            let (_, n) = r.octets()?;
            Some((seq, t, n))
        }
        Kind::PointCloud2 => read_cloud(&mut r),
        Kind::String => {
            let text = r.string()?;
            if text.len() < STRING_HEAD as usize {
                return None;
            }
            let seq = read_hex16(&text[..16])?;
            let t = read_hex16(&text[16..32])? as i64;
            Some((seq, t, text.len() as u32))
        }
        Kind::UInt8MultiArray => {
            for _ in 0..r.u32()? {
                r.string()?;
                r.u32()?;
                r.u32()?;
            }
            r.u32()?; // data_offset
            let (at, n) = r.octets()?;
            if n < ARRAY_HEAD {
                return None;
            }
            let seq = u64::from_le_bytes(data[at..at + 8].try_into().ok()?);
            let t = i64::from_le_bytes(data[at + 8..at + 16].try_into().ok()?);
            Some((seq, t, n))
        }
        _ => None,
    }
}

fn read_cloud(r: &mut Reader) -> Option<(u64, i64, u32)> {
    let (seq, t) = r.header()?;
    r.u32()?;
    r.u32()?;
    for _ in 0..r.u32()? {
        r.string()?;
        r.u32()?;
        r.u8()?;
        r.u32()?;
    }
    r.u8()?;
    r.u32()?;
    r.u32()?;
    let (_, n) = r.octets()?;
    r.u8()?;
    Some((seq, t, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_round_trips_and_has_its_overhead() {
        // bytes besides the payload, encapsulation excluded (ros_types.py OVERHEAD)
        for (kind, n, overhead) in [(Kind::Image, 3072, 60), (Kind::PointCloud2, 4096, 149),
                                    (Kind::String, 100, 5), (Kind::UInt8MultiArray, 64, 32)] {
            let mut s = CdrSample::new(kind, n);
            assert_eq!(s.buffer.len(), ENCAP + n as usize + overhead, "{kind:?}");
            s.stamp(42, 1_234_567_890_123);
            assert_eq!(read(kind, &s.buffer), Some((42, 1_234_567_890_123, n)), "{kind:?}");
            assert_eq!(read(kind, &s.buffer[..s.buffer.len() - 3]), None, "{kind:?}");
        }
    }

    #[test]
    fn sizes_a_type_cannot_carry_are_refused() {
        assert!(!size_refusal(Kind::PointCloud2, 17).is_empty());
        assert!(!size_refusal(Kind::String, 31).is_empty());
        assert!(size_refusal(Kind::Image, 1).is_empty());
        assert_eq!(image_geometry(3072), (32, 32, 96));
    }
}
