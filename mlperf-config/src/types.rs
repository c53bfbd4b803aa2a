//! The key space `(system, benchmark, scenario, workload)` and the small enums config values use.

use config_macros::Bake;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A LoadGen scenario, plus `Interactive` (a LoadGen Server run of the `<model>-interactive` settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Bake, Serialize, Deserialize)]
pub enum Scenario {
    Offline,
    Server,
    SingleStream,
    MultiStream,
    Interactive,
}

impl Scenario {
    pub const ALL: [Scenario; 5] = [Scenario::Offline, Scenario::Server, Scenario::SingleStream, Scenario::MultiStream, Scenario::Interactive];

    /// The name used in directory names, config file names and the checker.
    pub const fn name(self) -> &'static str {
        match self {
            Scenario::Offline => "Offline",
            Scenario::Server => "Server",
            Scenario::SingleStream => "SingleStream",
            Scenario::MultiStream => "MultiStream",
            Scenario::Interactive => "Interactive",
        }
    }

    /// The scenario LoadGen runs (Interactive is a Server run).
    pub const fn loadgen(self) -> Scenario {
        match self {
            Scenario::Interactive => Scenario::Server,
            other => other,
        }
    }

    /// The scenario of exactly this name (`Offline`), as LoadGen's logs and the checker write it.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Parses the exact name or NVIDIA's case-insensitive CLI spelling (`offline`, `singlestream`).
    pub fn parse(text: &str) -> Option<Scenario> {
        let lower = text.to_ascii_lowercase().replace(['_', '-'], "");
        Scenario::ALL.into_iter().find(|s| s.name().to_ascii_lowercase() == lower)
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which harness serves the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Bake)]
pub enum Harness {
    /// This project's own harness (NVIDIA's `Custom`; LWIS-style batching for vision models).
    Custom,
    /// Triton Inference Server front end.
    Triton,
    /// Heterogeneous MIG slices.
    HeteroMig,
}

impl Harness {
    pub const ALL: [Harness; 3] = [Harness::Custom, Harness::Triton, Harness::HeteroMig];

    pub const fn name(self) -> &'static str {
        match self {
            Harness::Custom => "custom",
            Harness::Triton => "triton",
            Harness::HeteroMig => "hetero",
        }
    }

    const fn short(self) -> char {
        match self {
            Harness::Custom => 'c',
            Harness::Triton => 't',
            Harness::HeteroMig => 'h',
        }
    }

    pub fn parse(text: &str) -> Option<Harness> {
        let lower = text.to_ascii_lowercase();
        Harness::ALL.into_iter().find(|h| h.name() == lower || (lower.len() == 1 && h.short().to_string() == lower))
    }
}

/// Accuracy target: 99 % or 99.9 % of the reference accuracy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Bake)]
pub enum AccuracyTarget {
    K99,
    K99_9,
}

impl AccuracyTarget {
    /// The key used in round tables and checker names (`99`, `99.9`).
    pub const fn key(self) -> &'static str {
        match self {
            AccuracyTarget::K99 => "99",
            AccuracyTarget::K99_9 => "99.9",
        }
    }

    /// Parses `99`, `99.9`, `0.99`, `0.999`.
    pub fn parse(text: &str) -> Option<AccuracyTarget> {
        match text {
            "99" | "0.99" | ".99" => Some(AccuracyTarget::K99),
            "99.9" | "0.999" | ".999" => Some(AccuracyTarget::K99_9),
            _ => None,
        }
    }
}

/// Power setting: MaxP (no power limit) or MaxQ (power-capped, needs `power_limit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Bake)]
pub enum PowerSetting {
    MaxP,
    MaxQ,
}

impl PowerSetting {
    pub const fn name(self) -> &'static str {
        match self {
            PowerSetting::MaxP => "MaxP",
            PowerSetting::MaxQ => "MaxQ",
        }
    }

    pub fn parse(text: &str) -> Option<PowerSetting> {
        match text.to_ascii_lowercase().as_str() {
            "maxp" | "p" => Some(PowerSetting::MaxP),
            "maxq" | "q" => Some(PowerSetting::MaxQ),
            _ => None,
        }
    }
}

/// `(harness, accuracy target, power setting)`: NVIDIA's `WorkloadSetting`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Bake)]
pub struct Workload {
    pub harness: Harness,
    pub accuracy: AccuracyTarget,
    pub power: PowerSetting,
}

impl Default for Workload {
    fn default() -> Self {
        Workload { harness: Harness::Custom, accuracy: AccuracyTarget::K99, power: PowerSetting::MaxP }
    }
}

