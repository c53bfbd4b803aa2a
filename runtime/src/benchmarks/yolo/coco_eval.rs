//! pycocotools' `COCOeval` for boxes (`iouType="bbox"`, default parameters), step for step, so
//! that its 12 summary numbers agree with pycocotools' to rounding (tested against pycocotools'
//! own output, `tests/fixtures/accuracy/coco/`, README there):
//!
//! - `loadRes`: a detection's area is `w * h`, it is no crowd, and its id (`i + 1`) marks the box
//!   it matched as taken;
//! - `_prepare`: ground truth of the evaluated images and categories, looked up by id as
//!   `loadAnns` does (a repeated id resolves to its last annotation); `ignore` is `iscrowd`;
//! - `computeIoU`: detections stably sorted by descending score, the first 100 kept; a crowd
//!   box's overlap is the intersection over the detection's area (`maskApi.c` `bbIou`);
//! - `evaluateImg` per category, area range and image: ground truth sorted with the ignored last
//!   (stable), the greedy matching with its `continue` and `break` rules, the matched box's id
//!   stored as the match (an id of 0 reads as unmatched there, as in pycocotools);
//! - `accumulate`: detections of all images stably sorted by score, cumulative true and false
//!   positives, the precision envelope, read at the 101 recall thresholds with `searchsorted`
//!   (`side='left'`); -1 where a category has no box that counts;
//! - `summarize`: the mean of the entries above -1 (numpy's pairwise sum), -1 when there are none.

use super::coco::Instances;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// One detection as pycocotools' results list holds it; `bbox` is `[x, y, width, height]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Detection {
    pub image_id: u64,
    pub category_id: u32,
    pub bbox: [f64; 4],
    pub score: f64,
}

/// `COCOeval.stats` after `summarize()`: AP @[.5:.95], @.5, @.75, AP small, medium, large; AR with
/// 1, 10 and 100 detections; AR small, medium, large. -1 where nothing was there to measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub stats: [f64; 12],
}

/// pycocotools' `maxDets`.
const MAX_DETS: [usize; 3] = [1, 10, 100];
/// pycocotools' `areaRng` (inclusive at both ends: an area on a bound is in both ranges).
const AREA_RANGES: [(f64, f64); 4] = [(0.0, 1e10), (0.0, 1024.0), (1024.0, 9216.0), (9216.0, 1e10)];
const AREA_LABELS: [&str; 4] = ["all", "small", "medium", "large"];
const RECALL_POINTS: usize = 101;
const IOU_POINTS: usize = 10;

/// `np.linspace(start, stop, num)` as numpy computes it: `i * ((stop - start) / (num - 1)) +
/// start`, the last point `stop` itself. The thresholds must be numpy's to the bit: `summarize`
/// finds .5 and .75 among them by equality, and recall is compared with them.
fn linspace<const N: usize>(start: f64, stop: f64) -> [f64; N] {
    let step = (stop - start) / (N - 1) as f64;
    let mut out = [0.0; N];
    for (i, v) in out.iter_mut().enumerate() {
        *v = i as f64 * step + start;
    }
    out[N - 1] = stop;
    out
}

/// The order `np.argsort(-scores, kind='mergesort')` puts scores in: descending, NaN last, ties
/// kept in their order (callers sort stably).
fn by_descending_score(a: f64, b: f64) -> Ordering {
    let (a, b) = (-a, -b);
    a.partial_cmp(&b).unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// numpy's sum of float64 (`pairwise_sum_DOUBLE`): blocks of up to 128 summed with eight
/// accumulators, larger runs split in two at a multiple of eight.
fn numpy_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        a.iter().fold(0.0, |s, v| s + v)
    } else if n <= 128 {
        let mut r: [f64; 8] = a[..8].try_into().expect("eight elements");
        let whole = n - n % 8;
        for chunk in a[8..whole].chunks_exact(8) {
            for (acc, v) in r.iter_mut().zip(chunk) {
                *acc += v;
            }
        }
        let mut sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for v in &a[whole..] {
            sum += v;
        }
        sum
    } else {
        let half = n / 2;
        let half = half - half % 8;
        numpy_sum(&a[..half]) + numpy_sum(&a[half..])
    }
}

/// `maskApi.c` `bbIou`: intersection over union of two `[x, y, w, h]` boxes, or over the
/// detection's area when the ground-truth box is a crowd.
fn box_iou(d: &[f64; 4], g: &[f64; 4], crowd: bool) -> f64 {
    let w = (d[2] + d[0]).min(g[2] + g[0]) - d[0].max(g[0]);
    if w <= 0.0 {
        return 0.0;
    }
    let h = (d[3] + d[1]).min(g[3] + g[1]) - d[1].max(g[1]);
    if h <= 0.0 {
        return 0.0;
    }
    let i = w * h;
    let da = d[2] * d[3];
    let u = if crowd { da } else { da + g[2] * g[3] - i };
    i / u
}

struct Gt {
    id: u64,
    bbox: [f64; 4],
    area: f64,
    crowd: bool,
}

struct Dt {
    bbox: [f64; 4],
    area: f64,
    score: f64,
}

