//! BERT-Large on SQuAD v1.1: the data a run needs (dev set, vocabulary, tokenized tensors, feature
//! metadata, model), `preprocess_data` (tokenizing the dev set as the reference does), the CPU
//! engine (tract) on the MLPerf model or on the synthetic workload ([`synthetic`]: a generated
//! dev set, vocabulary and small BERT of the same interface; never submittable), and accuracy as
//! `accuracy-squad.py` scores it, and the GPU engine (fp16, packed sequences:
//! [`crate::benchmarks::bert::gpu`]) on GPU systems; synthetic GPU configs run a BERT-Large-shaped
//! model of the synthetic set ([`synthetic::ensure_large_model`]). Responses are each feature's
//! start and end logits, f32 `[length, 2]`.

pub mod accuracy;
pub mod cpu;
pub mod error;
pub mod gpu;
pub mod model;
pub mod squad;
pub mod synthetic;
pub mod wordpiece;

use super::{AuditSpecifics, Benchmark, Drive, Workload, WorkloadSpec, no_engine};
use crate::accuracy::{LogDtype, Scored};
use crate::benchmarks::bert::cpu::CpuBertEngine;
use crate::benchmarks::bert::gpu::RunOptions;
use crate::benchmarks::bert::gpu::builder::BertGpuSpec;
use crate::benchmarks::bert::squad::{DEV_SET_URL, FEATURES_FILE, SquadOptions, check_dev_set, preprocess_squad};
use crate::dataset::SampleSet;
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::{DataReport, Item, ItemKind, Scratch, preprocess_command};
use crate::engines::ElementType;
use crate::engines::gpu::device::require_cuda;
use crate::error::Error;
use accuracy::{SquadScoreOptions, score_squad};
use error::BertError;
use mlperf_config::{DatasetSource, EngineKind, Settings};
use mlperf_loadgen::Qsl;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use synthetic::{SyntheticSpec, SyntheticSquad};

pub struct Bert;

/// What the engines answer: f32 logits (`accuracy-squad.py`'s default `--output_dtype`).
const RESPONSE_DTYPE: LogDtype = LogDtype::Float32;

/// Where MLCommons publishes the files the configs name, by file name.
fn model_download(file: &str) -> Option<&'static str> {
    match file {
        "bert_large_v1_1_fake_quant.onnx" => Some("https://zenodo.org/record/3750364/files/bert_large_v1_1_fake_quant.onnx (MLCommons BERT-Large, int8 fake-quantized ONNX)"),
        "bert_large_v1_1.onnx" | "model.onnx" => Some("https://zenodo.org/record/3733910/files/model.onnx (MLCommons BERT-Large, fp32 ONNX)"),
        _ => None,
    }
}

/// The vocabulary: next to the model, as MLCommons ships it.
fn vocab_path(scratch: &Scratch, settings: &Settings) -> PathBuf {
    scratch.model_path(settings).and_then(|m| m.parent().map(|d| d.join("vocab.txt"))).unwrap_or_else(|| scratch.models_dir().join("bert/vocab.txt"))
}

fn is_synthetic(settings: &Settings) -> bool {
    settings.dataset == Some(DatasetSource::Synthetic)
}

/// The synthetic set: one per scratch space, whatever the config's `model_path` (a GPU system's
/// names the real model, whose directory must not receive generated files).
fn synthetic_set(scratch: &Scratch) -> SyntheticSquad {
    SyntheticSquad::in_dir(&scratch.models_dir().join("synthetic/squad"))
}

/// The config's synthetic set (generated on first use), or None for real data.
fn synthetic_of(settings: &Settings) -> Result<Option<SyntheticSquad>, Error> {
    if is_synthetic(settings) { ensure_synthetic().map(Some) } else { Ok(None) }
}

/// The synthetic set, generated on first use (each call checks every file against the manifest:
/// call it once per command).
fn ensure_synthetic() -> Result<SyntheticSquad, Error> {
    let set = synthetic_set(&Scratch::from_env());
    // The generated set stands for the dataset: whatever stops it is the run's data, as always.
    synthetic::ensure(&set, &SyntheticSpec::standard(), &mut |m| tracing::info!("synthetic: {m}")).map_err(|e| Error::Data(e.to_string()))?;
    Ok(set)
}

