//! The benchmark seam: each benchmark family is one folder behind one small trait ([`Benchmark`]),
//! in the style of KILT's per-benchmark folders: everything that exists for one benchmark (its
//! engines' model code, import, synthetic model and data, dataset reader, scorer, audit specifics)
//! is in its folder. The harness, `preprocess_data`, `mlperf info`, `generate_engines`, `calibrate`
//! and the audits call the trait; nothing outside this module branches on a benchmark's name.
//!
//! Adding a benchmark family: a folder here implementing [`Benchmark`], its configs under
//! `configs/<benchmark>/`, and one line in [`FAMILIES`] (docs/architecture.md).
//!
//! - [`resnet50`]: ImageNet classification on the CPU engine (tract) or the GPU engine (cuDNN),
//!   with a synthetic workload for machines without the dataset.
//! - [`bert`]: SQuAD v1.1 question answering on the CPU engine (tract) or its GPU engine (cuBLASLt
//!   and NVRTC kernels), with a synthetic workload for machines without the dataset.
//! - [`unet3d`]: 3D-UNet KiTS19 segmentation on the CPU engine (tract, sliding windows), on real or
//!   synthetic data.
//! - [`yolo`]: YOLOv11 COCO detection on the CPU engine (tract), on real or synthetic data.
//! - [`llm`]: the language models, driven through serving engines over HTTP, and their evaluations.
//! - [`qwen3_vl`]: qwen3-vl-235b-a22b, product categorisation by a vision-language model over a
//!   chat API, scored by the reference's hierarchical category F1.
//! - [`Unsupported`]: every other benchmark of the catalog: its data is listed from the config's
//!   paths; runs need a test backend (`--backend=null|fixed_latency`).

pub mod bert;
pub mod llm;
pub mod qwen3_vl;
pub mod resnet50;
pub mod unet3d;
pub mod whisper;
pub mod yolo;

#[cfg(test)]
mod pattern_tests;

use crate::accuracy::{LogDtype, Scored};
use crate::dataset::SampleSet;
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::{DataReport, Scratch};
use crate::engines::Engine;
use crate::engines::gpu::spec::PlanIdentity;
use crate::engines::serving::client::ClientOptions;
pub use crate::engines::serving::client::ServingWork;
use crate::engines::serving::stand_in::ReferenceAnswers;
use crate::engines::serving::tokenizer::HfTokenizer;
use crate::engines::serving::{ServingError, launch};
use crate::error::Error;
use crate::progress::Progress;
use crate::select::Selected;
use crate::submittable::NonSubmittable;
use mlperf_config::Settings;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// One benchmark family. Methods that a family cannot do yet keep their default, which says so.
pub trait Benchmark: Sync {
    /// The catalog id the family serves (`resnet50`).
    fn id(&self) -> &'static str;

    /// Every file a run of `settings` needs from the scratch space, whether it is there, and what
    /// to download or preprocess when it is not.
    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport;

    /// Raw data in the scratch space to the tensors `settings` read; a line for the user.
    fn preprocess(&self, scratch: &Scratch, settings: &Settings) -> Result<String, Error> {
        let _ = (scratch, settings);
        Err(Error::Config(format!("this tool does not preprocess {}; prepare it as its MLCommons reference implementation describes", self.id())))
    }

    /// What `generate_engines` does ahead of a run: build or reuse engine plans (their int8
    /// calibration measured again with `force_calibration`), generate synthetic models. A line for
    /// the user.
    fn prepare(&self, spec: &WorkloadSpec, force_calibration: bool) -> Result<String, Error> {
        let _ = (spec, force_calibration);
        Ok("no engine to build".into())
    }

    /// `calibrate`: measure or reuse an int8 calibration. A line for the user.
    fn calibrate(&self, spec: &WorkloadSpec, force: bool) -> Result<String, Error> {
        let _ = (spec, force);
        Ok("nothing to calibrate".into())
    }

    /// The configured engines (one per device) and the sample library of a run. Missing data or a
    /// missing or stale engine is an [`Error::Data`] that says what to run; a config this family
    /// cannot run, an [`Error::Config`].
    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error>;

    /// Checks, before anything expensive starts (a serving engine loading its weights, samples
    /// running), what a run of `spec` reads: its dataset and, when the run is `scored`, what its
    /// scorer reads. Families whose `open` is itself the expensive part check nothing here.
    fn preflight(&self, spec: &WorkloadSpec, scored: bool) -> Result<(), Error> {
        let _ = (spec, scored);
        Ok(())
    }

