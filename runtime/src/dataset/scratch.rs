//! NVIDIA's scratch space and what a benchmark needs from it.
//!
//! NVIDIA keeps datasets, models and preprocessed tensors outside the code tree, under
//! `$MLPERF_SCRATCH_PATH` (default `/home/mlperf_inference_storage`, `Makefile.const`), linked into
//! the tree as `build/data`, `build/models` and `build/preprocessed_data` (`make link_dirs`). The
//! config paths are relative to it: `tensor_path` to `preprocessed_data/`, `model_path` to
//! `models/`, `map_path` to the scratch root (which holds NVIDIA's `data_maps/`).
//!
//! [`check`] lists, for one benchmark and its resolved settings, every file the run needs, whether
//! it is there, and what to do about a missing one: where to download raw data and models, or which
//! `mlperf preprocess_data` command derives the preprocessed tensors once the raw data is present.
//! `mlperf info` renders the report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mlperf_config::{DatasetSource, Settings};

use super::imagenet::{read_val_map, sample_file_name};
use super::squad::FEATURES_FILE;

/// The environment variable naming the scratch space.
pub const SCRATCH_ENV: &str = "MLPERF_SCRATCH_PATH";
/// NVIDIA's default scratch space.
pub const DEFAULT_SCRATCH: &str = "/home/mlperf_inference_storage";

/// The scratch space root and its three areas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scratch {
    pub root: PathBuf,
    /// Whether the root came from [`SCRATCH_ENV`] (else the default).
    pub from_env: bool,
}

impl Scratch {
    /// `$MLPERF_SCRATCH_PATH`, or `/home/mlperf_inference_storage` when unset or empty.
    pub fn from_env() -> Scratch {
        match std::env::var_os(SCRATCH_ENV).filter(|v| !v.is_empty()) {
            Some(v) => Scratch { root: PathBuf::from(v), from_env: true },
            None => Scratch { root: PathBuf::from(DEFAULT_SCRATCH), from_env: false },
        }
    }

    pub fn new(root: impl Into<PathBuf>) -> Scratch {
        Scratch { root: root.into(), from_env: false }
    }

    /// Raw datasets: `data/`.
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// Models: `models/`.
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }

    /// Preprocessed tensors: `preprocessed_data/`.
    pub fn preprocessed_dir(&self) -> PathBuf {
        self.root.join("preprocessed_data")
    }

    /// The settings' `tensor_path` entries (comma-separated) under `preprocessed_data/`; absolute
    /// entries are kept as they are.
    pub fn tensor_paths(&self, settings: &Settings) -> Vec<PathBuf> {
        settings.tensor_path.as_deref().map(|t| t.split(',').map(str::trim).filter(|p| !p.is_empty()).map(|p| self.preprocessed_dir().join(p)).collect()).unwrap_or_default()
    }

    /// `map_path` under the scratch root.
    pub fn map_path(&self, settings: &Settings) -> Option<PathBuf> {
        settings.map_path.as_deref().map(|p| self.root.join(p))
    }

    /// `model_path` under `models/`.
    pub fn model_path(&self, settings: &Settings) -> Option<PathBuf> {
        settings.model_path.as_deref().map(|p| self.models_dir().join(p))
    }
}

/// What an entry of the report is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// Raw dataset as published (JPEGs, JSON).
    Dataset,
    /// Sample map (`val_map.txt`).
    Map,
    /// Preprocessed tensors the QSL reads.
    Preprocessed,
    /// Metadata the accuracy scorer reads (next to the tensors).
    Metadata,
    Model,
    /// Tokenizer vocabulary.
    Vocab,
}

/// One file or directory the benchmark needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub kind: ItemKind,
    /// What it is, for people ("ImageNet 2012 validation images").
    pub what: String,
    /// The exact expected path.
    pub path: PathBuf,
    pub present: bool,
    /// Counts or the reason it is considered incomplete.
    pub detail: Option<String>,
    /// What to do when it is missing.
    pub remedy: String,
    /// Made automatically when first needed (synthetic data): missing is not a problem.
    pub generated_on_demand: bool,
}

