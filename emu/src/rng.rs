//! Deterministic, seedable random numbers (xoshiro256++ seeded by splitmix64) and
//! the delay distributions of netem.

pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// One stream per (seed, stream id): each stage gets its own, so adding a stage
    /// does not change the random numbers another stage sees.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut st = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let mut s = [0u64; 4];
        for v in s.iter_mut() {
            *v = splitmix64(&mut st);
        }
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1): safe for logarithms and inverse CDFs.
    #[inline]
    pub fn uniform_open(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }

    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * self.uniform_open().ln()
    }
}

/// Inverse of the standard normal CDF (Acklam's rational approximation, relative
/// error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
        1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
        6.680131188771972e+01, -1.328068155288572e+01,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
        -2.549671010161147e+00, 4.374664141464968e+00, 2.938163982698783e+00,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
        3.754408661907416e+00,
    ];
    let plow = 0.02425;
    if p < plow {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - plow {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    Uniform,
    Normal,
    Pareto,
    ParetoNormal,
}

impl Distribution {
    pub fn parse(text: &str) -> Option<Distribution> {
        match text {
            "uniform" => Some(Distribution::Uniform),
            "normal" => Some(Distribution::Normal),
            "pareto" => Some(Distribution::Pareto),
            "paretonormal" => Some(Distribution::ParetoNormal),
            _ => None,
        }
    }
}

// netem's tables store values in units of sigma as 16-bit integers scaled by
// NETEM_DIST_SCALE = 8192, so every table value lies in [-4, 4) sigma.
const TABLE_LIMIT: f64 = 32767.0 / 8192.0;

/// netem's Pareto table (iproute2 netem/pareto.c and paretonormal.c, shape a = 3):
/// quantile q -> ((1 - q)^(-1/a) - 1.5) * 4/3, capped at the table's maximum.
fn pareto_value(q: f64) -> f64 {
    let v = ((1.0 - q).powf(-1.0 / 3.0) - 1.5) * (4.0 / 3.0);
    v.min(TABLE_LIMIT)
}

/// One jitter sample in units of sigma (the `jitter` argument), as netem draws it:
/// uniform in [-1, 1); the normal, pareto and paretonormal tables read at a
/// uniform quantile. paretonormal = (normal + 3 * pareto) / 4 at the same quantile
/// (iproute2 netem/paretonormal.c).
pub fn jitter_sample(rng: &mut Rng, dist: Distribution) -> f64 {
    match dist {
        Distribution::Uniform => 2.0 * rng.uniform() - 1.0,
        Distribution::Normal => normal_quantile(rng.uniform_open()).clamp(-4.0, TABLE_LIMIT),
        Distribution::Pareto => pareto_value(rng.uniform_open()),
        Distribution::ParetoNormal => {
            let q = rng.uniform_open();
            let v = (normal_quantile(q) + 3.0 * pareto_value(q)) / 4.0;
            v.clamp(-4.0, TABLE_LIMIT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_uniform() {
        // chi-square over 100 bins, 1e6 draws: 99 degrees of freedom, the 0.1 %
        // critical value is 148.2
        for seed in [1u64, 2, 11, 12345] {
            let mut rng = Rng::new(seed, 1000);
            let mut bins = [0u32; 100];
            let n = 1_000_000;
            for _ in 0..n {
                bins[(rng.uniform() * 100.0) as usize] += 1;
            }
            let expected = n as f64 / 100.0;
            let chi2: f64 = bins.iter().map(|&b| (b as f64 - expected).powi(2) / expected).sum();
            assert!(chi2 < 148.2, "seed {seed}: chi2 {chi2}");
        }
    }

    #[test]
    fn same_seed_same_numbers_other_stream_other_numbers() {
        let (mut a, mut b, mut c) = (Rng::new(7, 1), Rng::new(7, 1), Rng::new(7, 2));
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn normal_quantile_matches_known_values() {
        assert!((normal_quantile(0.5)).abs() < 1e-9);
        assert!((normal_quantile(0.975) - 1.959963985).abs() < 1e-6);
        let v = normal_quantile(0.001);
        assert!((v + 3.090232306).abs() < 1e-4, "{v}");
    }
}
