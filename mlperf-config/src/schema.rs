//! The schema: every config field, once. `#[derive(ConfigFields)]` turns these declarations into the
//! field registry (`Settings::FIELDS`) and the by-name setter the resolver uses; `#[derive(Bake)]`
//! writes resolved values into the compiled tables.
//!
//! Attribute keys: `group`; `unit` (base unit of integer quantities); `benchmarks` (ids or the classes
//! `llm`, `lwis`); `scenarios`; `harness`; `power` (the only power setting that may set it);
//! `required` (scenarios whose submission configs must set it); `loadgen` (the user.conf key).
//! Field names are NVIDIA's, so existing configs and `--field=value` habits carry over.

use crate::field::{ComponentMap, StringList, StringMap};
use crate::types::{DataType, DatasetSource, EngineKind, InputFormat, ServingApi, ServingEngine};
use config_macros::{Bake, ConfigFields};
use std::borrow::Cow;

#[derive(Debug, Clone, Default, PartialEq, ConfigFields, Bake)]
pub struct Settings {
    // ---- LoadGen settings (written to user.conf) ----
    /// Expected Offline throughput in samples/s; becomes Offline target_qps.
    #[field(group = "loadgen", scenarios = "Offline", required = "Offline", loadgen = "target_qps")]
    pub offline_expected_qps: Option<f64>,
    /// Server target throughput in queries/s; target_qps = this x server_target_qps_adj_factor.
    #[field(group = "loadgen", scenarios = ["Server", "Interactive"], required = ["Server", "Interactive"], loadgen = "target_qps")]
    pub server_target_qps: Option<f64>,
    /// Multiplier applied to server_target_qps when writing user.conf (NVIDIA default 1.0).
    #[field(group = "loadgen", scenarios = ["Server", "Interactive"])]
    pub server_target_qps_adj_factor: Option<f64>,
    /// Server latency bound per query; may only tighten the benchmark's constraint.
    #[field(group = "loadgen", unit = "ns", scenarios = ["Server", "Interactive"], loadgen = "target_latency")]
    pub server_target_latency_ns: Option<u64>,
    /// Expected SingleStream latency per query; sizes LoadGen's generated schedule.
    #[field(group = "loadgen", unit = "ns", scenarios = "SingleStream", required = "SingleStream", loadgen = "target_latency")]
    pub single_stream_expected_latency_ns: Option<u64>,
    /// Expected MultiStream latency per query; sizes LoadGen's generated schedule.
    #[field(group = "loadgen", unit = "ns", scenarios = "MultiStream", required = "MultiStream", loadgen = "target_latency")]
    pub multi_stream_expected_latency_ns: Option<u64>,
    /// Minimum test duration; submissions need at least the round's minimum (600 s).
    #[field(group = "loadgen", unit = "ms", loadgen = "min_duration")]
    pub min_duration: Option<u64>,
    /// Maximum test duration (0 = none).
    #[field(group = "loadgen", unit = "ms", loadgen = "max_duration")]
    pub max_duration: Option<u64>,
    /// Minimum number of queries; may only raise the benchmark's value.
    #[field(group = "loadgen", loadgen = "min_query_count")]
    pub min_query_count: Option<u64>,
    /// Maximum number of queries (0 = none).
    #[field(group = "loadgen", loadgen = "max_query_count")]
    pub max_query_count: Option<u64>,
    /// Performance sample set size; may only raise the round's value in a submission.
    #[field(group = "loadgen", loadgen = "performance_sample_count_override")]
    pub performance_sample_count_override: Option<u64>,
    /// Server: coalesce queued queries into one issue call.
    #[field(group = "loadgen", scenarios = ["Server", "Interactive"], loadgen = "coalesce_queries")]
    pub coalesce_queries: Option<bool>,
    /// Server: maximum outstanding queries before LoadGen stops issuing.
    #[field(group = "loadgen", scenarios = ["Server", "Interactive"], loadgen = "max_async_queries")]
    pub max_async_queries: Option<u64>,

