//! The generator kit behind every synthetic workload (never submittable): a seeded random stream
//! ([`rng`]), deterministic images ([`image`]), a convolutional classifier of ResNet50 v1.5's
//! topology written as ONNX ([`model`]), and the manifest that lets a generated set be reused only
//! while its generator and files match ([`manifest`]). The workloads built from them live with
//! their families (`benchmarks::resnet50::synthetic`, `benchmarks::bert::synthetic`,
//! `benchmarks::unet3d::synthetic`); the engines' own tests use the model and images directly.

pub mod image;
pub mod manifest;
pub mod model;
pub mod rng;

pub use image::{synthetic_image, synthetic_image_f32};

use crate::engines::{ElementType, InputSpec, Layout};

/// Bumped whenever anything generated changes (topology, weights, images, calibration, file
/// formats): a manifest of another version makes `ensure_synthetic_resnet50` regenerate.
pub const GENERATOR_VERSION: u32 = 1;

/// The input spec of the synthetic model at `size` px for `batch_size` (f32 samples in `layout`).
pub fn input_spec(size: usize, batch_size: usize, layout: Layout) -> InputSpec {
    InputSpec { batch_size, channels: image::CHANNELS, height: size, width: size, layout, element: ElementType::F32, scale: 1.0 }
}

/// A 64-bit content hash for detecting changed or truncated files (integrity, not security):
/// FNV-1a-style mixing over 8-byte words, then the tail bytes and the length.
pub(crate) fn content_hash(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(PRIME).rotate_left(23);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    (h ^ bytes.len() as u64).wrapping_mul(PRIME)
}
