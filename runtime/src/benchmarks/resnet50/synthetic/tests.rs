//! Tests of the synthetic workload at 32 px with few samples (fast in debug builds).

use super::*;
use std::collections::BTreeMap;
use std::time::Instant;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlperf-synthetic-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn small(seed: u64) -> SyntheticSpec {
    SyntheticSpec { size: 32, seed, samples: 40, calibration_images: 32, threads: 2 }
}

#[test]
fn same_seed_gives_identical_model_bytes() {
    let a = model::resnet50(32, 3).encode_to_vec();
    assert_eq!(a, model::resnet50(32, 3).encode_to_vec());
    assert_ne!(a, model::resnet50(32, 4).encode_to_vec());
    // The image side only changes the declared input shape.
    assert!(a.len() > 4 * 25_500_000, "full-size ResNet50 weights ({} bytes)", a.len());
}

#[test]
fn generates_reuses_and_regenerates() {
    let (dir_a, dir_b) = (scratch("a"), scratch("b"));
    let spec = small(7);
    let mut log = Vec::new();
    let a = ensure_synthetic_resnet50_with(&dir_a, &spec, &mut |m| log.push(m.to_string())).unwrap();
    assert!(a.generated);
    assert_eq!(a.model_path, dir_a.join("synthetic/resnet50-32px.onnx"));
    assert_eq!(a.val_map_path, dir_a.join("synthetic/imagenet-32px/val_map.txt"));
    assert!(log.iter().any(|l| l.contains("no manifest")), "{log:?}");

    // The written model is ResNet50 v1.5 and loads in tract.
    let bytes = std::fs::read(&a.model_path).unwrap();
    let proto = ModelProto::decode(bytes.as_slice()).unwrap();
    let mut ops = BTreeMap::new();
    for n in &proto.graph.as_ref().unwrap().node {
        *ops.entry(n.op_type.clone()).or_insert(0) += 1;
    }
    assert_eq!((ops["Conv"], ops["Relu"], ops["Add"], ops["Gemm"], ops.len()), (53, 49, 16, 1, 7));
    let engine = CpuEngine::load(&a.model_path, input_spec(32, 8, Layout::Nchw)).unwrap();
    assert_eq!(engine.classes(), Some(1000));

    // Labels read back are the engine's predictions, and they spread over classes.
    let labels = read_labels(&a.val_map_path).unwrap();
    assert_eq!(labels, predict(&engine, 32, 0..40, 1).unwrap());
    assert_eq!(a.labels, LabelStats::of(&labels));
    assert!(a.labels.distinct >= 20, "{:?}", a.labels);
    let text = std::fs::read_to_string(&a.val_map_path).unwrap();
    assert!(text.starts_with(&format!("synthetic_0.npy {}\nsynthetic_1.npy ", labels[0])), "{text}");

    // Same seed elsewhere: byte-identical files.
    let b = ensure_synthetic_resnet50_with(&dir_b, &spec, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read(&b.model_path).unwrap(), bytes);
    assert_eq!(std::fs::read(&b.val_map_path).unwrap(), text.as_bytes());

    // Second call: reused, not regenerated.
    let again = ensure_synthetic_resnet50_with(&dir_a, &spec, &mut |_| panic!("must reuse")).unwrap();
    assert!(!again.generated);
    assert_eq!(again.labels, a.labels);

    // A changed val map or another seed regenerates.
    std::fs::write(&a.val_map_path, text.replacen("synthetic_0.npy", "synthetic_0.npy 1", 1)).unwrap();
    let mut why = String::new();
    let fixed = ensure_synthetic_resnet50_with(&dir_a, &spec, &mut |m| why.push_str(m)).unwrap();
    assert!(fixed.generated && why.contains("differs from the manifest"), "{why}");
    assert_eq!(std::fs::read_to_string(&a.val_map_path).unwrap(), text);
    why.clear();
    let other = ensure_synthetic_resnet50_with(&dir_a, &small(8), &mut |m| why.push_str(m)).unwrap();
    assert!(other.generated && why.contains("seed"), "{why}");
    assert_ne!(std::fs::read(&a.model_path).unwrap(), bytes);

    let _ = std::fs::remove_dir_all(&dir_a);
    let _ = std::fs::remove_dir_all(&dir_b);
}

