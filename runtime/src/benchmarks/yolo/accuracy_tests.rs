//! accuracy-coco.py's decoding and output against the unmodified script's own (fixtures made by
//! `scripts/make_coco_fixtures.py`; README in `tests/fixtures/accuracy/coco/`), and its errors.

use super::*;
use crate::accuracy::target::{first_group, python_regex};
use crate::benchmarks::yolo::coco::ImageInfo;
use crate::benchmarks::yolo::coco_eval::tests::{assert_close, fixture};
use crate::error::exit;
use std::path::PathBuf;

fn instances() -> Instances {
    Instances::read(&fixture("instances_val2017.json")).unwrap()
}

#[derive(serde::Deserialize)]
struct Recorded {
    logged_image_ids: Vec<u64>,
    logged_stats: Vec<String>,
}

#[test]
fn decodes_the_log_into_the_detections_the_script_wrote() {
    let logged = read_detections(&fixture("mlperf_log_accuracy.json"), &instances()).unwrap();
    let theirs: Vec<Detection> = serde_json::from_slice(&std::fs::read(fixture("accuracy-coco-results.json")).unwrap()).unwrap();
    assert_eq!(logged.detections.len(), theirs.len());
    for (i, (a, b)) in logged.detections.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "detection {i}: the float32 arithmetic or the order differs");
    }
    let recorded: Recorded = serde_json::from_slice(&std::fs::read(fixture("cocoeval_stats.json")).unwrap()).unwrap();
    let mut ids = logged.image_ids.clone();
    ids.sort_unstable();
    assert_eq!(ids, recorded.logged_image_ids);
    assert_eq!((logged.entries, logged.no_results), (35, 1));
}

#[test]
fn the_stats_over_the_logged_images_agree_with_pycocotools() {
    let score = score_log(&fixture("mlperf_log_accuracy.json"), &instances()).unwrap();
    let recorded: Recorded = serde_json::from_slice(&std::fs::read(fixture("cocoeval_stats.json")).unwrap()).unwrap();
    let theirs: Vec<f64> = recorded.logged_stats.iter().map(|s| s.parse().unwrap()).collect();
    assert_close(score.stats.stats, theirs.try_into().unwrap());
}

/// pycocotools' progress and timing lines, which `accuracy.txt` leaves out.
fn is_progress(line: &str) -> bool {
    [
        "loading annotations into memory...",
        "creating index...",
        "index created!",
        "Loading and preparing results...",
        "Running per image evaluation...",
        "Evaluate annotation type *bbox*",
        "Accumulating evaluation results...",
    ]
    .contains(&line)
        || line.starts_with("Done (t=")
        || line.starts_with("DONE (t=")
}

#[test]
fn accuracy_txt_is_what_the_script_prints() {
    let stdout = std::fs::read_to_string(fixture("accuracy-coco.stdout")).unwrap();
    let theirs: String = stdout.lines().filter(|l| !is_progress(l)).map(|l| format!("{l}\n")).collect();
    let scored = score_coco(&fixture("mlperf_log_accuracy.json"), &instances()).unwrap();
    assert_eq!(scored.text, theirs);
    let map = theirs.lines().last().unwrap();
    assert!(map.starts_with("mAP=") && map.ends_with('%'), "{map}");
    let value = &map["mAP=".len()..map.len() - 1];
    let printed: f64 = value.parse().unwrap();
    assert_eq!(scored.metrics, vec![("mAP".to_string(), printed)]);
    // The checker's mAP pattern (rounds/v6.1.toml) finds that line and only it.
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rounds/v6.1.toml")).unwrap();
    let round: mlperf_config::Round = toml::from_str(&text).unwrap();
    let pattern = python_regex(round.accuracy_patterns.get("mAP").unwrap()).unwrap();
    let found: Vec<&str> = scored.text.lines().filter_map(|l| first_group(&pattern, l)).collect();
    assert_eq!(found, vec![value]);
}

/// Log entries: `qsl_idx` and the float32 payload.
type Entries = Vec<(usize, Vec<f32>)>;

fn log_with(name: &str, entries: &[(usize, Vec<f32>)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlperf-coco-log-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json: Vec<serde_json::Value> = entries
        .iter()
        .enumerate()
        .map(|(seq, (idx, values))| {
            let hex: String = values.iter().flat_map(|v| v.to_le_bytes()).map(|b| format!("{b:02X}")).collect();
            serde_json::json!({"seq_id": seq, "qsl_idx": idx, "data": hex})
        })
        .collect();
    let path = dir.join("mlperf_log_accuracy.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    path
}

fn two_images() -> Instances {
    let image = |id| ImageInfo { id, file_name: format!("{id}.jpg"), width: 640, height: 480 };
    Instances { images: vec![image(5), image(9)], annotations: vec![], categories: vec![] }
}

#[test]
fn short_payloads_are_images_without_detections_and_repeats_are_skipped() {
    let gt = two_images();
    let box_of = |idx: f32, class: f32| vec![idx, 0.25, 0.5, 0.75, 1.0, 0.5, class];
    let log = log_with("short", &[(1, vec![1.0, 2.0]), (0, box_of(0.0, 3.0)), (0, box_of(0.0, 4.0)), (1, box_of(1.0, 2.0))]);
    let logged = read_detections(&log, &gt).unwrap();
    assert_eq!((logged.entries, logged.no_results, logged.image_ids.clone()), (4, 1, vec![9, 5]));
    assert_eq!(logged.detections, vec![Detection { image_id: 5, category_id: 3, bbox: [320.0, 120.0, 320.0, 240.0], score: 0.5 }]);
    let negative = log_with("negative", &[(0, box_of(0.0, -1.0))]);
    assert!(read_detections(&negative, &gt).unwrap().detections.is_empty(), "a class below 0 is no category");
}

#[test]
fn bad_logs_name_the_sample_and_are_data_errors() {
    let gt = two_images();
    let cases: [(&str, Entries, &str); 4] = [
        ("past", vec![(2, vec![])], "sample 2 is past the annotations' 2 images"),
        ("partial", vec![(1, vec![1.0; 9])], "sample 1: 9 float32 values are not whole detections of 7"),
        ("nan", vec![(0, vec![0.0, 0.1, 0.1, 0.2, 0.2, 0.9, f32::NAN])], "sample 0, detection 0: the class is NaN, not a number"),
        ("empty", vec![], "has no entries"),
    ];
    for (name, entries, wanted) in cases {
        let e = read_detections(&log_with(name, &entries), &gt).unwrap_err();
        assert!(e.to_string().contains(wanted), "{name}: {e}");
        assert_eq!(crate::Error::from(e).exit_code(), exit::DATA, "{name}");
    }
    let dir = std::env::temp_dir().join(format!("mlperf-coco-log-odd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("log.json"), r#"[{"seq_id": 0, "qsl_idx": 1, "data": "00000000AA"}]"#).unwrap();
    let e = read_detections(&dir.join("log.json"), &gt).unwrap_err();
    assert!(e.to_string().contains("sample 1: 5 bytes are not float32 values"), "{e}");
}
