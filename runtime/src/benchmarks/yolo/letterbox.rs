//! ultralytics' `LetterBox` as `predict` applies it to a fixed-shape (ONNX) model (`auto=False`,
//! centred, scale-up allowed), then its `preprocess`:
//!
//! - `r = min(S / h, S / w)`, the resized size `(round(w r), round(h r))` (Python's round, half to
//!   even), resized with `cv2.INTER_LINEAR` when it differs ([`crate::dataset::cvresize`]);
//! - padded with 114 to S x S: `dw = (S - w') / 2`, left `round(dw - 0.1)`, right `round(dw + 0.1)`,
//!   top and bottom likewise;
//! - BGR to RGB, CHW, `/ 255` in f32 (done by the engine from these bytes).
//!
//! ultralytics' `.pt` route letterboxes to the smallest stride-multiple rectangle instead
//! (`auto=True`); a batch needs one shape, so this is the exported model's route.

use crate::dataset::cvresize::resize_linear;
use crate::dataset::image::RgbImage;

/// The padding value of every channel.
pub const PAD: u8 = 114;

/// Where an image of `width x height` lands in the S x S input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    pub width: usize,
    pub height: usize,
    /// The resized size.
    pub new_width: usize,
    pub new_height: usize,
    pub left: usize,
    pub top: usize,
}

impl Geometry {
    /// The letterbox of a `width x height` image into a square of side `size`.
    pub fn of(width: usize, height: usize, size: usize) -> Geometry {
        let r = (size as f64 / height as f64).min(size as f64 / width as f64);
        let new_width = (width as f64 * r).round_ties_even() as usize;
        let new_height = (height as f64 * r).round_ties_even() as usize;
        let left = ((size - new_width) as f64 / 2.0 - 0.1).round_ties_even() as usize;
        let top = ((size - new_height) as f64 / 2.0 - 0.1).round_ties_even() as usize;
        Geometry { width, height, new_width, new_height, left, top }
    }
}

/// The letterboxed image: RGB, CHW, `size x size` bytes per channel.
pub fn letterbox(image: &RgbImage, size: usize) -> (Vec<u8>, Geometry) {
    let g = Geometry::of(image.width, image.height, size);
    let resized = if (g.new_width, g.new_height) == (image.width, image.height) {
        image.data.clone()
    } else {
        resize_linear(&image.data, image.width, image.height, 3, g.new_width, g.new_height)
    };
    let mut out = vec![PAD; 3 * size * size];
    for y in 0..g.new_height {
        for x in 0..g.new_width {
            let at = (y + g.top) * size + x + g.left;
            for c in 0..3 {
                out[c * size * size + at] = resized[(y * g.new_width + x) * 3 + c];
            }
        }
    }
    (out, g)
}

/// Bytes in front of a sample's pixels: the original width and height (u32 LE).
pub const SAMPLE_HEADER: usize = 8;

/// Bytes of a letterboxed sample at input side `size`: the header, then the letterboxed image
/// (RGB, CHW).
pub fn sample_bytes(size: usize) -> usize {
    SAMPLE_HEADER + 3 * size * size
}

/// A sample as the QSL holds it: the image letterboxed to `size`, with its original size in front
/// (the engine scales boxes back with it).
pub fn encode_sample(image: &RgbImage, size: usize) -> Vec<u8> {
    let (pixels, _) = letterbox(image, size);
    let mut out = Vec::with_capacity(sample_bytes(size));
    out.extend((image.width as u32).to_le_bytes());
    out.extend((image.height as u32).to_le_bytes());
    out.extend(pixels);
    out
}