#[test]
fn rejects_sizes_the_topology_cannot_take() {
    let e = ensure_synthetic_resnet50_with(&scratch("tiny"), &SyntheticSpec::resnet50(16, 1), &mut |_| {}).err().unwrap().to_string();
    assert!(e.contains("16 px"), "{e}");
}

#[test]
fn val_maps_round_trip_and_bad_lines_are_reported() {
    let dir = scratch("valmap");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("val_map.txt");
    let labels = vec![5, 999, 0, 17];
    std::fs::write(&path, render_val_map(&labels)).unwrap();
    assert_eq!(read_labels(&path).unwrap(), labels);
    std::fs::write(&path, "synthetic_0.npy 5\nsynthetic_2.npy 3\n").unwrap();
    let e = read_labels(&path).err().unwrap().to_string();
    assert!(e.contains(":2:") && e.contains("synthetic_1.npy"), "{e}");
    let stats = LabelStats::of(&[3, 3, 1, 2]);
    assert_eq!((stats.distinct, stats.top_class, stats.top_share), (3, 3, 0.5));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Release-build measurement, not a test: `MLPERF_SYNTHETIC_SIZE=64 cargo test --release -p
/// mlperf-runtime --lib engines::synthetic::tests::measure -- --ignored --nocapture`. Generates the
/// full 50,000-sample workload in a temporary root (timing each step), then measures the CPU
/// engine's throughput with 2 workers at batch 8 and batch 1.
#[test]
#[ignore = "measurement; minutes in release builds"]
fn measure() {
    let size: usize = std::env::var("MLPERF_SYNTHETIC_SIZE").ok().and_then(|s| s.parse().ok()).unwrap_or(64);
    let samples: usize = std::env::var("MLPERF_SYNTHETIC_SAMPLES").ok().and_then(|s| s.parse().ok()).unwrap_or(VAL_SAMPLES);
    let root = scratch(&format!("measure-{size}"));
    let spec = SyntheticSpec { samples, ..SyntheticSpec::resnet50(size, 1) };
    let t = Instant::now();
    let a = ensure_synthetic_resnet50_with(&root, &spec, &mut |m| eprintln!("[{:7.1} s] {m}", t.elapsed().as_secs_f64())).unwrap();
    eprintln!("generation total {:.1} s for {} samples at {size} px; labels {:?}", t.elapsed().as_secs_f64(), samples, a.labels);
    let labels = read_labels(&a.val_map_path).unwrap();
    let mut counts = BTreeMap::<i32, usize>::new();
    for l in &labels {
        *counts.entry(*l).or_default() += 1;
    }
    let mut by_count: Vec<usize> = counts.values().copied().collect();
    by_count.sort_unstable_by(|a, b| b.cmp(a));
    eprintln!("label histogram: top counts {:?}, median count {}", &by_count[..by_count.len().min(10)], by_count[by_count.len() / 2]);

    for (batch, workers) in [(8, 2), (1, 2), (8, 1), (1, 1)] {
        let engine = CpuEngine::load(&a.model_path, input_spec(size, batch, Layout::Nchw)).unwrap();
        let imgs: Vec<Vec<u8>> = (0..64).map(|i| synthetic_image(i, size, Layout::Nchw)).collect();
        let views: Vec<&[u8]> = imgs.iter().map(|v| v.as_slice()).collect();
        engine.classify(&views[..batch]).unwrap(); // warm-up
        let per_worker = 512 / workers;
        let t = Instant::now();
        std::thread::scope(|s| {
            for w in 0..workers {
                let (engine, views) = (&engine, &views);
                s.spawn(move || {
                    let mut done = 0;
                    let mut i = w * 8;
                    while done < per_worker {
                        let start = i % (64 - batch);
                        engine.classify(&views[start..start + batch]).unwrap();
                        done += batch;
                        i += batch;
                    }
                });
            }
        });
        let secs = t.elapsed().as_secs_f64();
        eprintln!(
            "engine {size} px batch {batch}, {workers} worker(s): {:.1} images/s ({:.2} ms per batch)",
            (per_worker * workers) as f64 / secs,
            secs * 1000.0 / ((per_worker * workers / batch) as f64 / workers as f64)
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}
