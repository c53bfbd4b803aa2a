//! From the model's output to what LoadGen gets, as the reference's `predict(conf=0.001)` and
//! `yolo_loadgen.py` do it (ultralytics `non_max_suppression`, `scale_boxes`):
//!
//! - per anchor, the best class (the first on ties) and its score; anchors whose score is not
//!   above 0.001 are dropped; boxes from centre and size to corners (`xywh2xyxy`, f32);
//! - at most 30,000 candidates (the best by score), then torchvision's NMS: candidates in order of
//!   score (stable: the earlier anchor first on ties), each kept unless an earlier kept box of its
//!   class overlaps it by IoU > 0.7. Classes are kept apart as ultralytics does, by offsetting
//!   every box by `class * 7680` before the f32 IoU; at most 300 detections, best first;
//! - boxes back to the original image: minus the letterbox padding (`round((S - w gain) / 2 -
//!   0.1)`), divided by the gain, clipped to the image;
//! - per detection 7 f32 `[sample index, ymin / h, xmin / w, ymax / h, xmax / w, score, COCO id]`,
//!   the 80 classes mapped to COCO's 91 ids; no detections, an empty response.

use super::error::YoloError;
use super::letterbox::{Geometry, decode_sample, sample_bytes};
use crate::engines::SampleSource;

/// `predict(conf=0.001)`: the score a detection must exceed.
pub const CONF_THRESHOLD: f32 = 0.001;
/// `non_max_suppression`'s default IoU threshold.
pub const IOU_THRESHOLD: f64 = 0.7;
/// Candidates NMS looks at, and detections it keeps.
pub const MAX_NMS: usize = 30_000;
pub const MAX_DET: usize = 300;
/// The per-class offset that keeps classes apart in one NMS.
const MAX_WH: f32 = 7680.0;
/// f32 values per detection in a response.
pub const RESPONSE_VALUES: usize = 7;

/// The 80 classes' COCO category ids (`COCO_80_TO_91` of `yolo_loadgen.py`).
pub const COCO_80_TO_91: [u32; 80] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90,
];

/// One detection: corners in the image's pixels (or the model input's, before scaling back).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detection {
    pub x1: f32,
    pub y1: f32,
    pub x2: f32,
    pub y2: f32,
    pub score: f32,
    /// 0..80.
    pub class: usize,
}

impl Detection {
    /// An anchor's box (centre and size, input pixels) with its best class and score, as corners
    /// (`xywh2xyxy` in f32); `None` when the score is not above [`CONF_THRESHOLD`]. The GPU engine
    /// finds the best class on the device and comes here with it.
    pub fn of_anchor([cx, cy, w, h]: [f32; 4], score: f32, class: usize) -> Option<Detection> {
        if score <= CONF_THRESHOLD {
            return None;
        }
        let (half_w, half_h) = (w / 2.0, h / 2.0);
        Some(Detection { x1: cx - half_w, y1: cy - half_h, x2: cx + half_w, y2: cy + half_h, score, class })
    }
}

/// The candidates of one image's output, `[4 + classes, anchors]` (C order, as `output0[i]`), in
/// anchor order: per anchor the best class (the first on ties).
pub fn candidates(output: &[f32], classes: usize, anchors: usize) -> Vec<Detection> {
    debug_assert_eq!(output.len(), (4 + classes) * anchors);
    let row = |r: usize| &output[r * anchors..(r + 1) * anchors];
    // Class row by class row (each contiguous), not anchor by anchor down 80 rows `anchors` apart.
    let mut best: Vec<(f32, usize)> = row(4).iter().map(|&s| (s, 0)).collect();
    for c in 1..classes {
        for (b, &s) in best.iter_mut().zip(row(4 + c)) {
            if s > b.0 {
                *b = (s, c);
            }
        }
    }
    let at = |r: usize, a: usize| output[r * anchors + a];
    best.into_iter().enumerate().filter_map(|(a, (score, class))| Detection::of_anchor([at(0, a), at(1, a), at(2, a), at(3, a)], score, class)).collect()
}

/// NMS over one image's output, in input pixels.
pub fn non_max_suppression(output: &[f32], classes: usize, anchors: usize) -> Vec<Detection> {
    suppress(candidates(output, classes, anchors))
}

