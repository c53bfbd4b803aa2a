//! Deterministic synthetic images, generated from their index alone.
//!
//! Each image looks like MLPerf's preprocessed ImageNet data numerically: RGB values on the 0..255
//! scale minus the ImageNet channel means (range about -124..+152, standard deviation about 55), as
//! f32. Its content is a smooth random field of colours (a coarse grid of random colours blended
//! with smoothstep), a colour gradient, oriented stripes and per-pixel noise, with every parameter
//! drawn from the index's own random stream: images differ in colour, frequency content and
//! orientation, which is what lets a random network tell them apart (see `val_map` labels).
//!
//! Only exact IEEE operations (+, -, *, /, sqrt) are used, so an index gives the same bytes on
//! every machine.

use super::rng::SplitMix64;
use crate::engines::Layout;

/// The per-channel means MLPerf's ResNet50 preprocessing subtracts (RGB).
pub const IMAGENET_MEAN: [f32; 3] = [123.68, 116.78, 103.94];
/// Channels of a synthetic image.
pub const CHANNELS: usize = 3;
/// Calibration images are drawn from indices far beyond any validation set, so a classifier is
/// not fitted on the very images it labels.
pub const CALIBRATION_FIRST_INDEX: usize = 1 << 30;

/// Image `index` at `size` x `size` pixels as little-endian f32 bytes in `layout` (one sample, no
/// batch dimension): what a preprocessed ImageNet `.npy` sample holds.
pub fn synthetic_image(index: usize, size: usize, layout: Layout) -> Vec<u8> {
    synthetic_image_f32(index, size, layout).iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// [`synthetic_image`] as f32 values.
pub fn synthetic_image_f32(index: usize, size: usize, layout: Layout) -> Vec<f32> {
    let mut rng = SplitMix64::derive(0x5eed_1a6e, "synthetic-image", index as u64);
    let s = size.max(1);

    // A (g+1) x (g+1) grid of random colours around a random base colour.
    let g = rng.range(2, 5) as usize;
    let base: [f32; 3] = [rng.unit() * 255.0, rng.unit() * 255.0, rng.unit() * 255.0];
    let spread = 40.0 + 70.0 * rng.unit();
    let grid: Vec<[f32; 3]> = (0..(g + 1) * (g + 1)).map(|_| base.map(|b| b + spread * rng.symmetric())).collect();
    // A linear gradient per channel.
    let grad: [[f32; 2]; 3] = [(); 3].map(|_| [60.0 * rng.symmetric(), 60.0 * rng.symmetric()]);
    // Stripes: a triangle wave along a random direction, 1..8 periods across the image.
    let (dx, dy) = {
        let (a, b) = (rng.symmetric(), rng.symmetric());
        let norm = (a * a + b * b).sqrt().max(1e-3);
        (a / norm, b / norm)
    };
    let periods = 1.0 + 7.0 * rng.unit();
    let phase = rng.unit();
    let stripe_amp: [f32; 3] = [(); 3].map(|_| 45.0 * rng.symmetric());
    let noise = 4.0 + 12.0 * rng.unit();

    let mut out = vec![0f32; CHANNELS * s * s];
    let denom = (s.max(2) - 1) as f32;
    for y in 0..s {
        let v = y as f32 / denom; // 0..=1
        let (gy, ty) = cell(v, g);
        for x in 0..s {
            let u = x as f32 / denom;
            let (gx, tx) = cell(u, g);
            let at = |cy: usize, cx: usize| grid[cy * (g + 1) + cx];
            let (c00, c01, c10, c11) = (at(gy, gx), at(gy, gx + 1), at(gy + 1, gx), at(gy + 1, gx + 1));
            let w = u * dx + v * dy; // position along the stripes' direction, -1.42..1.42
            let t = w * periods + phase + 8.0; // keep it positive for the fractional part
            let frac = t - (t as i64) as f32;
            let tri = 1.0 - 4.0 * (frac - 0.5).abs().min(0.5); // triangle wave in [-1, 1]
            for c in 0..CHANNELS {
                let top = c00[c] + (c01[c] - c00[c]) * tx;
                let bottom = c10[c] + (c11[c] - c10[c]) * tx;
                let smooth = top + (bottom - top) * ty;
                let value = smooth + grad[c][0] * (u - 0.5) + grad[c][1] * (v - 0.5) + stripe_amp[c] * tri + noise * rng.symmetric();
                let value = value.clamp(0.0, 255.0) - IMAGENET_MEAN[c];
                let i = match layout {
                    Layout::Nchw => (c * s + y) * s + x,
                    Layout::Nhwc => (y * s + x) * CHANNELS + c,
                };
                out[i] = value;
            }
        }
    }
    out
}

/// The grid cell of a coordinate in [0, 1] and the smoothstep weight within it.
fn cell(p: f32, g: usize) -> (usize, f32) {
    let scaled = p * g as f32;
    let i = (scaled as usize).min(g - 1);
    let t = scaled - i as f32;
    (i, t * t * (3.0 - 2.0 * t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_deterministic_distinct_and_imagenet_like() {
        let a = synthetic_image(17, 32, Layout::Nchw);
        assert_eq!(a, synthetic_image(17, 32, Layout::Nchw));
        assert_eq!(a.len(), 3 * 32 * 32 * 4);
        assert_ne!(a, synthetic_image(18, 32, Layout::Nchw));

        let mut sum = 0f64;
        let mut sq = 0f64;
        let mut n = 0usize;
        for i in 0..64 {
            for v in synthetic_image_f32(i, 32, Layout::Nchw) {
                assert!((-124.0..=152.0).contains(&v), "{v}");
                sum += v as f64;
                sq += (v as f64) * (v as f64);
                n += 1;
            }
        }
        let mean = sum / n as f64;
        let rms = (sq / n as f64).sqrt();
        assert!(mean.abs() < 40.0, "mean {mean}");
        assert!((25.0..100.0).contains(&rms), "rms {rms}");
    }

    #[test]
    fn layouts_hold_the_same_pixels() {
        let (s, c) = (8, CHANNELS);
        let chw = synthetic_image_f32(3, s, Layout::Nchw);
        let hwc = synthetic_image_f32(3, s, Layout::Nhwc);
        for ch in 0..c {
            for p in 0..s * s {
                assert_eq!(chw[ch * s * s + p], hwc[p * c + ch]);
            }
        }
    }
}
