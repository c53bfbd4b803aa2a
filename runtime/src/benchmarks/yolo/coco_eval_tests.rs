//! COCOeval against pycocotools itself (`tests/fixtures/accuracy/coco/`, made by
//! `scripts/make_coco_fixtures.py`; README there), and hand-checked cases of its rules.

use super::*;
use crate::benchmarks::yolo::coco::{Annotation, Category, ImageInfo};
use std::path::PathBuf;

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy/coco").join(name)
}

/// pycocotools' 12 stats recorded in `path` (repr strings).
fn recorded_stats(path: &std::path::Path) -> [f64; 12] {
    #[derive(serde::Deserialize)]
    struct Recorded {
        stats: Vec<String>,
    }
    let recorded: Recorded = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let values: Vec<f64> = recorded.stats.iter().map(|s| s.parse().unwrap()).collect();
    values.try_into().unwrap()
}

#[test]
fn the_twelve_stats_agree_with_pycocotools() {
    let gt = Instances::read(&fixture("instances_val2017.json")).unwrap();
    let detections: Vec<Detection> = serde_json::from_slice(&std::fs::read(fixture("detections.json")).unwrap()).unwrap();
    assert_close(evaluate(&gt, &detections).stats, recorded_stats(&fixture("cocoeval_stats.json")));
}

/// Opt-in: the set `scripts/make_coco_fixtures.py --large <dir>` writes (the real one's scale:
/// 1,525 images, 80 categories, 300 detections each), in `COCO_LARGE_DIR`.
#[test]
#[ignore = "needs COCO_LARGE_DIR from scripts/make_coco_fixtures.py --large"]
fn agrees_with_pycocotools_at_full_scale() {
    let dir = PathBuf::from(std::env::var("COCO_LARGE_DIR").expect("COCO_LARGE_DIR"));
    let gt = Instances::read(&dir.join("instances_val2017.json")).unwrap();
    let detections: Vec<Detection> = serde_json::from_slice(&std::fs::read(dir.join("detections.json")).unwrap()).unwrap();
    let started = std::time::Instant::now();
    let ours = evaluate(&gt, &detections).stats;
    eprintln!("{} detections of {} images evaluated in {:.2?}", detections.len(), gt.images.len(), started.elapsed());
    assert_close(ours, recorded_stats(&dir.join("cocoeval_stats.json")));
}

/// Within 1e-12 (precision is `tp / (tp + fp + eps)`: a perfect AP is 0.9999999999999998).
pub(crate) fn assert_close(ours: [f64; 12], theirs: [f64; 12]) {
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert!((a - b).abs() <= 1e-12, "stats[{i}]: ours {a}, expected {b}\nours {ours:?}\nexpected {theirs:?}");
    }
}

#[test]
fn thresholds_are_numpys_to_the_bit() {
    let iou = linspace::<IOU_POINTS>(0.5, 0.95);
    // repr() of np.linspace(.5, 0.95, 10) (numpy 2.4.6): 0.9 is 0.8999999999999999 there.
    let numpy = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.8999999999999999, 0.95];
    assert_eq!(iou, numpy);
    let recall = linspace::<RECALL_POINTS>(0.0, 1.0);
    assert_eq!((recall[3], recall[7], recall[57], recall[100]), (0.03, 0.07, 0.5700000000000001, 1.0));
}

#[test]
fn numpys_pairwise_sum_differs_from_a_plain_one_where_numpy_does() {
    // 0.1 summed 200 times: np.sum gives 20.0, a running sum 20.000000000000014.
    let tenths = vec![0.1; 200];
    assert_eq!(numpy_sum(&tenths), 20.0);
    assert_ne!(tenths.iter().sum::<f64>(), numpy_sum(&tenths));
    assert_eq!(numpy_sum(&[1.0, 2.0, 3.0]), 6.0);
}