impl Workload {
    /// NVIDIA's short code, e.g. `cp990`, used in engine file names.
    pub fn short(self) -> String {
        let acc = match self.accuracy {
            AccuracyTarget::K99 => "990",
            AccuracyTarget::K99_9 => "999",
        };
        let power = match self.power {
            PowerSetting::MaxP => 'p',
            PowerSetting::MaxQ => 'q',
        };
        format!("{}{}{}", self.harness.short(), power, acc)
    }

    /// The config section name of this workload: NVIDIA's legacy `config_ver` name
    /// (`default`, `high_accuracy`, `maxq`, `high_accuracy_maxq`, `triton`, `triton_high_accuracy`, ...).
    pub fn section_name(self) -> String {
        let mut parts = Vec::new();
        if self.harness != Harness::Custom {
            parts.push(self.harness.name());
        }
        if self.accuracy == AccuracyTarget::K99_9 {
            parts.push("high_accuracy");
        }
        if self.power == PowerSetting::MaxQ {
            parts.push("maxq");
        }
        if parts.is_empty() { "default".to_string() } else { parts.join("_") }
    }

    /// Strict inverse of [`Workload::section_name`]: exactly the canonical names are accepted.
    pub fn from_section_name(name: &str) -> Option<Workload> {
        let w = Workload::from_config_ver(name)?;
        (w.section_name() == name).then_some(w)
    }

    /// NVIDIA's legacy `--config_ver` mapping: substring tests on the name (`triton` -> Triton harness,
    /// `hetero` -> HeteroMIG, `high_accuracy` -> 99.9, `maxq` -> MaxQ). Returns None for names that contain
    /// none of the known parts and are not `default`.
    pub fn from_config_ver(name: &str) -> Option<Workload> {
        let lower = name.to_ascii_lowercase();
        let mut w = Workload::default();
        let mut known = lower == "default";
        if lower.contains("triton") {
            w.harness = Harness::Triton;
            known = true;
        } else if lower.contains("hetero") {
            w.harness = Harness::HeteroMig;
            known = true;
        }
        if lower.contains("high_accuracy") {
            w.accuracy = AccuracyTarget::K99_9;
            known = true;
        }
        if lower.contains("maxq") {
            w.power = PowerSetting::MaxQ;
            known = true;
        }
        known.then_some(w)
    }
}

/// A workload is written as its section name (`default`, `high_accuracy`, ...).
impl Serialize for Workload {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.section_name())
    }
}

impl<'de> Deserialize<'de> for Workload {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Workload::from_section_name(&name).ok_or_else(|| serde::de::Error::custom(format!("`{name}` is not a workload section name (default, high_accuracy, maxq, ...)")))
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.harness.name(), self.accuracy.key(), self.power.name())
    }
}

/// Numeric precision of weights, activations or inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Bake)]
pub enum DataType {
    Fp32,
    Fp16,
    Bf16,
    Fp8,
    Fp4,
    Int8,
    Int32,
    Int64,
}

/// Memory layout of input tensors (NVIDIA's `input_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Bake)]
pub enum InputFormat {
    Linear,
    Chw4,
    Dhwc8,
    Cdhw32,
}

/// Where the benchmark's samples and model come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Bake)]
pub enum DatasetSource {
    /// The real MLPerf dataset and model, preprocessed into the scratch space.
    Real,
    /// Deterministic generated samples and a seeded model of the same architecture; never submittable.
    Synthetic,
}

/// Which engine family runs the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Bake)]
pub enum EngineKind {
    /// This project's GPU engines (cuDNN, cuBLASLt, NVRTC on cudarc).
    Gpu,
    /// The CPU engine (tract), also the accuracy oracle for GPU engines.
    Cpu,
    /// An external OpenAI-compatible serving engine (vLLM, SGLang, TensorRT-LLM serve, Dynamo).
    Serving,
}

/// Which serving engine answers an LLM config's requests (`engine = "serving"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Bake)]
pub enum ServingEngine {
    /// vLLM's OpenAI-compatible server (`vllm serve`).
    Vllm,
    /// SGLang (`python3 -m sglang.launch_server`).
    Sglang,
    /// TensorRT-LLM's `trtllm-serve`.
    TrtllmServe,
    /// NVIDIA Dynamo: an OpenAI-compatible frontend routing to workers.
    Dynamo,
    /// Endpoints something else started (one per node, a router or a Dynamo frontend); `mlperf`
    /// never starts or stops anything.
    External,
    /// This project's stand-in server (`mlperf serve_stand_in`): a test double with configurable
    /// delays, lengths and faults; never submittable.
    StandIn,
}

