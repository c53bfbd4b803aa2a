//! The seeded generator behind the synthetic model's weights and the synthetic images.
//!
//! SplitMix64 (Steele, Lea and Flood, 2014): tiny, fast, passes BigCrush, and defined purely by
//! integer arithmetic, so a seed gives the same stream on every machine. Values are turned into
//! floats only with exact operations (a 24-bit integer times a power of two), and consumers use no
//! transcendental functions, so generated files are byte-identical across platforms and libms.

/// A SplitMix64 stream.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// A stream for one named purpose under a seed (one tensor, one image): streams of different
    /// names are independent, so adding a tensor never changes the values of the others.
    pub fn derive(seed: u64, name: &str, index: u64) -> SplitMix64 {
        let mut h = SplitMix64::new(seed ^ 0x6a09_e667_f3bc_c908);
        let mut acc = h.next_u64();
        for chunk in name.as_bytes().chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            acc = SplitMix64::new(acc ^ u64::from_le_bytes(word)).next_u64();
        }
        SplitMix64::new(SplitMix64::new(acc ^ index).next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), with 24 random bits (exactly representable in f32).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / 16_777_216.0)
    }

    /// Uniform in [-1, 1).
    pub fn symmetric(&mut self) -> f32 {
        self.unit() * 2.0 - 1.0
    }

    /// Uniform integer in `lo..=hi`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next_u64() % u64::from(hi - lo + 1)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = SplitMix64::derive(7, "conv1.weight", 0);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = SplitMix64::derive(7, "conv1.weight", 0);
                move |_| r.next_u64()
            })
            .collect();
        let c = SplitMix64::derive(7, "conv1.bias", 0).next_u64();
        let d = SplitMix64::derive(8, "conv1.weight", 0).next_u64();
        assert_eq!(a, b);
        assert_ne!(a[0], c);
        assert_ne!(a[0], d);
        let mut r = SplitMix64::new(1);
        for _ in 0..1000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            let k = r.range(2, 5);
            assert!((2..=5).contains(&k));
        }
    }
}