/// The report [`check`] returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataReport {
    pub benchmark: String,
    pub scratch: Scratch,
    pub source: DatasetSource,
    pub items: Vec<Item>,
    /// Extra remarks (e.g. a benchmark this tool does not preprocess).
    pub notes: Vec<String>,
}

impl DataReport {
    /// Items that block a run.
    pub fn missing(&self) -> Vec<&Item> {
        self.items.iter().filter(|i| !i.present && !i.generated_on_demand).collect()
    }

    /// Everything needed is there (or is generated on first use).
    pub fn ready(&self) -> bool {
        self.missing().is_empty()
    }

    /// The report as text for `mlperf info`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let origin = if self.scratch.from_env { format!("from {SCRATCH_ENV}") } else { format!("default; set {SCRATCH_ENV} to change") };
        let _ = writeln!(out, "Data for {} ({} dataset), scratch space {} ({origin})", self.benchmark, self.source.name(), self.scratch.root.display());
        let width = self.items.iter().map(|i| i.what.len()).max().unwrap_or(0);
        for item in &self.items {
            let status = match (item.present, item.generated_on_demand) {
                (true, _) => "ok",
                (false, true) => "generated on first use",
                (false, false) => "MISSING",
            };
            let detail = item.detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default();
            let _ = writeln!(out, "  [{status}] {:width$}  {}{detail}", item.what, item.path.display());
            if !item.present {
                for line in item.remedy.lines() {
                    let _ = writeln!(out, "        -> {line}");
                }
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        let missing = self.missing().len();
        if missing == 0 {
            let _ = writeln!(out, "  ready");
        } else {
            let _ = writeln!(out, "  not ready: {missing} missing");
        }
        out
    }
}

/// How to preprocess a benchmark (this tool's command).
pub fn preprocess_command(benchmark: &str) -> String {
    format!("mlperf preprocess_data --benchmarks={benchmark}")
}

fn item(kind: ItemKind, what: &str, path: PathBuf, remedy: String) -> Item {
    let present = path.exists();
    Item { kind, what: what.to_string(), path, present, detail: None, remedy, generated_on_demand: false }
}

/// MLCommons' download of a model, by file name.
fn model_remedy(path: &Path) -> String {
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let url = match file {
        "resnet50_v1.onnx" => Some("https://zenodo.org/record/2592612/files/resnet50_v1.onnx (MLCommons ResNet50 v1.5, ONNX opset 8)"),
        "bert_large_v1_1_fake_quant.onnx" => Some("https://zenodo.org/record/3750364/files/bert_large_v1_1_fake_quant.onnx (MLCommons BERT-Large, int8 fake-quantized ONNX)"),
        "bert_large_v1_1.onnx" | "model.onnx" => Some("https://zenodo.org/record/3733910/files/model.onnx (MLCommons BERT-Large, fp32 ONNX)"),
        _ => None,
    };
    match url {
        Some(u) => format!("Download {u}\nand save it as {}", path.display()),
        None => format!("Put the model at {} (see the benchmark's MLCommons reference README for the official weights)", path.display()),
    }
}

/// Lists what `benchmark` needs with `settings`, under `scratch`.
pub fn check(scratch: &Scratch, benchmark: &str, settings: &Settings) -> DataReport {
    let source = settings.dataset.unwrap_or(DatasetSource::Real);
    let mut report = DataReport { benchmark: benchmark.to_string(), scratch: scratch.clone(), source, items: Vec::new(), notes: Vec::new() };
    if source == DatasetSource::Synthetic {
        check_synthetic(scratch, settings, &mut report);
        return report;
    }
    match benchmark {
        "resnet50" | "resnet" => check_resnet50(scratch, benchmark, settings, &mut report),
        "bert" | "bert-99" | "bert-99.9" => check_bert(scratch, benchmark, settings, &mut report),
        _ => check_generic(scratch, benchmark, settings, &mut report),
    }
    report
}

fn check_synthetic(scratch: &Scratch, settings: &Settings, report: &mut DataReport) {
    // The synthetic workload (engines::synthetic) writes its model and val map under models/ and
    // generates the images from their index; nothing needs downloading.
    let remedy = "Generated automatically by the synthetic workload on first use (never submittable)".to_string();
    if let Some(model) = scratch.model_path(settings) {
        let mut i = item(ItemKind::Model, "synthetic model", model, remedy.clone());
        i.generated_on_demand = true;
        report.items.push(i);
    }
    if let Some(map) = settings.map_path.as_deref() {
        let mut i = item(ItemKind::Map, "synthetic val map", scratch.models_dir().join(map), remedy);
        i.generated_on_demand = true;
        report.items.push(i);
    }
    report.notes.push("synthetic samples are generated from their index when loaded; no preprocessed tensors are read".into());
}

fn check_resnet50(scratch: &Scratch, benchmark: &str, settings: &Settings, report: &mut DataReport) {
    let raw_dir = scratch.data_dir().join("imagenet");
    let map_path = scratch.map_path(settings).unwrap_or_else(|| scratch.root.join("data_maps/imagenet/val_map.txt"));
    let map = read_val_map(&map_path).ok().filter(|m| !m.is_empty());

    let mut raw = item(
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
    let mut map_item = item(
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
    let raw_ready = raw.present && map_item.present;
    let preprocess = if raw_ready {
        format!("Run `{}`", preprocess_command(benchmark))
    } else {
        format!("Get the images and the val map (above), then run `{}`", preprocess_command(benchmark))
    };
    report.items.push(raw);
    report.items.push(map_item);
    for path in scratch.tensor_paths(settings) {
        let mut t = item(ItemKind::Preprocessed, "preprocessed ImageNet tensors", path.clone(), preprocess.clone());
        if t.present && path.is_dir() {
            if let Some(m) = &map {
                let missing = m.iter().filter(|e| !path.join(sample_file_name(&e.name)).is_file()).count();
                t.present = missing == 0;
                t.detail = Some(if missing == 0 { format!("{} samples", m.len()) } else { format!("{missing} of {} samples missing", m.len()) });
            }
        }
        report.items.push(t);
    }
    if let Some(model) = scratch.model_path(settings) {
        let remedy = model_remedy(&model);
        report.items.push(item(ItemKind::Model, "ResNet50 model", model, remedy));
    }
}

fn check_bert(scratch: &Scratch, benchmark: &str, settings: &Settings, report: &mut DataReport) {
    let dev = scratch.data_dir().join("squad/dev-v1.1.json");
    let model = scratch.model_path(settings);
    let vocab = model.as_ref().and_then(|m| m.parent().map(|d| d.join("vocab.txt"))).unwrap_or_else(|| scratch.models_dir().join("bert/vocab.txt"));
    let raw = item(
        ItemKind::Dataset,
        "SQuAD v1.1 dev set",
        dev.clone(),
        format!("Download https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json\nand save it as {}", dev.display()),
    );
    let vocab_item = item(
        ItemKind::Vocab,
        "BERT vocabulary",
        vocab.clone(),
        format!("Download https://zenodo.org/record/3733910/files/vocab.txt (MLCommons BERT-Large, uncased)\nand save it as {}", vocab.display()),
    );
    let preprocess = if raw.present && vocab_item.present {
        format!("Run `{}`", preprocess_command(benchmark))
    } else {
        format!("Get the SQuAD dev set and the vocabulary (above), then run `{}`", preprocess_command(benchmark))
    };
    report.items.push(raw);
    report.items.push(vocab_item);
    let tensors = scratch.tensor_paths(settings);
    for path in &tensors {
        report.items.push(item(ItemKind::Preprocessed, "tokenized SQuAD tensor", path.clone(), preprocess.clone()));
    }
    if let Some(dir) = tensors.first().and_then(|p| p.parent()) {
        report.items.push(item(ItemKind::Metadata, "SQuAD feature metadata (for scoring)", dir.join(FEATURES_FILE), preprocess.clone()));
    }
    if let Some(model) = model {
        let remedy = model_remedy(&model);
        report.items.push(item(ItemKind::Model, "BERT-Large model", model, remedy));
    }
}

fn check_generic(scratch: &Scratch, benchmark: &str, settings: &Settings, report: &mut DataReport) {
    let remedy = format!("Prepare it as the MLCommons reference implementation of {benchmark} describes (this tool does not preprocess {benchmark})");
    for path in scratch.tensor_paths(settings) {
        report.items.push(item(ItemKind::Preprocessed, "preprocessed data", path, remedy.clone()));
    }
    if let Some(map) = scratch.map_path(settings) {
        report.items.push(item(ItemKind::Map, "sample map", map, remedy.clone()));
    }
    if let Some(model) = scratch.model_path(settings) {
        let r = model_remedy(&model);
        report.items.push(item(ItemKind::Model, "model", model, r));
    }
    if report.items.is_empty() {
        report.notes.push(format!("the {benchmark} config names no tensor_path, map_path or model_path"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::npy::{NpyDtype, write_npy};

    fn root(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mlperf-scratch-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn resnet_settings() -> Settings {
        Settings {
            model_path: Some("ResNet50/resnet50_v1.onnx".into()),
            map_path: Some("data_maps/imagenet/val_map.txt".into()),
            tensor_path: Some("imagenet/ResNet50/int8_linear".into()),
            ..Settings::default()
        }
    }

    #[test]
    fn paths_follow_nvidias_layout() {
        let s = Scratch::new("/scratch");
        assert_eq!(s.tensor_paths(&resnet_settings()), vec![PathBuf::from("/scratch/preprocessed_data/imagenet/ResNet50/int8_linear")]);
        assert_eq!(s.map_path(&resnet_settings()), Some(PathBuf::from("/scratch/data_maps/imagenet/val_map.txt")));
        assert_eq!(s.model_path(&resnet_settings()), Some(PathBuf::from("/scratch/models/ResNet50/resnet50_v1.onnx")));
        let bert = Settings { tensor_path: Some("squad_tokenized/input_ids.npy, squad_tokenized/segment_ids.npy,/abs/input_mask.npy".into()), ..Settings::default() };
        assert_eq!(
            s.tensor_paths(&bert),
            vec![
                PathBuf::from("/scratch/preprocessed_data/squad_tokenized/input_ids.npy"),
                PathBuf::from("/scratch/preprocessed_data/squad_tokenized/segment_ids.npy"),
                PathBuf::from("/abs/input_mask.npy")
            ]
        );
    }

    #[test]
    fn resnet_report_goes_from_nothing_to_ready() {
        let r = root("resnet");
        let s = Scratch::new(&r);
        let report = check(&s, "resnet50", &resnet_settings());
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
        let report = check(&s, "resnet50", &resnet_settings());
        let raw = &report.items[0];
        assert_eq!((raw.present, raw.detail.as_deref()), (false, Some("1 of 2 listed images missing")));
        std::fs::write(r.join("data/imagenet/b.JPEG"), b"x").unwrap();
        let report = check(&s, "resnet50", &resnet_settings());
        assert!(report.items[0].present && report.items[1].present);
        assert_eq!(report.items[2].remedy, "Run `mlperf preprocess_data --benchmarks=resnet50`");

        // Preprocessed files for both samples and the model: ready.
        let t = r.join("preprocessed_data/imagenet/ResNet50/int8_linear");
        std::fs::create_dir_all(&t).unwrap();
        write_npy(&t.join("a.JPEG.npy"), NpyDtype::I8, &[1], &[0]).unwrap();
        assert_eq!(check(&s, "resnet50", &resnet_settings()).items[2].detail.as_deref(), Some("1 of 2 samples missing"));
        write_npy(&t.join("b.JPEG.npy"), NpyDtype::I8, &[1], &[0]).unwrap();
        std::fs::create_dir_all(r.join("models/ResNet50")).unwrap();
        std::fs::write(r.join("models/ResNet50/resnet50_v1.onnx"), b"onnx").unwrap();
        let report = check(&s, "resnet50", &resnet_settings());
        assert!(report.ready(), "{}", report.render());
        assert!(report.render().ends_with("  ready\n"));
    }

    #[test]
    fn bert_report_names_every_file() {
        let r = root("bert");
        let s = Scratch::new(&r);
        let settings = Settings {
            model_path: Some("bert/bert_large_v1_1_fake_quant.onnx".into()),
            tensor_path: Some("squad_tokenized/input_ids.npy,squad_tokenized/segment_ids.npy,squad_tokenized/input_mask.npy".into()),
            ..Settings::default()
        };
        let report = check(&s, "bert", &settings);
        let paths: Vec<String> = report.items.iter().map(|i| i.path.strip_prefix(&r).unwrap().display().to_string()).collect();
        assert_eq!(
            paths,
            [
                "data/squad/dev-v1.1.json",
                "models/bert/vocab.txt",
                "preprocessed_data/squad_tokenized/input_ids.npy",
                "preprocessed_data/squad_tokenized/segment_ids.npy",
                "preprocessed_data/squad_tokenized/input_mask.npy",
                "preprocessed_data/squad_tokenized/squad_features.json",
                "models/bert/bert_large_v1_1_fake_quant.onnx"
            ]
        );
        let text = report.render();
        assert!(text.contains("rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json"));
        assert!(text.contains("zenodo.org/record/3750364/files/bert_large_v1_1_fake_quant.onnx"));
        assert!(text.contains("zenodo.org/record/3733910/files/vocab.txt"));
        std::fs::create_dir_all(r.join("data/squad")).unwrap();
        std::fs::write(r.join("data/squad/dev-v1.1.json"), "{}").unwrap();
        std::fs::create_dir_all(r.join("models/bert")).unwrap();
        std::fs::write(r.join("models/bert/vocab.txt"), "[UNK]\n").unwrap();
        let report = check(&s, "bert", &settings);
        assert_eq!(report.items[2].remedy, "Run `mlperf preprocess_data --benchmarks=bert`");
    }

    #[test]
    fn synthetic_and_other_benchmarks() {
        let s = Scratch::new("/nonexistent-scratch");
        let synthetic = Settings {
            dataset: Some(DatasetSource::Synthetic),
            model_path: Some("synthetic/resnet50-64px.onnx".into()),
            map_path: Some("synthetic/imagenet-64px/val_map.txt".into()),
            ..Settings::default()
        };
        let report = check(&s, "resnet50", &synthetic);
        assert!(report.ready());
        assert!(report.render().contains("[generated on first use] synthetic model"));
        assert_eq!(report.items[1].path, PathBuf::from("/nonexistent-scratch/models/synthetic/imagenet-64px/val_map.txt"));
        let llama = Settings { tensor_path: Some("llama2-70b".into()), model_path: Some("Llama2/Llama-2-70b-chat-hf".into()), ..Settings::default() };
        let report = check(&s, "llama2-70b", &llama);
        assert_eq!(report.missing().len(), 2);
        assert!(report.render().contains("MLCommons reference implementation of llama2-70b"));
    }

    #[test]
    fn scratch_from_env() {
        // Only reads the variable: the test does not set it (tests run in parallel).
        let s = Scratch::from_env();
        match std::env::var_os(SCRATCH_ENV).filter(|v| !v.is_empty()) {
            Some(v) => assert_eq!((s.root, s.from_env), (PathBuf::from(v), true)),
            None => assert_eq!((s.root, s.from_env), (PathBuf::from(DEFAULT_SCRATCH), false)),
        }
        assert_eq!(Scratch::new("/s").preprocessed_dir(), PathBuf::from("/s/preprocessed_data"));
    }
}
