//! A batch of features packed without padding: their real tokens one after another, with each
//! sequence's first row (`starts`, its last entry the token count), written where an [`Upload`]
//! says: the same addresses for every batch of a slot, so a captured CUDA graph can replay them.
//! CPU only, tested in CI.

use crate::benchmarks::bert::cpu::Feature;
use crate::engines::gpu::GpuError;

/// Keys per step of the attention kernel's online softmax (its `KEYS`): a block stages its
/// sequence's keys and values rounded up to this.
pub const KEY_STEP: usize = 64;
/// Token counts are rounded up to this for the products: fewer shapes to prepare, and the rows
/// past the last token are never read back.
pub const TOKEN_ROUNDING: usize = 64;

/// What the model accepts, for checking samples before they reach the GPU (an index past a
/// table would read outside it).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub vocab: usize,
    pub token_types: usize,
    pub max_positions: usize,
}

#[derive(Debug, Default, PartialEq)]
pub struct Packed {
    pub ids: Vec<i32>,
    pub segments: Vec<i32>,
    pub positions: Vec<i32>,
    pub starts: Vec<i32>,
    /// The longest feature's tokens.
    pub longest: usize,
}

impl Packed {
    pub fn tokens(&self) -> usize {
        self.ids.len()
    }

    /// The token count the products run on.
    pub fn padded_tokens(&self) -> usize {
        self.tokens().next_multiple_of(TOKEN_ROUNDING).max(TOKEN_ROUNDING)
    }

    pub fn sequences(&self) -> usize {
        self.starts.len() - 1
    }

    /// Packs `features` (each a sample index and its decoded feature).
    pub fn new(features: &[(usize, Feature)], limits: Limits) -> Result<Packed, GpuError> {
        let mut p = Packed { starts: vec![0], ..Packed::default() };
        for (index, f) in features {
            let len = f.length.max(1);
            if len > limits.max_positions {
                return Err(GpuError::Run(format!("sample {index} has {len} tokens; the model has {} positions", limits.max_positions)));
            }
            let (ids, segments) = (&f.ids()[..len], &f.segments()[..len]);
            if let Some(id) = ids.iter().find(|&&i| i < 0 || i as usize >= limits.vocab) {
                return Err(GpuError::Run(format!(
                    "sample {index} has token id {id}; the model's vocabulary has {} (was the set tokenized with another vocabulary?)",
                    limits.vocab
                )));
            }
            if let Some(t) = segments.iter().find(|&&t| t < 0 || t as usize >= limits.token_types) {
                return Err(GpuError::Run(format!("sample {index} has segment id {t}; the model has {} token types", limits.token_types)));
            }
            p.ids.extend_from_slice(ids);
            p.segments.extend_from_slice(segments);
            p.positions.extend(0..len as i32);
            p.starts.push(p.ids.len() as i32);
            p.longest = p.longest.max(len);
        }
        Ok(p)
    }

    /// Writes the int32 parts where `upload` puts them.
    ///
    /// # Panics
    /// If the batch is larger than `upload` was made for.
    pub fn write(&self, upload: &Upload, out: &mut [u8]) {
        assert!(self.tokens() <= upload.tokens && self.starts.len() <= upload.features + 1, "a batch within its slot");
        for (part, at) in [&self.ids, &self.segments, &self.positions, &self.starts].into_iter().zip(upload.offsets()) {
            for (i, v) in part.iter().enumerate() {
                out[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// Byte offset of the token count (the last entry of `starts`) in `upload`'s layout.
    pub fn total_at(&self, upload: &Upload) -> usize {
        upload.offsets()[3] + 4 * (self.starts.len() - 1)
    }
}

/// Where a slot's uploads go: ids, segments, positions and starts, each at a fixed offset sized
/// for a full batch of full-length features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Upload {
    pub features: usize,
    pub tokens: usize,
}

impl Upload {
    pub fn new(features: usize, seq: usize) -> Upload {
        Upload { features, tokens: features * seq }
    }

    /// Byte offsets of ids, segments, positions and starts.
    pub fn offsets(&self) -> [usize; 4] {
        let t = 4 * self.tokens;
        [0, t, 2 * t, 3 * t]
    }

    /// Bytes from the first part to the end of the last.
    pub fn bytes(&self) -> usize {
        self.offsets()[3] + 4 * (self.features + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(len: usize, seq: usize) -> Feature {
        let ids: Vec<i32> = (0..seq).map(|i| if i < len { 5 + i as i32 } else { 0 }).collect();
        let segs: Vec<i32> = (0..seq).map(|i| i32::from(i >= 2 && i < len)).collect();
        let mask: Vec<i32> = (0..seq).map(|i| i32::from(i < len)).collect();
        let bytes: Vec<u8> = ids.iter().chain(&segs).chain(&mask).flat_map(|v| v.to_le_bytes()).collect();
        Feature::decode(&bytes, seq).unwrap()
    }

    const LIMITS: Limits = Limits { vocab: 400, token_types: 2, max_positions: 384 };

    #[test]
    fn features_pack_back_to_back_with_their_starts_and_tiles() {
        let p = Packed::new(&[(7, feature(3, 384)), (8, feature(130, 384)), (9, feature(64, 384))], LIMITS).unwrap();
        assert_eq!(p.tokens(), 197);
        assert_eq!(p.padded_tokens(), 256);
        assert_eq!(p.starts, [0, 3, 133, 197]);
        assert_eq!((p.sequences(), p.longest), (3, 130));
        assert_eq!(&p.ids[..4], [5, 6, 7, 5]);
        assert_eq!(&p.positions[..5], [0, 1, 2, 0, 1]);
        assert_eq!(&p.segments[..4], [0, 0, 1, 0]);
        let upload = Upload::new(4, 384);
        let mut out = vec![0u8; upload.bytes()];
        p.write(&upload, &mut out);
        let o = upload.offsets();
        let at = |out: &[u8], offset: usize| i32::from_le_bytes(out[offset..offset + 4].try_into().unwrap());
        assert_eq!((at(&out, o[3] + 4), at(&out, o[2] + 12), at(&out, o[1] + 8)), (3, 0, 1));
        assert_eq!(at(&out, p.total_at(&upload)), 197);
        // The largest batch fits.
        let full: Vec<_> = (0..4).map(|i| (i, feature(384, 384))).collect();
        let p = Packed::new(&full, LIMITS).unwrap();
        p.write(&upload, &mut out);
        assert_eq!(at(&out, p.total_at(&upload)), 4 * 384);
    }

    #[test]
    fn samples_outside_the_model_are_refused_with_the_sample() {
        let small = Limits { vocab: 50, ..LIMITS };
        let err = Packed::new(&[(3, feature(10, 384)), (4, feature(60, 384))], small).unwrap_err().to_string();
        assert!(err.contains("sample 4 has token id 50") && err.contains("vocabulary has 50"), "{err}");
        let short = Limits { max_positions: 128, ..LIMITS };
        let err = Packed::new(&[(5, feature(200, 384))], short).unwrap_err().to_string();
        assert!(err.contains("sample 5 has 200 tokens; the model has 128 positions"), "{err}");
    }
}