/// A sample's original width and height and its letterboxed pixels; `None` when it is not a
/// sample of side `size`.
pub fn decode_sample(bytes: &[u8], size: usize) -> Option<(usize, usize, &[u8])> {
    if bytes.len() != sample_bytes(size) {
        return None;
    }
    let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]) as usize;
    Some((word(0), word(4), &bytes[SAMPLE_HEADER..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_geometry_is_ultralytics() {
        // 640 x 480 into 640: r = 1, dh = 80 -> top round(79.9) = 80, bottom round(80.1) = 80.
        assert_eq!(Geometry::of(640, 480, 640), Geometry { width: 640, height: 480, new_width: 640, new_height: 480, left: 0, top: 80 });
        // 500 x 333 into 640: r = 1.28, (640, 426.24 -> 426), dh = 107 -> top round(106.9) = 107.
        let g = Geometry::of(500, 333, 640);
        assert_eq!((g.new_width, g.new_height, g.left, g.top), (640, 426, 0, 107));
        // Odd padding: 7 px over -> 3.5: left round(3.4) = 3, right round(3.6) = 4.
        let g = Geometry::of(100, 57, 64);
        assert_eq!((g.new_width, g.new_height, g.left, g.top), (64, 36, 0, 14));
        let g = Geometry::of(57, 100, 64);
        assert_eq!((g.new_width, g.new_height, g.left, g.top), (36, 64, 14, 0));
        // Half-to-even: 2.5 rounds to 2 (round(25 * 0.1) with r = 0.1).
        let g = Geometry::of(640, 25, 64);
        assert_eq!((g.new_width, g.new_height), (64, 2));
    }

    /// `scripts/make_yolo_letterbox_fixture.py`'s image: BGR channel c of pixel (x, y).
    fn fixture_image(w: usize, h: usize) -> RgbImage {
        let bgr = |x: usize, y: usize, c: usize| ((x * 7 + y * 13 + c * 29 + (x * y) % 17 + (x / 3) * (y / 5)) % 256) as u8;
        RgbImage::new(w, h, (0..h).flat_map(|y| (0..w).flat_map(move |x| [bgr(x, y, 2), bgr(x, y, 1), bgr(x, y, 0)])).collect())
    }

    #[test]
    fn letterboxes_are_opencvs_and_ultralytics_bit_for_bit() {
        use sha2::{Digest, Sha256};
        let fixture: serde_json::Value = serde_json::from_str(include_str!("testdata/letterbox.json")).unwrap();
        let cases = fixture["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 13);
        for case in cases {
            let n = |k: &str| case[k].as_u64().unwrap() as usize;
            let (w, h, size) = (n("width"), n("height"), n("size"));
            let (out, _) = letterbox(&fixture_image(w, h), size);
            if let Some(hex) = case["hex"].as_str() {
                let wanted: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
                let differ: Vec<usize> = (0..out.len()).filter(|&i| out[i] != wanted[i]).collect();
                assert!(differ.is_empty(), "{w}x{h} -> {size}: {} values differ, first at {:?}", differ.len(), differ.first().map(|&i| (i, out[i], wanted[i])));
            }
            let hash: String = Sha256::digest(&out).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hash, case["sha256"].as_str().unwrap(), "{w}x{h} -> {size}");
        }
    }

    #[test]
    fn padding_is_114_and_pixels_are_planar_rgb() {
        let image = RgbImage::new(2, 1, vec![1, 2, 3, 4, 5, 6]);
        let (out, g) = letterbox(&image, 4);
        assert_eq!((g.new_width, g.new_height, g.left, g.top), (4, 2, 0, 1));
        assert_eq!(&out[..4], &[PAD; 4], "top row padded");
        assert_eq!(out[4], 1, "R plane at (0, 1)");
        assert_eq!(out[16 + 4], 2, "G plane");
        assert_eq!(out[32 + 4], 3, "B plane");
        assert_eq!(out[12..16], [PAD; 4], "bottom row padded");
        let sample = encode_sample(&image, 4);
        assert_eq!(decode_sample(&sample, 4), Some((2, 1, &out[..])));
        assert_eq!(decode_sample(&sample, 8), None);
    }
}