/// One image's boxes and sorted detections of a category, and their overlaps (`ious[d][g]`).
struct ImagePair<'a> {
    gt: &'a [Gt],
    dt: &'a [Dt],
    ious: Vec<Vec<f64>>,
}

/// `evaluateImg`'s result for one image, category and area range: its detections' scores (sorted,
/// at most 100) and, per IoU threshold, each one's matched box id (0: none) and whether it is
/// ignored; and how many of its boxes count.
struct ImageEval {
    scores: Vec<f64>,
    matches: Vec<Vec<u64>>,
    ignored: Vec<Vec<bool>>,
    counted_gt: usize,
}

/// COCOeval over every image of `gt` (its default `imgIds`).
pub fn evaluate(gt: &Instances, detections: &[Detection]) -> Stats {
    let images: Vec<u64> = gt.images.iter().map(|i| i.id).collect();
    evaluate_images(gt, detections, &images)
}

/// COCOeval with `params.imgIds = image_ids` (as accuracy-coco.py sets them: the logged images).
/// Detections of other images, and of categories `gt` does not have, are not evaluated.
pub fn evaluate_images(gt: &Instances, detections: &[Detection], image_ids: &[u64]) -> Stats {
    let mut images = image_ids.to_vec();
    images.sort_unstable();
    images.dedup();
    let mut categories: Vec<u32> = gt.categories.iter().map(|c| c.id).collect();
    categories.sort_unstable();
    categories.dedup();
    let (image_set, category_set): (HashSet<u64>, HashSet<u32>) = (images.iter().copied().collect(), categories.iter().copied().collect());

    // `getAnnIds` filters each annotation of the images by its category; `loadAnns` then looks
    // the ids up, so a repeated id stands for its last annotation.
    let last_of_id: HashMap<u64, usize> = gt.annotations.iter().enumerate().map(|(i, a)| (a.id, i)).collect();
    let mut gts: HashMap<(u64, u32), Vec<Gt>> = HashMap::new();
    for a in gt.annotations.iter().filter(|a| image_set.contains(&a.image_id) && category_set.contains(&a.category_id)) {
        let a = &gt.annotations[last_of_id[&a.id]];
        gts.entry((a.image_id, a.category_id)).or_default().push(Gt { id: a.id, bbox: a.bbox, area: a.area, crowd: a.iscrowd != 0 });
    }
    let mut dts: HashMap<(u64, u32), Vec<Dt>> = HashMap::new();
    for d in detections.iter().filter(|d| image_set.contains(&d.image_id) && category_set.contains(&d.category_id)) {
        let area = d.bbox[2] * d.bbox[3];
        dts.entry((d.image_id, d.category_id)).or_default().push(Dt { bbox: d.bbox, area, score: d.score });
    }
    for dt in dts.values_mut() {
        dt.sort_by(|a, b| by_descending_score(a.score, b.score));
        dt.truncate(MAX_DETS[2]);
    }

    let iou_thrs = linspace::<IOU_POINTS>(0.5, 0.95);
    let rec_thrs = linspace::<RECALL_POINTS>(0.0, 1.0);
    let (t_n, r_n, k_n, a_n, m_n) = (IOU_POINTS, RECALL_POINTS, categories.len(), AREA_RANGES.len(), MAX_DETS.len());
    let mut precision = vec![-1.0; t_n * r_n * k_n * a_n * m_n];
    let mut recall = vec![-1.0; t_n * k_n * a_n * m_n];
    let p_at = |t: usize, r: usize, k: usize, a: usize, m: usize| (((t * r_n + r) * k_n + k) * a_n + a) * m_n + m;
    let r_at = |t: usize, k: usize, a: usize, m: usize| ((t * k_n + k) * a_n + a) * m_n + m;

    let empty = (Vec::new(), Vec::new());
    for (k, &category) in categories.iter().enumerate() {
        // The overlaps of each image's (sorted) detections with its boxes, in file order.
        let pairs: Vec<ImagePair> = images
            .iter()
            .map(|&image| {
                let (g, d) = (gts.get(&(image, category)).unwrap_or(&empty.0), dts.get(&(image, category)).unwrap_or(&empty.1));
                let ious = d.iter().map(|d| g.iter().map(|g| box_iou(&d.bbox, &g.bbox, g.crowd)).collect()).collect();
                ImagePair { gt: g, dt: d, ious }
            })
            .collect();
        for (a, &range) in AREA_RANGES.iter().enumerate() {
            let evals: Vec<ImageEval> = pairs.iter().filter_map(|p| evaluate_image(p.gt, p.dt, &p.ious, range, &iou_thrs)).collect();
            for (m, &max_det) in MAX_DETS.iter().enumerate() {
                if evals.is_empty() {
                    continue;
                }
                let counted: usize = evals.iter().map(|e| e.counted_gt).sum();
                if counted == 0 {
                    continue;
                }
                // (image, position) of each detection kept, in image order, then stably by score.
                let mut order: Vec<(usize, usize)> = evals.iter().enumerate().flat_map(|(i, e)| (0..e.scores.len().min(max_det)).map(move |j| (i, j))).collect();
                order.sort_by(|&(i, j), &(i2, j2)| by_descending_score(evals[i].scores[j], evals[i2].scores[j2]));
                for t in 0..t_n {
                    let (mut tp, mut fp) = (0u64, 0u64);
                    let mut rc = Vec::with_capacity(order.len());
                    let mut pr = Vec::with_capacity(order.len());
                    for &(i, j) in &order {
                        if !evals[i].ignored[t][j] {
                            if evals[i].matches[t][j] != 0 {
                                tp += 1;
                            } else {
                                fp += 1;
                            }
                        }
                        let (tp, fp) = (tp as f64, fp as f64);
                        rc.push(tp / counted as f64);
                        pr.push(tp / (fp + tp + f64::EPSILON));
                    }
                    recall[r_at(t, k, a, m)] = rc.last().copied().unwrap_or(0.0);
                    for i in (1..pr.len()).rev() {
                        if pr[i] > pr[i - 1] {
                            pr[i - 1] = pr[i];
                        }
                    }
                    for (r, &threshold) in rec_thrs.iter().enumerate() {
                        let at = rc.partition_point(|&x| x < threshold);
                        // Past the last detection the precision stays 0 (the script's `except: pass`).
                        precision[p_at(t, r, k, a, m)] = pr.get(at).copied().unwrap_or(0.0);
                    }
                }
            }
        }
    }

    let summarize = |ap: bool, iou: Option<f64>, area: &str, max_det: usize| -> f64 {
        let a = AREA_LABELS.iter().position(|l| *l == area).expect("a known area label");
        let m = MAX_DETS.iter().position(|&d| d == max_det).expect("a known maxDets");
        let thresholds: Vec<usize> = (0..t_n).filter(|&t| iou.is_none_or(|v| iou_thrs[t] == v)).collect();
        let mut values = Vec::new();
        for &t in &thresholds {
            if ap {
                for r in 0..r_n {
                    values.extend((0..k_n).map(|k| precision[p_at(t, r, k, a, m)]).filter(|&v| v > -1.0));
                }
            } else {
                values.extend((0..k_n).map(|k| recall[r_at(t, k, a, m)]).filter(|&v| v > -1.0));
            }
        }
        if values.is_empty() { -1.0 } else { numpy_sum(&values) / values.len() as f64 }
    };
    Stats {
        stats: [
            summarize(true, None, "all", 100),
            summarize(true, Some(0.5), "all", 100),
            summarize(true, Some(0.75), "all", 100),
            summarize(true, None, "small", 100),
            summarize(true, None, "medium", 100),
            summarize(true, None, "large", 100),
            summarize(false, None, "all", 1),
            summarize(false, None, "all", 10),
            summarize(false, None, "all", 100),
            summarize(false, None, "small", 100),
            summarize(false, None, "medium", 100),
            summarize(false, None, "large", 100),
        ],
    }
}