/// Features the GPU plan is checked against the CPU engine on when it is built: enough that the
/// int8 bar (F1 0.99) is not decided by a feature or two (one changed answer moves F1 by 0.002).
const CHECK_FEATURES: usize = 512;

/// The GPU engine's precision for this config: fp16 (the shipped configs: configs/bert/defaults.toml
/// says why not NVIDIA's int8) or int8 (`--precision=int8`); the reason when it runs neither.
fn gpu_precision(settings: &Settings) -> Result<ElementType, String> {
    match settings.precision.map(ElementType::from_config) {
        None | Some(Some(ElementType::F16)) => Ok(ElementType::F16),
        Some(Some(ElementType::I8)) => Ok(ElementType::I8),
        _ => {
            Err(format!("the GPU BERT engine runs int8 or fp16; this config asks for {}: pass --precision=int8 or --precision=fp16", settings.precision.map_or("?", |p| p.name())))
        }
    }
}

/// The GPU plan a config describes (`set`: its synthetic set), the synthetic BERT-Large-shaped
/// model generated on first use.
fn gpu_spec(spec: &WorkloadSpec, set: Option<&SyntheticSquad>) -> Result<BertGpuSpec, Error> {
    let settings = spec.settings;
    let precision = gpu_precision(settings).map_err(Error::Config)?;
    let model_path = match set {
        Some(set) => synthetic::ensure_large_model(set, &mut |m| tracing::info!("synthetic: {m}")).map_err(|e| Error::Data(e.to_string()))?,
        None => Scratch::from_env().model_path(settings).ok_or_else(|| Error::Config("bert configs need model_path".into()))?,
    };
    if !model_path.is_file() {
        return Err(Error::Data(format!("model {} not found: download the MLPerf BERT-Large ONNX model there (`mlperf info` lists every expected path)", model_path.display())));
    }
    let batch_size = settings.batch_size("bert").unwrap_or(1).max(1) as usize;
    let options =
        RunOptions { batch_size, seq: mlperf_seq_length(), streams: settings.gpu_inference_streams.unwrap_or(1).max(1) as usize, use_graphs: settings.use_graphs.unwrap_or(false) };
    Ok(BertGpuSpec { plan_path: spec.plan.plan_path("bert", precision, batch_size), model_path, options, precision })
}

/// MLPerf's feature length (the preprocessing's `max_seq_length`, 384), which every engine, plan
/// and check of this benchmark assumes.
fn mlperf_seq_length() -> usize {
    SquadOptions::default().max_seq_length
}

/// The directory of the preprocessed tensors, where the feature metadata goes too.
fn tensor_dir(tensors: &[PathBuf]) -> Option<&Path> {
    tensors.first().and_then(|p| p.parent())
}

/// The tensors and feature metadata a config reads: the synthetic set's, or the preprocessed ones.
fn tensors_and_features(scratch: &Scratch, settings: &Settings, set: Option<&SyntheticSquad>) -> Result<(Vec<PathBuf>, PathBuf), Error> {
    if let Some(set) = set {
        return Ok((set.tensors(), set.features()));
    }
    let tensors = scratch.tensor_paths(settings);
    let features = tensor_dir(&tensors).map(|d| d.join(FEATURES_FILE)).ok_or_else(|| Error::Config("bert configs need tensor_path".into()))?;
    Ok((tensors, features))
}