/// torchvision's NMS over `candidates` (in anchor order) as ultralytics calls it: greedy in score
/// order (equal scores in anchor order, as its stable sort), over the best [`MAX_NMS`], each kept
/// unless a kept box overlaps it, at most [`MAX_DET`] kept, best first.
///
/// The same result for less work: the greedy pass stops at [`MAX_DET`], usually long before the
/// last candidate, so candidates are put in order a chunk at a time ([`GREEDY_CHUNK`] of the best
/// left, selected in linear time, then sorted), as far as the pass reads; the order is one integer
/// per candidate ([`greedy_key`]), so selecting and sorting compare integers. Each candidate is
/// compared with the kept boxes of its own class only. Boxes of two classes never overlap once
/// offset by `class * MAX_WH` (boxes reach a few thousand pixels at most), so the others could not
/// suppress it; the offsets are kept, so every IoU is the same f32 value.
pub fn suppress(candidates: Vec<Detection>) -> Vec<Detection> {
    let mut keys: Vec<u64> = candidates.iter().enumerate().map(|(index, d)| greedy_key(d.score, index)).collect();
    let considered = keys.len().min(MAX_NMS);
    let offset = |d: &Detection| {
        let o = d.class as f32 * MAX_WH;
        let b = [d.x1 + o, d.y1 + o, d.x2 + o, d.y2 + o];
        (b, (b[2] - b[0]) * (b[3] - b[1]))
    };
    let mut kept_by_class: Vec<Vec<([f32; 4], f32)>> = vec![Vec::new(); candidates.iter().map(|d| d.class + 1).max().unwrap_or(0)];
    let mut kept = Vec::new();
    let mut done = 0;
    while done < considered && kept.len() < MAX_DET {
        let left = &mut keys[done..];
        let take = GREEDY_CHUNK.min(considered - done);
        if take < left.len() {
            left.select_nth_unstable_by(take - 1, |a, b| b.cmp(a));
        }
        left[..take].sort_unstable_by(|a, b| b.cmp(a));
        for &key in &left[..take] {
            let d = candidates[!(key as u32) as usize];
            let (b, area_b) = offset(&d);
            let overlaps = |&(a, area_a): &([f32; 4], f32)| {
                let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
                let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
                let inter = w * h;
                f64::from(inter / (area_a + area_b - inter)) > IOU_THRESHOLD
            };
            if kept_by_class[d.class].iter().any(overlaps) {
                continue;
            }
            kept_by_class[d.class].push((b, area_b));
            kept.push(d);
            if kept.len() == MAX_DET {
                break;
            }
        }
        done += take;
    }
    kept
}

/// Candidates the greedy pass puts in order at a time (on the synthetic YOLOv11-L's 8,400 of an
/// image it kept 300 within the first chunks: docs/performance.md).
const GREEDY_CHUNK: usize = 1024;

/// A candidate's place in the greedy order as one integer, larger first: its score's bits mapped
/// so that unsigned order is `f32::total_cmp`'s, then its anchor index inverted (the earlier
/// anchor first on equal scores). Anchors number far below 2^32.
fn greedy_key(score: f32, index: usize) -> u64 {
    let bits = score.to_bits();
    let ordered = if bits >> 31 == 1 { !bits } else { bits | 1 << 31 };
    (u64::from(ordered) << 32) | u64::from(!(index as u32))
}

/// `scale_boxes`: detections in the model input's pixels back to the original image of `g`.
pub fn scale_boxes(detections: &mut [Detection], g: &Geometry, size: usize) {
    let gain = (size as f64 / g.height as f64).min(size as f64 / g.width as f64);
    let pad_x = ((size as f64 - g.width as f64 * gain) / 2.0 - 0.1).round_ties_even() as f32;
    let pad_y = ((size as f64 - g.height as f64 * gain) / 2.0 - 0.1).round_ties_even() as f32;
    let (gain, w, h) = (gain as f32, g.width as f32, g.height as f32);
    for d in detections {
        d.x1 = ((d.x1 - pad_x) / gain).clamp(0.0, w);
        d.x2 = ((d.x2 - pad_x) / gain).clamp(0.0, w);
        d.y1 = ((d.y1 - pad_y) / gain).clamp(0.0, h);
        d.y2 = ((d.y2 - pad_y) / gain).clamp(0.0, h);
    }
}