/// `evaluateImg` for one image and category in one area range; `ious[d][g]` pairs the sorted
/// detections with the boxes in their order. None when the image has neither.
fn evaluate_image(gt: &[Gt], dt: &[Dt], ious: &[Vec<f64>], (lo, hi): (f64, f64), iou_thrs: &[f64; IOU_POINTS]) -> Option<ImageEval> {
    if gt.is_empty() && dt.is_empty() {
        return None;
    }
    let outside = |area: f64| area < lo || area > hi;
    let gt_ignored: Vec<bool> = gt.iter().map(|g| g.crowd || outside(g.area)).collect();
    // Boxes that count first, each group in its order (a stable argsort of the ignore flags).
    let mut order: Vec<usize> = (0..gt.len()).collect();
    order.sort_by_key(|&g| gt_ignored[g]);
    let mut matches = vec![vec![0u64; dt.len()]; IOU_POINTS];
    let mut ignored = vec![vec![false; dt.len()]; IOU_POINTS];
    for (t, &threshold) in iou_thrs.iter().enumerate() {
        let mut taken = vec![false; gt.len()];
        for d in 0..dt.len() {
            let mut best = threshold.min(1.0 - 1e-10);
            let mut matched: Option<usize> = None;
            for (slot, &g) in order.iter().enumerate() {
                if taken[slot] && !gt[g].crowd {
                    continue;
                }
                // Once a box that counts is matched, the ignored ones (sorted last) cannot replace it.
                if matched.is_some_and(|m| !gt_ignored[order[m]]) && gt_ignored[g] {
                    break;
                }
                if ious[d][g] < best {
                    continue;
                }
                best = ious[d][g];
                matched = Some(slot);
            }
            if let Some(slot) = matched {
                let g = order[slot];
                ignored[t][d] = gt_ignored[g];
                matches[t][d] = gt[g].id;
                taken[slot] = true;
            }
        }
        for (d, det) in dt.iter().enumerate() {
            ignored[t][d] |= matches[t][d] == 0 && outside(det.area);
        }
    }
    Some(ImageEval { scores: dt.iter().map(|d| d.score).collect(), matches, ignored, counted_gt: gt_ignored.iter().filter(|&&i| !i).count() })
}

#[cfg(test)]
#[path = "coco_eval_tests.rs"]
pub(super) mod tests;