    /// Scores an accuracy log of a run over `set` as the benchmark's official accuracy script
    /// does; the text is what that script prints into `accuracy.txt`.
    fn score(&self, settings: &Settings, accuracy_log: &Path, set: SampleSet) -> Result<Scored, Error> {
        let _ = (settings, accuracy_log, set);
        Err(Error::Config(format!("no accuracy scorer for {} in this build", self.id())))
    }

    /// Whether an accuracy run of a served workload on generated data has a ground truth to score
    /// (the generator makes one); served LLMs' generated prompts have none.
    fn scores_generated_data(&self) -> bool {
        false
    }

    /// What the compliance audits need to know of the benchmark's responses.
    fn audit(&self) -> AuditSpecifics {
        AuditSpecifics::default()
    }

    /// `serve_stand_in --benchmark=<id> --reference_answers=<path>`: what the stand-in answers each of
    /// the dataset's requests with, so a run against it scores as a perfect model would.
    fn stand_in_answers(&self, dataset: &Path, tokenizer: Option<&Path>) -> Result<ReferenceAnswers, Error> {
        let _ = (dataset, tokenizer);
        Err(Error::Config(format!("no reference answers for {} in this build: the stand-in answers it with generated text", self.id())))
    }
}

/// The benchmark families this build has, by catalog id.
static FAMILIES: &[&dyn Benchmark] = &[
    &resnet50::ResNet50,
    &bert::Bert,
    &unet3d::UNet3d,
    &llm::LLAMA2_70B,
    &llm::LLAMA3_1_8B,
    &llm::LLAMA3_1_8B_EDGE,
    &llm::LLAMA3_1_405B,
    &llm::MIXTRAL_8X7B,
    &llm::DEEPSEEK_R1,
    &llm::GPT_OSS_120B,
    &qwen3_vl::Qwen3Vl,
    &whisper::Whisper,
    &yolo::Yolo,
];

/// The workload of one selected config as its family sees it outside a run (`generate_engines`,
/// `calibrate`): the whole set, no resident samples, one device.
fn spec_of(selected: &Selected) -> WorkloadSpec<'_> {
    let c = selected.config;
    WorkloadSpec {
        settings: &selected.settings,
        plan: PlanIdentity { system: &c.system, scenario: c.scenario, workload: c.workload },
        total_samples: 0,
        performance_samples: 0,
        set: SampleSet::Performance,
        devices: 1,
        output_limit: None,
    }
}

/// `generate_engines` (and the first step of `mlperf run`): each config's engines built or reused,
/// a line per config to `report` as soon as it is done.
pub fn prepare_all(configs: &[Selected], force_calibration: bool, report: &mut dyn FnMut(&str)) -> Result<(), Error> {
    for selected in configs {
        let building = Progress::phase(format!("{}: generate_engines", selected.label()));
        let line = family(&selected.config.benchmark).prepare(&spec_of(selected), force_calibration).map_err(|e| e.context(selected.label()))?;
        drop(building);
        report(&format!("{}: {line}", selected.label()));
    }
    Ok(())
}

/// `calibrate`: each config's int8 calibration measured or reused (`force`: measured again).
pub fn calibrate_all(configs: &[Selected], force: bool, report: &mut dyn FnMut(&str)) -> Result<(), Error> {
    for selected in configs {
        let calibrating = Progress::phase(format!("{}: calibration", selected.label()));
        let line = family(&selected.config.benchmark).calibrate(&spec_of(selected), force).map_err(|e| e.context(selected.label()))?;
        drop(calibrating);
        report(&format!("{}: {line}", selected.label()));
    }
    Ok(())
}

/// `preprocess_data`: the data of each config, once per benchmark and tensor set (workloads that
/// read the same tensors share them).
pub fn preprocess_all(scratch: &Scratch, configs: &[Selected], report: &mut dyn FnMut(&str)) -> Result<(), Error> {
    let mut done: Vec<(&str, Option<&str>)> = Vec::new();
    for selected in configs {
        let key = (selected.config.benchmark.as_ref(), selected.settings.tensor_path.as_deref());
        if !done.contains(&key) {
            report(&family(key.0).preprocess(scratch, &selected.settings)?);
            done.push(key);
        }
    }
    Ok(())
}

/// `mlperf info`'s data section: what each benchmark of a system needs (its first workload's
/// settings; workloads of a benchmark share data).
pub fn data_reports(scratch: &Scratch, configs: impl Iterator<Item = &'static mlperf_config::CompiledConfig>) -> String {
    let mut seen = Vec::new();
    let mut out = String::new();
    for c in configs {
        if !seen.contains(&c.benchmark) {
            seen.push(c.benchmark.clone());
            out.push_str(&family(&c.benchmark).data(scratch, &c.settings).render());
        }
    }
    out
}