    // ---- Harness ----
    /// CUDA streams per GPU for host-to-device copies.
    #[field(group = "harness")]
    pub gpu_copy_streams: Option<u64>,
    /// CUDA streams per GPU for inference.
    #[field(group = "harness")]
    pub gpu_inference_streams: Option<u64>,
    /// Run inference on the copy streams instead of separate inference streams.
    #[field(group = "harness")]
    pub run_infer_on_copy_streams: Option<bool>,
    /// Batcher takes at most one batch from the queue per dequeue (LWIS deque limit).
    #[field(group = "harness", benchmarks = "lwis")]
    pub use_deque_limit: Option<bool>,
    /// How long the batcher waits to fill a batch.
    #[field(group = "harness", unit = "us")]
    pub deque_timeout_usec: Option<u64>,
    /// One batcher thread per device instead of one for all.
    #[field(group = "harness")]
    pub use_batcher_thread_per_device: Option<bool>,
    /// One CUDA worker thread per device.
    #[field(group = "harness")]
    pub use_cuda_thread_per_device: Option<bool>,
    /// Completion threads that return finished batches to LoadGen.
    #[field(group = "harness")]
    pub complete_threads: Option<u64>,
    /// QSL keeps samples in device memory, skipping host-to-device copies.
    #[field(group = "harness")]
    pub start_from_device: Option<bool>,
    /// Leave outputs on the device (3D-UNet).
    #[field(group = "harness", benchmarks = "3d-unet")]
    pub end_on_device: Option<bool>,
    /// Capture one CUDA graph per (stream, batch size).
    #[field(group = "harness")]
    pub use_graphs: Option<bool>,
    /// Spin-wait on completion events (SingleStream latency).
    #[field(group = "harness")]
    pub use_spin_wait: Option<bool>,
    /// Samples are laid out contiguously, so batches need no gather.
    #[field(group = "harness")]
    pub assume_contiguous: Option<bool>,
    /// The preprocessed dataset is one coalesced tensor per input.
    #[field(group = "harness")]
    pub coalesced_tensor: Option<bool>,
    /// Threads that call the SUT's issue path in Server (LoadGen server_num_issue_query_threads).
    #[field(group = "harness", scenarios = ["Server", "Interactive"])]
    pub server_num_issue_query_threads: Option<u64>,
    /// Warm-up before the timed run.
    #[field(group = "harness", unit = "ms")]
    pub warmup_duration: Option<u64>,
    /// GPU-to-CPU pinning, NVIDIA syntax "0-3:0-55,112-167&4-7:56-111,168-223".
    #[field(group = "harness")]
    pub numa_config: Option<Cow<'static, str>>,
    /// `nvidia-smi boost-slider --vboost` value during the run (Hopper/Blackwell).
    #[field(group = "harness")]
    pub vboost_slider: Option<u64>,
    /// Preprocessed input tensors, relative to the scratch space's preprocessed_data/.
    #[field(group = "dataset")]
    pub tensor_path: Option<Cow<'static, str>>,
    /// Sample map (image name and label per line), relative to the scratch space.
    #[field(group = "dataset", benchmarks = ["resnet50", "retinanet", "3d-unet"])]
    pub map_path: Option<Cow<'static, str>>,
    /// Real MLPerf data or generated synthetic data (never submittable).
    #[field(group = "dataset")]
    pub dataset: Option<DatasetSource>,

    // ---- Model ----
    /// Batch size per engine component, e.g. { resnet50 = 2048 }.
    #[field(group = "model")]
    pub gpu_batch_size: Option<ComponentMap>,
    /// Engine precision.
    #[field(group = "model")]
    pub precision: Option<DataType>,
    /// Data type of preprocessed inputs.
    #[field(group = "model")]
    pub input_dtype: Option<DataType>,
    /// Layout of preprocessed inputs.
    #[field(group = "model")]
    pub input_format: Option<InputFormat>,
    /// Use FP8 kernels where the engine offers them.
    #[field(group = "model")]
    pub use_fp8: Option<bool>,
    /// Model file, relative to the scratch space's models/.
    #[field(group = "model")]
    pub model_path: Option<Cow<'static, str>>,
    /// Engine family: our GPU engines, the CPU engine, or an external serving engine.
    #[field(group = "model")]
    pub engine: Option<EngineKind>,
    /// Input image side in pixels (synthetic workloads may run at reduced resolution).
    #[field(group = "model", benchmarks = ["resnet50", "retinanet"])]
    pub image_size: Option<u64>,
    /// BERT: sequence length the engine is optimised for.
    #[field(group = "model", benchmarks = "bert")]
    pub bert_opt_seqlen: Option<u64>,
    /// BERT: use the small-tile GEMM kernels.
    #[field(group = "model", benchmarks = "bert")]
    pub use_small_tile_gemm_plugin: Option<bool>,
    /// DLRMv2: fraction of embedding weights held on the GPU.
    #[field(group = "model", benchmarks = "dlrm-v2")]
    pub embedding_weights_on_gpu_part: Option<f64>,
    /// DLRMv2: number of sample bundles in flight per GPU.
    #[field(group = "model", benchmarks = "dlrm-v2")]
    pub gpu_num_bundles: Option<u64>,

