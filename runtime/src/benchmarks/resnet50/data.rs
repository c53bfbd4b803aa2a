//! ResNet50's data: the ImageNet 2012 validation images, NVIDIA's val map, the preprocessed
//! tensors the configs read, and the model; and `preprocess_data`, which derives the tensors.

use super::error::ResNetError;
use super::imagenet::{ImagenetOptions, preprocess_imagenet_with};
use crate::dataset::scratch::{DataReport, Item, ItemKind, Scratch, preprocess_command};
use crate::dataset::val_map::{read_val_map, sample_file_name};
use crate::progress::{Progress, Work};
use mlperf_config::Settings;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

const BENCHMARK: &str = "resnet50";
/// Where MLCommons publishes the model the configs name.
const MODEL_DOWNLOAD: &str = "https://zenodo.org/record/2592612/files/resnet50_v1.onnx (MLCommons ResNet50 v1.5, ONNX opset 8)";

/// What a run of real ImageNet needs, with what is missing and how to get it.
pub fn report(scratch: &Scratch, settings: &Settings) -> DataReport {
    let mut report = DataReport::new(scratch, BENCHMARK, settings);
    let raw_dir = scratch.data_dir().join("imagenet");
    let map_path = scratch.map_path(settings).unwrap_or_else(|| scratch.root.join("data_maps/imagenet/val_map.txt"));
    let map = read_val_map(&map_path).ok().filter(|m| !m.is_empty());

    let mut raw = Item::new(
        ItemKind::Dataset,
        "ImageNet 2012 validation images",
        raw_dir.clone(),
        format!(
            "Download ILSVRC2012_img_val.tar (6.3 GB; free registration) from https://image-net.org/download-images.php\nand extract its 50,000 JPEGs into {}",
            raw_dir.display()
        ),
    );
    if raw.present {
        let (missing, total) = match &map {
            Some(m) => (m.iter().filter(|e| !raw_dir.join(&e.name).is_file()).count(), m.len()),
            None => (0, std::fs::read_dir(&raw_dir).map(|d| d.flatten().count()).unwrap_or(0)),
        };
        raw.present = missing == 0 && total > 0;
        raw.detail = Some(if missing == 0 { format!("{total} files") } else { format!("{missing} of {total} listed images missing") });
    }
    let mut map_item = Item::new(
        ItemKind::Map,
        "ImageNet validation map",
        map_path.clone(),
        format!(
            "Place the 50,000-line val map ('<file> <label>', labels 0-999) at {}:\nNVIDIA ships it as closed/NVIDIA/data_maps/imagenet/val_map.txt in its MLPerf results repositories;\nMLCommons fetches the same list with `mlcr get,dataset-aux,imagenet-aux` (caffe_ilsvrc12 val.txt)",
            map_path.display()
        ),
    );
    if map_item.present {
        map_item.present = map.is_some();
        map_item.detail = Some(match &map {
            Some(m) => format!("{} images", m.len()),
            None => "unreadable or empty".into(),
        });
    }
    let preprocess = if raw.present && map_item.present {
        format!("Run `{}`", preprocess_command(BENCHMARK))
    } else {
        format!("Get the images and the val map (above), then run `{}`", preprocess_command(BENCHMARK))
    };
    report.items.push(raw);
    report.items.push(map_item);
    for path in scratch.tensor_paths(settings) {
        let mut t = Item::new(ItemKind::Preprocessed, "preprocessed ImageNet tensors", path.clone(), preprocess.clone());
        if let (true, true, Some(m)) = (t.present, path.is_dir(), &map) {
            let missing = m.iter().filter(|e| !path.join(sample_file_name(&e.name)).is_file()).count();
            t.present = missing == 0;
            t.detail = Some(if missing == 0 { format!("{} samples", m.len()) } else { format!("{missing} of {} samples missing", m.len()) });
        }
        report.items.push(t);
    }
    if let Some(model) = scratch.model_path(settings) {
        report.items.push(Item::model("ResNet50 model", model, Some(MODEL_DOWNLOAD)));
    }
    report
}