/// The response of sample `index` (an image of `width x height`): 7 f32 per detection.
pub fn response(index: usize, detections: &[Detection], width: usize, height: usize) -> Vec<u8> {
    let (w, h) = (width as f64, height as f64);
    let mut out = Vec::with_capacity(detections.len() * RESPONSE_VALUES * 4);
    for d in detections {
        // As the reference: numpy divides in f64 (or f32, which rounds the same), packs as f32.
        let values = [
            index as f32,
            (f64::from(d.y1) / h) as f32,
            (f64::from(d.x1) / w) as f32,
            (f64::from(d.y2) / h) as f32,
            (f64::from(d.x2) / w) as f32,
            d.score,
            COCO_80_TO_91[d.class] as f32,
        ];
        out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }
    out
}

/// The responses of the samples `indices` (images letterboxed to `size` with their original size,
/// [`super::letterbox::encode_sample`]), run together: `detect` gives each image's detections in
/// input pixels, which go back to the image and into the reference's response.
pub fn respond(
    indices: &[usize],
    source: &dyn SampleSource,
    size: usize,
    outputs: &mut Vec<Vec<u8>>,
    detect: impl FnOnce(&[&[u8]]) -> Result<Vec<Vec<Detection>>, YoloError>,
) -> Result<(), YoloError> {
    let samples: Vec<_> = indices.iter().map(|&i| source.sample(i)).collect();
    let mut images = Vec::with_capacity(indices.len());
    for (&index, sample) in indices.iter().zip(&samples) {
        images.push(decode_sample(sample, size).ok_or(YoloError::SampleSize { index, bytes: sample.len(), size, wanted: sample_bytes(size) })?);
    }
    let pixels: Vec<&[u8]> = images.iter().map(|(_, _, p)| *p).collect();
    let found = detect(&pixels)?;
    for ((&index, &(w, h, _)), mut found) in indices.iter().zip(&images).zip(found) {
        scale_boxes(&mut found, &Geometry::of(w, h, size), size);
        outputs.push(response(index, &found, w, h));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output of `anchors` anchors with 3 classes: per anchor (cx, cy, w, h, scores...).
    fn output(anchors: &[([f32; 4], [f32; 3])]) -> Vec<f32> {
        let n = anchors.len();
        let mut out = vec![0.0; 7 * n];
        for (a, (b, s)) in anchors.iter().enumerate() {
            for (row, v) in b.iter().chain(s).enumerate() {
                out[row * n + a] = *v;
            }
        }
        out
    }

    #[test]
    fn overlapping_boxes_of_one_class_are_suppressed_and_of_two_classes_are_not() {
        let out = output(&[
            ([50.0, 50.0, 20.0, 20.0], [0.9, 0.1, 0.0]),
            ([51.0, 50.0, 20.0, 20.0], [0.8, 0.0, 0.0]), // IoU 0.905 with the first: suppressed
            ([50.0, 50.0, 20.0, 20.0], [0.0, 0.7, 0.0]), // same box, another class: kept
            ([58.0, 50.0, 20.0, 20.0], [0.6, 0.0, 0.0]), // IoU 12/28 = 0.43: kept
            ([10.0, 10.0, 4.0, 4.0], [0.001, 0.0, 0.0]), // not above 0.001: dropped
        ]);
        let kept = non_max_suppression(&out, 3, 5);
        let summary: Vec<(usize, f32)> = kept.iter().map(|d| (d.class, d.score)).collect();
        assert_eq!(summary, vec![(0, 0.9), (1, 0.7), (0, 0.6)]);
        assert_eq!((kept[0].x1, kept[0].y1, kept[0].x2, kept[0].y2), (40.0, 40.0, 60.0, 60.0));
    }

    #[test]
    fn ties_keep_anchor_order_and_the_first_best_class_wins() {
        let out = output(&[([10.0, 10.0, 2.0, 2.0], [0.5, 0.5, 0.2]), ([30.0, 30.0, 2.0, 2.0], [0.2, 0.5, 0.5]), ([50.0, 50.0, 2.0, 2.0], [0.5, 0.1, 0.1])]);
        let kept = non_max_suppression(&out, 3, 3);
        let summary: Vec<(f32, usize)> = kept.iter().map(|d| (d.x1, d.class)).collect();
        assert_eq!(summary, vec![(9.0, 0), (29.0, 1), (49.0, 0)]);
    }

    #[test]
    fn at_most_max_det_detections_are_kept() {
        let boxes: Vec<([f32; 4], [f32; 3])> = (0..400).map(|i| ([10.0 * i as f32, 0.0, 5.0, 5.0], [0.5 + i as f32 / 1000.0, 0.0, 0.0])).collect();
        let kept = non_max_suppression(&output(&boxes), 3, 400);
        assert_eq!(kept.len(), MAX_DET);
        assert_eq!(kept[0].score, 0.5 + 399.0 / 1000.0, "best first");
    }

    /// torchvision's greedy NMS in one pass over every pair, as ultralytics runs it (the classes
    /// offset apart, the best [`MAX_NMS`] by score): the per-class [`suppress`] must keep exactly
    /// its detections.
    fn one_pass(mut candidates: Vec<Detection>) -> Vec<Detection> {
        candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
        candidates.truncate(MAX_NMS);
        let offset = |d: &Detection| {
            let o = d.class as f32 * MAX_WH;
            [d.x1 + o, d.y1 + o, d.x2 + o, d.y2 + o]
        };
        let mut kept: Vec<Detection> = Vec::new();
        for d in candidates {
            let b = offset(&d);
            let overlaps = |k: &Detection| {
                let a = offset(k);
                let inter = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0) * (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
                f64::from(inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)) > IOU_THRESHOLD
            };
            if kept.len() < MAX_DET && !kept.iter().any(overlaps) {
                kept.push(d);
            }
        }
        kept
    }

    #[test]
    fn lazy_per_class_suppression_keeps_what_one_greedy_pass_keeps() {
        let mut rng = crate::engines::synthetic::rng::SplitMix64::derive(3, "nms", 0);
        // Past MAX_NMS the worst-scored candidates are never looked at.
        for (count, classes) in [(50, 1), (2000, 3), (8400, 80), (3000, 2), (MAX_NMS + 2000, 80)] {
            // Clustered boxes with coarse scores, so overlaps, ties and the 300 cap all occur.
            let candidates: Vec<Detection> = (0..count)
                .map(|_| {
                    let (x, y) = ((rng.unit() * 8.0).floor() * 40.0 + rng.unit() * 6.0, (rng.unit() * 8.0).floor() * 40.0);
                    let (w, h) = (20.0 + rng.unit() * 30.0, 20.0 + rng.unit() * 30.0);
                    let score = (rng.unit() * 50.0).floor() / 50.0 + 0.01;
                    Detection { x1: x, y1: y, x2: x + w, y2: y + h, score, class: ((rng.unit() * classes as f32) as usize).min(classes - 1) }
                })
                .collect();
            let (fast, slow) = (suppress(candidates.clone()), one_pass(candidates));
            assert_eq!(fast, slow, "{count} candidates of {classes} classes");
            assert!(!fast.is_empty());
        }
    }

    #[test]
    fn boxes_go_back_to_the_image_clipped_and_the_response_is_the_references() {
        // 100 x 50 into 64: gain 0.64, padding 32 - 16 = 16 rows (round(15.9)).
        let g = Geometry::of(100, 50, 64);
        assert_eq!((g.top, g.left), (16, 0));
        let mut d = [Detection { x1: -3.2, y1: 16.0, x2: 32.0, y2: 60.0, score: 0.5, class: 79 }];
        scale_boxes(&mut d, &g, 64);
        assert_eq!((d[0].x1, d[0].y1, d[0].x2, d[0].y2), (0.0, 0.0, 50.0, 50.0));
        let bytes = response(7, &d, 100, 50);
        let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        assert_eq!(values, vec![7.0, 0.0, 0.0, 1.0, 0.5, 0.5, 90.0]);
        assert!(response(3, &[], 10, 10).is_empty());
    }
}