/// The HTTP API a serving endpoint is driven through: how it takes a prompt of token ids and how
/// its stream gives the output token ids back. Each engine has its way (see README "LLM serving").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Bake)]
pub enum ServingApi {
    /// `POST /v1/completions` with a token-id prompt and `return_token_ids: true`; each chunk's new
    /// ids in `choices[0].token_ids` (vLLM >= 0.10.2, SGLang >= 0.5.23).
    CompletionsTokenIds,
    /// `POST /v1/completions` with a token-id prompt and `detokenize: false`; each chunk's new ids in
    /// `choices[0].token_ids` (TensorRT-LLM's trtllm-serve, which refuses unknown request fields).
    TrtllmCompletions,
    /// SGLang's native `POST /generate` with `input_ids`; `output_ids` with `meta_info.completion_tokens`
    /// saying how many there are so far (any SGLang version).
    SglangGenerate,
    /// llama.cpp's native `POST /completion` with a token-id prompt; one id per chunk in `tokens`,
    /// `tokens_predicted` counting them, `stop: true` on the last.
    LlamaCppCompletion,
    /// `POST /v1/completions` with a token-id prompt and text out (Dynamo): the output ids are the
    /// text re-tokenized with the model's `tokenizer.json`.
    CompletionsText,
}

impl ServingApi {
    /// Whether the API streams text only, so output ids come from re-tokenizing the answer.
    pub const fn streams_text(self) -> bool {
        matches!(self, ServingApi::CompletionsText)
    }
}

impl ServingEngine {
    /// The API the harness uses with a started engine of this kind (None: external endpoints name theirs).
    pub const fn api(self) -> Option<ServingApi> {
        match self {
            ServingEngine::Vllm | ServingEngine::StandIn => Some(ServingApi::CompletionsTokenIds),
            ServingEngine::Sglang => Some(ServingApi::SglangGenerate),
            ServingEngine::TrtllmServe => Some(ServingApi::TrtllmCompletions),
            ServingEngine::Dynamo => Some(ServingApi::CompletionsText),
            ServingEngine::External => None,
        }
    }

    /// Whether `mlperf` starts and stops this engine itself (instance i on `serving_port + i`) rather
    /// than attaching to `llm_server_urls` that something else started.
    pub const fn started_by_harness(self) -> bool {
        !matches!(self, ServingEngine::External)
    }

    /// Whether a started instance runs the model on GPUs of its node (every started engine but the
    /// stand-in, which answers from the CPU).
    pub const fn runs_on_gpus(self) -> bool {
        matches!(self, ServingEngine::Vllm | ServingEngine::Sglang | ServingEngine::TrtllmServe | ServingEngine::Dynamo)
    }
}

/// Names of the enums above as config text, one table so parse and display cannot drift.
macro_rules! text_enum {
    ($t:ty, $($v:ident => $s:literal),* $(,)?) => {
        impl $t {
            pub const NAMES: &'static [&'static str] = &[$($s),*];
            pub const fn name(self) -> &'static str { match self { $(Self::$v => $s),* } }
            pub fn parse(text: &str) -> Option<Self> { match text { $($s => Some(Self::$v),)* _ => None } }
        }
    };
}
text_enum!(DataType, Fp32 => "fp32", Fp16 => "fp16", Bf16 => "bf16", Fp8 => "fp8", Fp4 => "fp4", Int8 => "int8", Int32 => "int32", Int64 => "int64");
text_enum!(InputFormat, Linear => "linear", Chw4 => "chw4", Dhwc8 => "dhwc8", Cdhw32 => "cdhw32");
text_enum!(DatasetSource, Real => "real", Synthetic => "synthetic");
text_enum!(EngineKind, Gpu => "gpu", Cpu => "cpu", Serving => "serving");
text_enum!(
    ServingApi,
    CompletionsTokenIds => "completions-token-ids",
    TrtllmCompletions => "trtllm-completions",
    SglangGenerate => "sglang-generate",
    LlamaCppCompletion => "llama.cpp-completion",
    CompletionsText => "completions-text"
);
text_enum!(ServingEngine, Vllm => "vllm", Sglang => "sglang", TrtllmServe => "trtllm-serve", Dynamo => "dynamo", External => "external", StandIn => "stand-in");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_names_round_trip() {
        for harness in Harness::ALL {
            for accuracy in [AccuracyTarget::K99, AccuracyTarget::K99_9] {
                for power in [PowerSetting::MaxP, PowerSetting::MaxQ] {
                    let w = Workload { harness, accuracy, power };
                    assert_eq!(Workload::from_section_name(&w.section_name()), Some(w), "{w}");
                }
            }
        }
        assert_eq!(Workload::from_config_ver("high_accuracy_triton").map(|w| w.harness), Some(Harness::Triton));
        assert_eq!(Workload::from_section_name("high_accuracy_triton"), None, "sections use the canonical order");
        assert_eq!(Workload::from_config_ver("fast"), None);
        assert_eq!(Workload::default().short(), "cp990");
    }
}