impl Bert {
    /// The tokenized features a config reads (`set`: its synthetic set, already ensured), holding
    /// up to `resident` in memory; real data must be ready. Runs pass the round's set size as
    /// `expected`.
    fn samples(&self, settings: &Settings, set: Option<&SyntheticSquad>, resident: usize, expected: Option<usize>) -> Result<SampleLibrary, Error> {
        let scratch = Scratch::from_env();
        if set.is_none() {
            let report = self.data(&scratch, settings);
            if !report.ready() {
                return Err(Error::Data(format!("the data of bert is not ready:\n{}", report.render())));
            }
        }
        let (tensors, _) = tensors_and_features(&scratch, settings, set)?;
        let library = SampleLibrary::open("SQuAD", &tensors, None, resident)?;
        if let Some(expected) = expected.filter(|&e| e != library.total_sample_count()) {
            return Err(Error::Data(format!(
                "{} holds {} features; the round's SQuAD v1.1 dev set has {expected}: run `{}` again",
                tensors[0].display(),
                library.total_sample_count(),
                preprocess_command(self.id())
            )));
        }
        let seq = library.inputs()[0].shape.first().copied().unwrap_or(0);
        if seq != mlperf_seq_length() {
            return Err(Error::Data(format!(
                "{} holds features of {seq} tokens; MLPerf's are {}: run `{}` again",
                tensors[0].display(),
                mlperf_seq_length(),
                preprocess_command(self.id())
            )));
        }
        Ok(library)
    }
}