#[test]
fn a_crowd_box_is_overlapped_over_the_detections_area() {
    let d = [0.0, 0.0, 10.0, 10.0];
    let g = [5.0, 0.0, 100.0, 100.0];
    assert_eq!(box_iou(&d, &g, true), 0.5);
    assert_eq!(box_iou(&d, &g, false), 50.0 / (100.0 + 10000.0 - 50.0));
    assert_eq!(box_iou(&d, &[10.0, 0.0, 5.0, 5.0], false), 0.0, "touching boxes do not overlap");
}

fn one_image(annotations: Vec<Annotation>) -> Instances {
    Instances {
        images: vec![ImageInfo { id: 42, file_name: "42.jpg".into(), width: 640, height: 480 }],
        annotations,
        categories: vec![Category { id: 1, name: "person".into() }, Category { id: 2, name: "bicycle".into() }],
    }
}

fn gt_box(id: u64, bbox: [f64; 4], iscrowd: u8) -> Annotation {
    Annotation { id, image_id: 42, category_id: 1, bbox, area: bbox[2] * bbox[3], iscrowd }
}

fn det(bbox: [f64; 4], score: f64) -> Detection {
    Detection { image_id: 42, category_id: 1, bbox, score }
}

#[test]
fn a_perfect_detection_scores_one_and_nothing_measured_is_minus_one() {
    let gt = one_image(vec![gt_box(1, [10.0, 10.0, 50.0, 50.0], 0)]);
    let stats = evaluate(&gt, &[det([10.0, 10.0, 50.0, 50.0], 0.9)]).stats;
    // A medium box: small and large have nothing to measure.
    assert_close(stats, [1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0]);
    assert_eq!(evaluate(&gt, &[]).stats[0], 0.0);
    assert_eq!(evaluate(&one_image(vec![]), &[det([1.0, 1.0, 5.0, 5.0], 0.5)]).stats, [-1.0; 12]);
}

#[test]
fn a_crowd_box_absorbs_detections_without_counting() {
    // One real box and a crowd around it: the second detection lands on the crowd and is ignored,
    // not a false positive, so precision stays 1.
    let gt = one_image(vec![gt_box(1, [0.0, 0.0, 100.0, 100.0], 1), gt_box(2, [200.0, 200.0, 50.0, 50.0], 0)]);
    let with_crowd = evaluate(&gt, &[det([200.0, 200.0, 50.0, 50.0], 0.9), det([10.0, 10.0, 20.0, 20.0], 0.8)]).stats;
    assert!((with_crowd[0] - 1.0).abs() < 1e-12, "{with_crowd:?}");
    let no_crowd = one_image(vec![gt_box(2, [200.0, 200.0, 50.0, 50.0], 0)]);
    let without = evaluate(&no_crowd, &[det([10.0, 10.0, 20.0, 20.0], 0.95), det([200.0, 200.0, 50.0, 50.0], 0.9)]).stats;
    assert!(without[0] < 0.99 && without[0] > 0.0, "{without:?}");
}

#[test]
fn a_box_with_id_zero_reads_as_unmatched_as_in_pycocotools() {
    let gt = one_image(vec![gt_box(0, [10.0, 10.0, 50.0, 50.0], 0)]);
    assert_eq!(evaluate(&gt, &[det([10.0, 10.0, 50.0, 50.0], 0.9)]).stats[0], 0.0);
}

#[test]
fn only_the_given_images_and_the_files_categories_are_evaluated() {
    let mut gt = one_image(vec![gt_box(1, [10.0, 10.0, 50.0, 50.0], 0)]);
    gt.images.push(ImageInfo { id: 7, file_name: "7.jpg".into(), width: 640, height: 480 });
    gt.annotations.push(Annotation { image_id: 7, ..gt_box(3, [0.0, 0.0, 40.0, 40.0], 0) });
    let found = [det([10.0, 10.0, 50.0, 50.0], 0.9), Detection { category_id: 5, ..det([0.0, 0.0, 9.0, 9.0], 0.99) }];
    assert!((evaluate_images(&gt, &found, &[42]).stats[0] - 1.0).abs() < 1e-12);
    assert_eq!(evaluate(&gt, &found).stats[8], 0.5, "image 7's box is missed");
}