    // ---- Engine build ----
    /// Scratch workspace the engine builder may give a layer.
    #[field(group = "engine", unit = "bytes")]
    pub workspace_size: Option<u64>,
    /// Limit the SMs an engine uses (0 = all).
    #[field(group = "engine")]
    pub active_sms: Option<u64>,
    /// Batch size for INT8 calibration.
    #[field(group = "engine")]
    pub calib_batch_size: Option<u64>,
    /// Number of calibration batches.
    #[field(group = "engine")]
    pub calib_max_batches: Option<u64>,
    /// INT8 calibration cache file, relative to the project root.
    #[field(group = "engine")]
    pub cache_file: Option<Cow<'static, str>>,
    /// INT8 calibration image list (one image name per line, as the sample map names them),
    /// relative to the scratch space.
    #[field(group = "engine", benchmarks = "resnet50")]
    pub calib_data_map: Option<Cow<'static, str>>,

    // ---- Power ----
    /// GPU power limit; MaxQ workloads must set it, MaxP ones must not.
    #[field(group = "power", unit = "W", power = "MaxQ")]
    pub power_limit: Option<u64>,

    // ---- LLM serving ----
    /// The serving engine of an `engine = "serving"` config: vllm, sglang, trtllm-serve, dynamo (started
    /// by `mlperf`), external (endpoints something else started), stand-in (test double).
    #[field(group = "llm", benchmarks = "llm")]
    pub serving_engine: Option<ServingEngine>,
    /// The HTTP API the endpoints are driven through; default: the serving engine's own (external
    /// endpoints must name it).
    #[field(group = "llm", benchmarks = "llm")]
    pub serving_api: Option<ServingApi>,
    /// Model instances `mlperf` starts per node, each on its own GPUs and port (NVIDIA's one engine per
    /// TP group); default 1.
    #[field(group = "llm", benchmarks = "llm")]
    pub serving_instances: Option<u64>,
    /// The first instance's port; instance i listens on serving_port + i (NVIDIA's default 30000).
    #[field(group = "llm", benchmarks = "llm")]
    pub serving_port: Option<u64>,
    /// Extra command-line arguments of the started engine, as written on its command line.
    #[field(group = "llm", benchmarks = "llm")]
    pub serving_args: Option<StringList>,
    /// How long a started engine may take to answer its health check (loading weights, compiling).
    #[field(group = "llm", unit = "ms", benchmarks = "llm")]
    pub serving_ready_timeout: Option<u64>,
    /// How long one request may take from sending to its last token before the run fails.
    #[field(group = "llm", unit = "ms", benchmarks = "llm")]
    pub serving_request_timeout: Option<u64>,
    /// Data parallelism within one engine instance (vLLM / SGLang `--data-parallel-size`).
    #[field(group = "llm", benchmarks = "llm")]
    pub data_parallelism: Option<u64>,
    /// Tensor parallelism per model instance.
    #[field(group = "llm", benchmarks = "llm")]
    pub tensor_parallelism: Option<u64>,
    /// Pipeline parallelism per model instance.
    #[field(group = "llm", benchmarks = "llm")]
    pub pipeline_parallelism: Option<u64>,
    /// Expert parallelism for mixture-of-experts models.
    #[field(group = "llm", benchmarks = ["mixtral-8x7b", "deepseek-r1"])]
    pub moe_expert_parallelism: Option<u64>,
    /// Maximum requests in flight to one serving endpoint (further requests wait for a free slot).
    #[field(group = "llm", benchmarks = "llm")]
    pub max_concurrency: Option<u64>,
    /// OpenAI-compatible endpoints (base URLs ending in /v1) of an external serving engine.
    #[field(group = "llm", benchmarks = "llm")]
    pub llm_server_urls: Option<StringList>,
    /// The model's tokenizer (a Hugging Face tokenizer.json), relative to the scratch space's
    /// models/: APIs that stream text only (completions-text) get their output ids by
    /// re-tokenizing the answer with it.
    #[field(group = "llm", benchmarks = "llm")]
    pub tokenizer_path: Option<Cow<'static, str>>,
    /// Serving engine build flags (TensorRT-LLM build / vLLM engine args).
    #[field(group = "llm", benchmarks = "llm")]
    pub trtllm_build_flags: Option<StringMap>,
    /// Serving engine runtime flags.
    #[field(group = "llm", benchmarks = "llm")]
    pub trtllm_runtime_flags: Option<StringMap>,
    /// Quantized checkpoint flags.
    #[field(group = "llm", benchmarks = "llm")]
    pub trtllm_checkpoint_flags: Option<StringMap>,
    /// How queries are spread over instances (round_robin, load_balancing, isl_load_balancing).
    #[field(group = "llm", benchmarks = "llm")]
    pub traffic_distribution_policy: Option<Cow<'static, str>>,