impl Benchmark for Bert {
    fn id(&self) -> &'static str {
        "bert"
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        let mut report = DataReport::new(scratch, self.id(), settings);
        if is_synthetic(settings) {
            {
                let set = synthetic_set(scratch);
                report.items.push(Item::generated(ItemKind::Dataset, "synthetic SQuAD dev set", set.dev_set()));
                report.items.push(Item::generated(ItemKind::Vocab, "synthetic vocabulary", set.vocab()));
                report.items.extend(set.tensors().into_iter().map(|p| Item::generated(ItemKind::Preprocessed, "tokenized synthetic SQuAD tensor", p)));
                report.items.push(Item::generated(ItemKind::Metadata, "synthetic SQuAD feature metadata", set.features()));
                report.items.push(match settings.engine.unwrap_or(EngineKind::Gpu) {
                    EngineKind::Gpu => Item::generated(ItemKind::Model, "synthetic BERT-Large-shaped model", set.large_model()),
                    _ => Item::generated(ItemKind::Model, "synthetic BERT model", set.model()),
                });
            }
            return report;
        }
        let dev = scratch.data_dir().join("squad/dev-v1.1.json");
        let vocab = vocab_path(scratch, settings);
        let mut raw = Item::new(ItemKind::Dataset, "SQuAD v1.1 dev set", dev.clone(), format!("Download {DEV_SET_URL}\nand save it as {}", dev.display()));
        if raw.present {
            let (published, detail) = match check_dev_set(&dev) {
                Ok(digest) => (true, digest),
                Err(e) => (false, e.to_string()),
            };
            (raw.present, raw.detail) = (published, Some(detail));
        }
        let vocab_item = Item::new(
            ItemKind::Vocab,
            "BERT vocabulary",
            vocab.clone(),
            format!("Download https://zenodo.org/record/3733910/files/vocab.txt (MLCommons BERT-Large, uncased)\nand save it as {}", vocab.display()),
        );
        let preprocess = if raw.present && vocab_item.present {
            format!("Run `{}`", preprocess_command(self.id()))
        } else {
            format!("Get the SQuAD dev set and the vocabulary (above), then run `{}`", preprocess_command(self.id()))
        };
        report.items.push(raw);
        report.items.push(vocab_item);
        let tensors = scratch.tensor_paths(settings);
        for path in &tensors {
            report.items.push(Item::new(ItemKind::Preprocessed, "tokenized SQuAD tensor", path.clone(), preprocess.clone()));
        }
        if let Some(dir) = tensor_dir(&tensors) {
            report.items.push(Item::new(ItemKind::Metadata, "SQuAD feature metadata (for scoring)", dir.join(FEATURES_FILE), preprocess.clone()));
        }
        if let Some(model) = scratch.model_path(settings) {
            let download = model.file_name().and_then(|f| f.to_str()).and_then(model_download);
            report.items.push(Item::model("BERT-Large model", model, download));
        }
        report
    }

    fn preprocess(&self, scratch: &Scratch, settings: &Settings) -> Result<String, Error> {
        if is_synthetic(settings) {
            let set = ensure_synthetic()?;
            return Ok(format!("bert: synthetic SQuAD set ready in {}", set.dir.display()));
        }
        let tensors = scratch.tensor_paths(settings);
        let out_dir = tensor_dir(&tensors).ok_or(BertError::NeedsSetting("tensor_path"))?.to_path_buf();
        // MLPerf's features are 384 tokens whatever the engine: `bert_opt_seqlen` only tunes
        // NVIDIA's engines.
        let dev = scratch.data_dir().join("squad/dev-v1.1.json");
        check_dev_set(&dev)?;
        let report = preprocess_squad(&dev, &vocab_path(scratch, settings), &out_dir, &SquadOptions::default())?;
        Ok(format!("bert: {} questions -> {} features in {} ({:.1} s)", report.examples, report.features, report.out_dir.display(), report.elapsed.as_secs_f64()))
    }

    fn calibrate(&self, spec: &WorkloadSpec, _force: bool) -> Result<String, Error> {
        Ok(match gpu_precision(spec.settings) {
            Ok(ElementType::I8) if spec.settings.engine.unwrap_or(EngineKind::Gpu) == EngineKind::Gpu => {
                "nothing to calibrate: int8 BERT plans quantize each token's inputs on the GPU at the token's own scale".into()
            }
            _ => "nothing to calibrate".into(),
        })
    }

    fn prepare(&self, spec: &WorkloadSpec, _force_calibration: bool) -> Result<String, Error> {
        match spec.settings.engine.unwrap_or(EngineKind::Gpu) {
            EngineKind::Cpu if is_synthetic(spec.settings) => {
                let set = ensure_synthetic()?;
                Ok(format!("synthetic SQuAD set and model in {}", set.dir.display()))
            }
            EngineKind::Cpu => Ok("cpu engine, nothing to build".into()),
            EngineKind::Gpu => {
                // Not an error: `generate_engines` over a GPU system's benchmarks (int8 by
                // NVIDIA's defaults) goes on to the others; a run of this config says why not.
                if let Err(why) = gpu_precision(spec.settings) {
                    return Ok(format!("{why}; nothing built"));
                }
                // Before generating any model: without a GPU nothing below can finish.
                require_cuda().map_err(|e| Error::Config(e.to_string()))?;
                let set = synthetic_of(spec.settings)?;
                let gpu = gpu_spec(spec, set.as_ref())?;
                let library = self.samples(spec.settings, set.as_ref(), CHECK_FEATURES, None)?;
                let checked = CHECK_FEATURES.min(library.total_sample_count());
                Qsl::load_samples(&library, &(0..checked).collect::<Vec<_>>());
                Ok(gpu.generate(&library, checked, &mut |line| tracing::info!("  {line}"))?)
            }
            // Not an error: `generate_engines` over a system's benchmarks goes on to the others;
            // a run of this config says why it cannot run.
            EngineKind::Serving => Ok("no serving engine for bert, nothing to build".into()),
        }
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error> {
        let settings = spec.settings;
        let kind = settings.engine.unwrap_or(EngineKind::Gpu);
        if kind == EngineKind::Serving {
            return Err(no_engine(self.id(), settings));
        }
        let set = synthetic_of(settings)?;
        let engines = if kind == EngineKind::Gpu {
            gpu_spec(spec, set.as_ref())?.open(spec.devices)?
        } else {
            let model = match &set {
                Some(set) => set.model(),
                None => Scratch::from_env().model_path(settings).ok_or_else(|| Error::Config("bert configs need model_path".into()))?,
            };
            let engine = Arc::new(CpuBertEngine::load(&model, mlperf_seq_length())?);
            vec![engine as Arc<dyn crate::engines::Engine>; spec.devices.max(1)]
        };
        let library = self.samples(settings, set.as_ref(), spec.performance_samples, Some(spec.total_samples))?;
        Ok(Workload { drive: Drive::Batched(engines), library: Arc::new(library), synthetic: is_synthetic(settings), caveats: Vec::new() })
    }

    fn score(&self, settings: &Settings, accuracy_log: &Path, _set: SampleSet) -> Result<Scored, Error> {
        let scratch = Scratch::from_env();
        let set = if is_synthetic(settings) { Some(synthetic_set(&scratch)) } else { None };
        let (_, features) = tensors_and_features(&scratch, settings, set.as_ref())?;
        let options = SquadScoreOptions { dtype: RESPONSE_DTYPE, ..SquadScoreOptions::default() };
        Ok(score_squad(accuracy_log, &features, &options)?.scored())
    }

    fn audit(&self) -> AuditSpecifics {
        // TEST01 compares the logits as logged; TEST06 does not apply to BERT.
        AuditSpecifics { test01_dtype: RESPONSE_DTYPE, ..AuditSpecifics::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped GPU configs run fp16 for both targets (int8 misses the F1 bar on the synthetic
    /// model); int8 resolves to an int8 plan, precisions the engine does not run are refused with
    /// the override to pass.
    #[test]
    fn shipped_configs_resolve_to_fp16_plans_and_int8_to_int8() {
        use crate::engines::gpu::spec::PlanIdentity;
        use mlperf_config::{AccuracyTarget, DataType, Scenario, Workload as WorkloadSetting};
        let shipped: toml::Table = toml::from_str(include_str!("../../../../configs/bert/defaults.toml")).unwrap();
        let precision = |section: &str| shipped[section]["precision"].as_str().unwrap().to_string();
        assert_eq!((precision("default"), precision("high_accuracy")), ("fp16".to_string(), "fp16".to_string()));
        let of = |p: DataType| gpu_precision(&Settings { precision: Some(p), ..Settings::default() });
        assert_eq!((of(DataType::Int8), of(DataType::Fp16)), (Ok(ElementType::I8), Ok(ElementType::F16)));
        let e = of(DataType::Fp8).unwrap_err();
        assert!(e.contains("runs int8 or fp16") && e.contains("--precision=int8"), "{e}");
        let plan = |accuracy, p| {
            let workload = WorkloadSetting { accuracy, ..WorkloadSetting::default() };
            PlanIdentity { system: "H200-SXM-141GBx1", scenario: Scenario::Offline, workload }.plan_path("bert", p, 1280).display().to_string()
        };
        assert!(plan(AccuracyTarget::K99, ElementType::I8).ends_with("H200-SXM-141GBx1/Offline/bert/gpu-bert-int8-b1280.default.plan"));
        assert!(plan(AccuracyTarget::K99_9, ElementType::F16).ends_with("H200-SXM-141GBx1/Offline/bert/gpu-bert-fp16-b1280.high_accuracy.plan"));
    }

    #[test]
    fn the_report_names_every_file() {
        let r = std::env::temp_dir().join(format!("mlperf-bert-data-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&r);
        let s = Scratch::new(&r);
        let settings = Settings {
            model_path: Some("bert/bert_large_v1_1_fake_quant.onnx".into()),
            tensor_path: Some("squad_tokenized/input_ids.npy,squad_tokenized/segment_ids.npy,squad_tokenized/input_mask.npy".into()),
            ..Settings::default()
        };
        let report = Bert.data(&s, &settings);
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
        // Not the published dev set: reported as missing, saying why, and refused by preprocessing.
        let report = Bert.data(&s, &settings);
        let dev = &report.items[0];
        let why = dev.detail.as_deref().unwrap_or_default();
        assert!(!dev.present && why.contains("2 bytes, sha256 44136fa3") && why.contains("a partial download or another file"), "{why}");
        assert!(report.items[2].remedy.starts_with("Get the SQuAD dev set and the vocabulary"), "{}", report.items[2].remedy);
        let e = Bert.preprocess(&s, &settings).unwrap_err();
        assert!(e.to_string().contains("dev-v1.1.json: 2 bytes") && e.to_string().contains(DEV_SET_URL), "{e}");
        assert_eq!(e.exit_code(), crate::error::exit::DATA);
        std::fs::remove_dir_all(&r).unwrap();
    }
}
