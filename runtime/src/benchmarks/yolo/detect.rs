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

use super::letterbox::Geometry;

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

/// NMS over one image's output, `[4 + classes, anchors]` (C order, as `output0[i]`), in input
/// pixels.
pub fn non_max_suppression(output: &[f32], classes: usize, anchors: usize) -> Vec<Detection> {
    debug_assert_eq!(output.len(), (4 + classes) * anchors);
    let at = |row: usize, a: usize| output[row * anchors + a];
    let mut candidates: Vec<Detection> = (0..anchors)
        .filter_map(|a| {
            let (mut class, mut score) = (0, at(4, a));
            for c in 1..classes {
                if at(4 + c, a) > score {
                    (class, score) = (c, at(4 + c, a));
                }
            }
            if score <= CONF_THRESHOLD {
                return None;
            }
            let (half_w, half_h) = (at(2, a) / 2.0, at(3, a) / 2.0);
            Some(Detection { x1: at(0, a) - half_w, y1: at(1, a) - half_h, x2: at(0, a) + half_w, y2: at(1, a) + half_h, score, class })
        })
        .collect();
    // Stable, so equal scores keep anchor order (torchvision sorts with stable=True).
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
    candidates.truncate(MAX_NMS);
    let offset = |d: &Detection| {
        let o = d.class as f32 * MAX_WH;
        [d.x1 + o, d.y1 + o, d.x2 + o, d.y2 + o]
    };
    let boxes: Vec<[f32; 4]> = candidates.iter().map(offset).collect();
    let areas: Vec<f32> = boxes.iter().map(|b| (b[2] - b[0]) * (b[3] - b[1])).collect();
    let mut suppressed = vec![false; candidates.len()];
    let mut kept = Vec::new();
    for i in 0..candidates.len() {
        if suppressed[i] {
            continue;
        }
        kept.push(candidates[i]);
        if kept.len() == MAX_DET {
            break;
        }
        for j in i + 1..candidates.len() {
            if suppressed[j] {
                continue;
            }
            let (a, b) = (boxes[i], boxes[j]);
            let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
            let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
            let inter = w * h;
            let iou = inter / (areas[i] + areas[j] - inter);
            if f64::from(iou) > IOU_THRESHOLD {
                suppressed[j] = true;
            }
        }
    }
    kept
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