/// `preprocess_data`: the JPEGs under `data/imagenet` to the tensors `settings` name.
pub fn preprocess(scratch: &Scratch, settings: &Settings) -> Result<String, ResNetError> {
    let options = ImagenetOptions::from_settings(settings)?;
    let map = scratch.map_path(settings).ok_or(ResNetError::NEEDS_MAP_PATH)?;
    let out = scratch.tensor_paths(settings).into_iter().next().ok_or(ResNetError::NeedsSetting { configs: "resnet50", key: "tensor_path" })?;
    // A contiguous tensor names a file; per-sample output names a directory.
    let out_dir = if out.extension().is_some_and(|e| e == "npy") { out.parent().map(|p| p.to_path_buf()).unwrap_or(out) } else { out };
    let done = Arc::new(AtomicU64::new(0));
    let progress = OnceLock::new();
    let report = preprocess_imagenet_with(&scratch.data_dir().join("imagenet"), &map, &out_dir, &options, &|count, total| {
        progress
            .get_or_init(|| Progress::start(Work { label: "resnet50 preprocessing".into(), unit: Some("images"), expected: Some(total as u64), min_duration: None }, done.clone()));
        done.store(count as u64, Ordering::Relaxed);
    })?;
    drop(progress);
    Ok(format!("resnet50: {} images ({} written, {} kept) -> {} (sample shape {:?})", report.samples, report.written, report.skipped, report.output.display(), report.sample_shape))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::npy::{NpyDtype, write_npy};
    use std::path::PathBuf;

    fn root(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mlperf-resnet50-data-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn settings() -> Settings {
        Settings {
            model_path: Some("ResNet50/resnet50_v1.onnx".into()),
            map_path: Some("data_maps/imagenet/val_map.txt".into()),
            tensor_path: Some("imagenet/ResNet50/int8_linear".into()),
            ..Settings::default()
        }
    }

    #[test]
    fn the_report_goes_from_nothing_to_ready() {
        let r = root("report");
        let s = Scratch::new(&r);
        let report = report(&s, &settings());
        assert_eq!(report.missing().len(), 4);
        let text = report.render();
        assert!(text.contains("[MISSING] ImageNet 2012 validation images"), "{text}");
        assert!(text.contains(&r.join("data/imagenet").display().to_string()));
        assert!(text.contains("image-net.org") && text.contains("zenodo.org/record/2592612/files/resnet50_v1.onnx"));
        assert!(text.contains("Get the images and the val map (above), then run `mlperf preprocess_data --benchmarks=resnet50`"));
        assert!(text.contains("not ready: 4 missing"));

        // Raw data and map present: the preprocessed tensors' remedy is the command itself.
        std::fs::create_dir_all(r.join("data/imagenet")).unwrap();
        std::fs::create_dir_all(r.join("data_maps/imagenet")).unwrap();
        std::fs::write(r.join("data_maps/imagenet/val_map.txt"), "a.JPEG 1\nb.JPEG 2\n").unwrap();
        std::fs::write(r.join("data/imagenet/a.JPEG"), b"x").unwrap();
        let report = super::report(&s, &settings());
        let raw = &report.items[0];
        assert_eq!((raw.present, raw.detail.as_deref()), (false, Some("1 of 2 listed images missing")));
        std::fs::write(r.join("data/imagenet/b.JPEG"), b"x").unwrap();
        let report = super::report(&s, &settings());
        assert!(report.items[0].present && report.items[1].present);
        assert_eq!(report.items[2].remedy, "Run `mlperf preprocess_data --benchmarks=resnet50`");

        // Preprocessed files for both samples and the model: ready.
        let t = r.join("preprocessed_data/imagenet/ResNet50/int8_linear");
        std::fs::create_dir_all(&t).unwrap();
        write_npy(&t.join("a.JPEG.npy"), NpyDtype::I8, &[1], &[0]).unwrap();
        assert_eq!(super::report(&s, &settings()).items[2].detail.as_deref(), Some("1 of 2 samples missing"));
        write_npy(&t.join("b.JPEG.npy"), NpyDtype::I8, &[1], &[0]).unwrap();
        std::fs::create_dir_all(r.join("models/ResNet50")).unwrap();
        std::fs::write(r.join("models/ResNet50/resnet50_v1.onnx"), b"onnx").unwrap();
        let report = super::report(&s, &settings());
        assert!(report.ready(), "{}", report.render());
        assert!(report.render().ends_with("  ready\n"));
    }
}