/// The family that serves `benchmark` (an id or alias of the catalog), or [`Unsupported`].
pub fn family(benchmark: &str) -> &'static dyn Benchmark {
    let id = mlperf_config::benchmark::find(benchmark).map_or(benchmark, |b| b.id);
    match FAMILIES.iter().find(|f| f.id() == id) {
        Some(f) => *f,
        None => unsupported(id),
    }
}

/// What a run of one config asks of its family: the settings (command-line overrides applied),
/// which plan it is, its sample counts and how many devices run it.
pub struct WorkloadSpec<'a> {
    pub settings: &'a Settings,
    pub plan: PlanIdentity<'a>,
    /// The accuracy set's size (LoadGen's total sample count).
    pub total_samples: usize,
    /// Samples held in memory during a performance run.
    pub performance_samples: usize,
    /// The set the run reads (its size is `total_samples`).
    pub set: SampleSet,
    pub devices: usize,
    /// LLMs: the round's output limit per sample (the reference SUT's `max_tokens`).
    pub output_limit: Option<u64>,
}

/// How a workload's samples are answered.
pub enum Drive {
    /// Engines on this machine, one per device, fed batches by the batching SUT.
    Batched(Vec<Arc<dyn Engine>>),
    /// Serving endpoints, streamed to by the serving SUT.
    Serving(ServingWork),
}

/// A ready workload: what answers the samples, and the samples.
pub struct Workload {
    pub drive: Drive,
    pub library: Arc<SampleLibrary>,
    /// Generated data and model (never submittable); accuracy measures agreement with the
    /// reference engine.
    pub synthetic: bool,
    /// Why the run cannot be submitted, found while opening the workload (a dataset file that is
    /// not the published one).
    pub caveats: Vec<NonSubmittable>,
}

/// How a benchmark's responses are compared by the audits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AuditSpecifics {
    /// The dtype TEST01 compares accuracy-log entries as (the official script's `--dtype`).
    pub test01_dtype: LogDtype,
    /// The dtype TEST06 reads output tokens as.
    pub test06_dtype: LogDtype,
}

impl<'a> WorkloadSpec<'a> {
    /// The workload a run's plan asks for.
    pub fn of_plan(plan: &'a crate::rundir::plan::RunPlan) -> WorkloadSpec<'a> {
        WorkloadSpec {
            settings: &plan.settings,
            plan: PlanIdentity { system: &plan.system, scenario: plan.scenario, workload: plan.workload },
            total_samples: plan.total_sample_count as usize,
            performance_samples: plan.performance_sample_count as usize,
            set: plan.sample_set(),
            devices: plan.devices,
            output_limit: plan.output_limit,
        }
    }
}

impl Workload {
    /// The batched engines (one per device); an error for serving workloads.
    pub fn engines(&self) -> Result<&[Arc<dyn Engine>], Error> {
        match &self.drive {
            Drive::Batched(devices) => Ok(devices),
            Drive::Serving(_) => Err(Error::Config("this workload is served over HTTP, not by engines of this process (use `mlperf bench llm`)".into())),
        }
    }
}

impl Default for AuditSpecifics {
    /// The official scripts' defaults: TEST01 compares bytes, TEST06 reads int32 token ids.
    fn default() -> Self {
        AuditSpecifics { test01_dtype: LogDtype::Int8, test06_dtype: LogDtype::Int32 }
    }
}

/// Requests in flight per endpoint when the config does not say (`max_concurrency`).
pub const DEFAULT_CONCURRENCY: u64 = 1024;
/// How long one request may take when the config does not say (`serving_request_timeout`).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Output limit when the round names none.
const FALLBACK_OUTPUT_LIMIT: u64 = 1024;

/// How the harness talks to a served config's endpoints (every family a serving engine answers).
/// A config whose endpoints or dialect cannot be used is a config error.
pub fn serving_options(settings: &Settings, benchmark: &str, output_limit: Option<u64>) -> Result<ClientOptions, Error> {
    let ms = |v: Option<u64>, default: Duration| v.map_or(default, Duration::from_millis);
    let config = |e: ServingError| Error::Config(e.to_string());
    let api = launch::api_of(settings).map_err(config)?;
    let tokenizer = if api.streams_text() {
        let path = Scratch::from_env().tokenizer_path(settings).ok_or(ServingError::NoTokenizerPath { api: api.name() }).map_err(config)?;
        Some(Arc::new(HfTokenizer::load(&path).map_err(|e| config(e.into()))?))
    } else {
        None
    };
    Ok(ClientOptions {
        endpoints: launch::endpoints(settings).map_err(config)?,
        api,
        model: launch::model_of(settings, benchmark),
        max_tokens: output_limit.unwrap_or(FALLBACK_OUTPUT_LIMIT).min(u64::from(u32::MAX)) as u32,
        per_endpoint_limit: settings.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY).max(1) as usize,
        request_timeout: ms(settings.serving_request_timeout, DEFAULT_REQUEST_TIMEOUT),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()).min(2),
        tokenizer,
    })
}

