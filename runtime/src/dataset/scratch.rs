//! NVIDIA's scratch space and what a benchmark needs from it.
//!
//! NVIDIA keeps datasets, models and preprocessed tensors outside the code tree, under
//! `$MLPERF_SCRATCH_PATH` (default `/home/mlperf_inference_storage`, `Makefile.const`), linked into
//! the tree as `build/data`, `build/models` and `build/preprocessed_data` (`make link_dirs`). The
//! config paths are relative to it: `tensor_path` to `preprocessed_data/`, `model_path` to
//! `models/`, `map_path` to the scratch root (which holds NVIDIA's `data_maps/`).
//!
//! A [`DataReport`] lists, for one benchmark and its resolved settings, every file the run needs,
//! whether it is there, and what to do about a missing one: where to download raw data and models,
//! or which `mlperf preprocess_data` command derives the preprocessed tensors once the raw data is
//! present. Each benchmark family builds its own (`benchmarks::Benchmark::data`) from the items
//! here; `mlperf info` renders it.

use std::fmt::Write as _;
use std::path::PathBuf;

use mlperf_config::{DatasetSource, Settings};

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

    /// The dataset directory (`tensor_path`'s first entry) and the model (`model_path`) of a family
    /// that reads one of each; an unset key is a config error saying what to set it to (`dataset`,
    /// `model`: what each should name).
    pub fn dataset_and_model(&self, settings: &Settings, benchmark: &str, dataset: &str, model: &str) -> Result<(PathBuf, PathBuf), crate::Error> {
        let unset = |key: &str, what: &str| crate::Error::Config(format!("the {benchmark} config names no {key}: set it to {what}"));
        let dir = self.tensor_paths(settings).into_iter().next().ok_or_else(|| unset("tensor_path", dataset))?;
        let model = self.model_path(settings).ok_or_else(|| unset("model_path", model))?;
        Ok((dir, model))
    }

    /// `tokenizer_path` under `models/`.
    pub fn tokenizer_path(&self, settings: &Settings) -> Option<PathBuf> {
        settings.tokenizer_path.as_deref().map(|p| self.models_dir().join(p))
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

impl Item {
    /// An entry for `path`, present when it exists.
    pub fn new(kind: ItemKind, what: &str, path: PathBuf, remedy: String) -> Item {
        let present = path.exists();
        Item { kind, what: what.to_string(), path, present, detail: None, remedy, generated_on_demand: false }
    }

    /// A file the synthetic workload writes on first use: missing is not a problem.
    pub fn generated(kind: ItemKind, what: &str, path: PathBuf) -> Item {
        let remedy = "Generated automatically by the synthetic workload on first use (never submittable)".to_string();
        Item { generated_on_demand: true, ..Item::new(kind, what, path, remedy) }
    }

    /// A model file; `download` names where MLCommons publishes it, when known.
    pub fn model(what: &str, path: PathBuf, download: Option<&str>) -> Item {
        let remedy = match download {
            Some(url) => format!("Download {url}\nand save it as {}", path.display()),
            None => format!("Put the model at {} (see the benchmark's MLCommons reference README for the official weights)", path.display()),
        };
        Item::new(ItemKind::Model, what, path, remedy)
    }
}

impl DataReport {
    pub fn new(scratch: &Scratch, benchmark: &str, settings: &Settings) -> DataReport {
        DataReport { benchmark: benchmark.to_string(), scratch: scratch.clone(), source: settings.dataset.unwrap_or(DatasetSource::Real), items: Vec::new(), notes: Vec::new() }
    }

    /// The report of a config with generated (synthetic) data: its model and val map are written
    /// on first use and the samples generated from their index, so nothing needs downloading.
    pub fn synthetic(scratch: &Scratch, benchmark: &str, settings: &Settings) -> DataReport {
        let mut report = DataReport::new(scratch, benchmark, settings);
        if let Some(model) = scratch.model_path(settings) {
            report.items.push(Item::generated(ItemKind::Model, "synthetic model", model));
        }
        if let Some(map) = settings.map_path.as_deref() {
            report.items.push(Item::generated(ItemKind::Map, "synthetic val map", scratch.models_dir().join(map)));
        }
        report.notes.push("synthetic samples are generated from their index when loaded; no preprocessed tensors are read".into());
        report
    }

    /// The config's model and tokenizer, where it names them.
    pub fn model_items(scratch: &Scratch, settings: &Settings) -> Vec<Item> {
        let tokenizer = scratch.tokenizer_path(settings).map(|path| {
            let remedy = format!("Put the model's Hugging Face tokenizer.json at {} (it comes with the model's weights)", path.display());
            Item::new(ItemKind::Vocab, "tokenizer", path, remedy)
        });
        scratch.model_path(settings).map(|model| Item::model("model", model, None)).into_iter().chain(tokenizer).collect()
    }

    /// The report of a benchmark this tool does not prepare: the paths its config names.
    pub fn from_config_paths(scratch: &Scratch, benchmark: &str, settings: &Settings) -> DataReport {
        let mut report = DataReport::new(scratch, benchmark, settings);
        let remedy = format!("Prepare it as the MLCommons reference implementation of {benchmark} describes (this tool does not preprocess {benchmark})");
        for path in scratch.tensor_paths(settings) {
            report.items.push(Item::new(ItemKind::Preprocessed, "preprocessed data", path, remedy.clone()));
        }
        if let Some(map) = scratch.map_path(settings) {
            report.items.push(Item::new(ItemKind::Map, "sample map", map, remedy.clone()));
        }
        report.items.extend(DataReport::model_items(scratch, settings));
        if report.items.is_empty() {
            report.notes.push(format!("the {benchmark} config names no tensor_path, map_path or model_path"));
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_nvidias_layout() {
        let s = Scratch::new("/scratch");
        let resnet = Settings { model_path: Some("ResNet50/resnet50_v1.onnx".into()), map_path: Some("data_maps/imagenet/val_map.txt".into()), ..Settings::default() };
        assert_eq!(s.map_path(&resnet), Some(PathBuf::from("/scratch/data_maps/imagenet/val_map.txt")));
        assert_eq!(s.model_path(&resnet), Some(PathBuf::from("/scratch/models/ResNet50/resnet50_v1.onnx")));
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
    fn synthetic_and_other_benchmarks() {
        let s = Scratch::new("/nonexistent-scratch");
        let synthetic = Settings {
            dataset: Some(DatasetSource::Synthetic),
            model_path: Some("synthetic/resnet50-64px.onnx".into()),
            map_path: Some("synthetic/imagenet-64px/val_map.txt".into()),
            ..Settings::default()
        };
        let report = DataReport::synthetic(&s, "resnet50", &synthetic);
        assert!(report.ready());
        assert!(report.render().contains("[generated on first use] synthetic model"));
        assert_eq!(report.items[1].path, PathBuf::from("/nonexistent-scratch/models/synthetic/imagenet-64px/val_map.txt"));
        let llama = Settings { tensor_path: Some("llama2-70b".into()), model_path: Some("Llama2/Llama-2-70b-chat-hf".into()), ..Settings::default() };
        let report = DataReport::from_config_paths(&s, "llama2-70b", &llama);
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