    // ---- Compliance audits ----
    /// Factor on the Server target QPS of compliance audit runs, applied on top of
    /// server_target_qps_adj_factor (e.g. 0.92 runs audits at 92 %); default 1.0 (no derating).
    #[field(group = "audit", scenarios = ["Server", "Interactive"])]
    pub audit_server_target_qps_adj_factor: Option<f64>,
    /// Extra attempts run_audit_harness makes when an audit fails verification; every attempt's
    /// logs are kept; default 0 (one attempt).
    #[field(group = "audit")]
    pub audit_retries: Option<u64>,
}

impl Settings {
    /// Index of a field by name.
    pub fn index_of(name: &str) -> Option<usize> {
        Self::FIELDS.iter().position(|f| f.name == name)
    }

    /// `(field, value text)` of every field that is set, in registry order.
    pub fn set_fields(&self) -> impl Iterator<Item = (&'static crate::field::FieldSpec, String)> + '_ {
        Self::FIELDS.iter().enumerate().filter_map(|(i, spec)| self.get(i).map(|v| (spec, v)))
    }

    /// Sets a field by name from a TOML value, with the same type and unit checks as the build
    /// (`--<field>=<value>` overrides and run plans both come here).
    pub fn set_toml(&mut self, field: &str, value: &toml::Value) -> Result<(), String> {
        let index = Self::index_of(field).ok_or_else(|| format!("`{field}` is not a config field (`mlperf config fields` lists them)"))?;
        let mut sources = crate::diag::Sources::default();
        let file = sources.add("<value>", format!("v = {value}"));
        let entries = crate::raw::parse_toml(&sources, file).map_err(|d| d.message)?;
        self.set(index, &entries[0].1).map_err(|e| e.message)
    }

    /// A field's value as TOML, or None when unset.
    pub fn get_toml(&self, index: usize) -> Option<toml::Value> {
        let text = self.get(index)?;
        let table: toml::Table = toml::from_str(&format!("v = {text}")).expect("field values render as TOML");
        table.get("v").cloned()
    }

    /// Batch size of one component, e.g. `batch_size("resnet50")`.
    pub fn batch_size(&self, component: &str) -> Option<u64> {
        self.gpu_batch_size.as_ref()?.iter().find(|(c, _)| c == component).map(|(_, b)| *b)
    }
}

/// The set fields as a map of field name to value (a run plan carries its effective settings so).
impl serde::Serialize for Settings {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (index, spec) in Self::FIELDS.iter().enumerate() {
            if let Some(value) = self.get_toml(index) {
                map.serialize_entry(spec.name, &value)?;
            }
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for Settings {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<String, toml::Value>::deserialize(deserializer)?;
        let mut settings = Settings::default();
        for (field, value) in &map {
            settings.set_toml(field, value).map_err(serde::de::Error::custom)?;
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_survive_json_with_every_kind_of_value() {
        let mut s = Settings {
            offline_expected_qps: Some(350.5),
            min_duration: Some(600_000),
            use_graphs: Some(false),
            model_path: Some("synthetic/a \"quoted\" name.onnx".into()),
            gpu_batch_size: Some(vec![("resnet50".into(), 8)].into()),
            precision: Some(crate::DataType::Int8),
            llm_server_urls: Some(vec!["http://a:8000".into()].into()),
            trtllm_runtime_flags: Some(vec![("max_num_tokens".into(), "8192".into())].into()),
            ..Settings::default()
        };
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Settings>(&json).unwrap(), s, "{json}");
        assert!(json.contains(r#""gpu_batch_size":{"resnet50":8}"#) && json.contains(r#""precision":"int8""#), "{json}");
        s.set_toml("min_duration", &toml::Value::String("10 s".into())).unwrap();
        assert_eq!(s.min_duration, Some(10_000));
        assert!(serde_json::from_str::<Settings>(r#"{"min_duraton": 1}"#).unwrap_err().to_string().contains("not a config field"));
        assert!(serde_json::from_str::<Settings>(r#"{"min_duration": "fast"}"#).is_err());
    }

    #[test]
    fn registry_is_complete_and_unique() {
        let names: std::collections::BTreeSet<_> = Settings::FIELDS.iter().map(|f| f.name).collect();
        assert_eq!(names.len(), Settings::FIELDS.len());
        assert!(Settings::FIELDS.iter().all(|f| !f.doc.is_empty()));
        let qps = &Settings::FIELDS[Settings::index_of("offline_expected_qps").unwrap()];
        assert_eq!((qps.loadgen_key, qps.required_for), (Some("target_qps"), &["Offline"][..]));
        let lat = &Settings::FIELDS[Settings::index_of("server_target_latency_ns").unwrap()];
        assert_eq!(lat.unit, Some("ns"));
    }
}