/// A benchmark of the catalog that no family of this build serves.
#[derive(Clone, Copy)]
pub struct Unsupported {
    id: &'static str,
}

/// One [`Unsupported`] per catalog benchmark, so the registry can hand out `'static` families.
static UNSUPPORTED: [Unsupported; CATALOG.len()] = {
    let mut all = [Unsupported { id: "" }; CATALOG.len()];
    let mut i = 0;
    while i < CATALOG.len() {
        all[i] = Unsupported { id: CATALOG[i].id };
        i += 1;
    }
    all
};
const CATALOG: &[mlperf_config::benchmark::BenchmarkInfo] = mlperf_config::benchmark::BENCHMARKS;

/// Stands for a name that is not in the catalog (the selection refuses those before any run).
static UNKNOWN: Unsupported = Unsupported { id: "an unknown benchmark" };

fn unsupported(id: &str) -> &'static dyn Benchmark {
    match UNSUPPORTED.iter().find(|u| u.id == id) {
        Some(u) => u,
        None => &UNKNOWN,
    }
}

/// The error of a family that has no engine for a config (`engine` in its settings).
pub fn no_engine(benchmark: &str, settings: &Settings) -> Error {
    let engine = settings.engine.map_or("gpu", |e| e.name());
    Error::Config(format!(
        "no {engine} engine for {benchmark} in this build: the CPU engines run resnet50, bert, 3d-unet and yolo, the GPU engines resnet50, bert and 3d-unet, serving engines the LLMs. \
         Use --backend=null or --backend=fixed_latency to exercise the harness"
    ))
}

impl Benchmark for Unsupported {
    fn id(&self) -> &'static str {
        self.id
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        DataReport::from_config_paths(scratch, self.id, settings)
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error> {
        Err(no_engine(self.id, spec.settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlperf_config::{EngineKind, Scenario, Workload as WorkloadSetting};

    #[test]
    fn families_are_found_by_id_or_alias_and_the_rest_are_unsupported() {
        assert_eq!(family("resnet").id(), "resnet50");
        assert_eq!(family("bert-99.9").id(), "bert");
        assert_eq!(family("llama2-70b").id(), "llama2-70b");
        let settings = Settings { engine: Some(EngineKind::Cpu), ..Settings::default() };
        let spec = WorkloadSpec {
            settings: &settings,
            plan: PlanIdentity { system: "CPU-dev", scenario: Scenario::Offline, workload: WorkloadSetting::default() },
            total_samples: 10,
            performance_samples: 10,
            set: SampleSet::Performance,
            devices: 1,
            output_limit: None,
        };
        let e = family("llama2-70b").open(&spec).err().unwrap();
        assert!(matches!(e, Error::Config(_)), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("no cpu engine for llama2-70b") && e.contains("--backend=null"), "{e}");
        assert!(family("whisper").open(&spec).err().unwrap().to_string().contains("no cpu engine for whisper"));
        let gpu = Settings { engine: Some(EngineKind::Gpu), ..Settings::default() };
        assert!(
            family("whisper")
                .open(&WorkloadSpec { settings: &gpu, plan: PlanIdentity { system: "CPU-dev", scenario: Scenario::Offline, workload: WorkloadSetting::default() }, ..spec })
                .err()
                .unwrap()
                .to_string()
                .contains("no gpu engine for whisper")
        );
        // The GPU BERT engine says what it runs before it looks for a GPU or a model.
        let fp32 = Settings { engine: Some(EngineKind::Gpu), precision: Some(mlperf_config::DataType::Fp32), ..Settings::default() };
        let e = family("bert").open(&WorkloadSpec { settings: &fp32, ..spec }).err().unwrap();
        assert!(matches!(e, Error::Config(_)) && e.to_string().contains("the GPU BERT engine runs int8 or fp16; this config asks for fp32"), "{e:?}");
        assert!(family("llama2-70b").preprocess(&Scratch::new("/s"), &settings).unwrap_err().to_string().contains("MLCommons reference implementation"));
    }
}
