//! The benchmark catalog: what a benchmark *is*, independent of any round (rounds/ says which round
//! has it, under which names, with which limits).

use crate::types::DataType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchmarkClass {
    Vision,
    Language,
    /// Text-generation LLMs served through an OpenAI-compatible engine; token latencies apply.
    Llm,
    Recommendation,
    Diffusion,
    Speech,
    Graph,
    Medical,
}

#[derive(Debug, Clone, Copy)]
pub struct BenchmarkInfo {
    /// Our id (NVIDIA's `Benchmark` name): `resnet50`, `llama3.1-8b`, ...
    pub id: &'static str,
    /// Other spellings accepted on the command line (`resnet`, `sdxl`, `llama3_1-8b`).
    pub aliases: &'static [&'static str],
    pub class: BenchmarkClass,
    /// Engine components `gpu_batch_size` may name.
    pub components: &'static [&'static str],
    /// Served by the LWIS-style batching harness (deque limit, per-batch completion).
    pub lwis: bool,
    /// measurements.json: the MLCommons-provided weights the engine starts from.
    pub starting_weights: &'static str,
    /// measurements.json: what was done to the weights, given the engine precision.
    pub weight_transformations: fn(DataType) -> &'static str,
}

fn quantized_or_none(precision: DataType) -> &'static str {
    match precision {
        DataType::Fp32 => "none",
        DataType::Fp16 | DataType::Bf16 => "affine fusion, fp16 conversion",
        _ => "quantization, affine fusion",
    }
}

fn llm_transformations(precision: DataType) -> &'static str {
    match precision {
        DataType::Fp16 | DataType::Bf16 | DataType::Fp32 => "none",
        _ => "quantization",
    }
}

fn untransformed(_: DataType) -> &'static str {
    "none"
}

const LLM_WEIGHTS: &str = "Original Huggingface model weights";

macro_rules! bench {
    ($id:literal, [$($alias:literal),*], $class:ident, [$($comp:literal),+], $lwis:literal, $weights:expr, $tf:ident) => {
        BenchmarkInfo {
            id: $id,
            aliases: &[$($alias),*],
            class: BenchmarkClass::$class,
            components: &[$($comp),+],
            lwis: $lwis,
            starting_weights: $weights,
            weight_transformations: $tf,
        }
    };
}

pub const BENCHMARKS: &[BenchmarkInfo] = &[
    bench!("resnet50", ["resnet"], Vision, ["resnet50"], true, "resnet50_v1.onnx", quantized_or_none),
    bench!("retinanet", [], Vision, ["retinanet"], true, "retinanet_model_10.pth", quantized_or_none),
    bench!("bert", ["bert-99", "bert-99.9"], Language, ["bert"], false, "bert_large_v1_1_fake_quant.onnx", quantized_or_none),
    bench!("3d-unet", ["3d-unet-99", "3d-unet-99.9"], Medical, ["3d-unet"], true, "224_224_160_dyanmic_bs.onnx", quantized_or_none),
    bench!("dlrm-v2", ["dlrm_v2", "dlrmv2"], Recommendation, ["dlrm-v2"], false, "model_weights", quantized_or_none),
    // In no shipped round (v5.0 was its last); kept so that its configs get a clear C0302.
    bench!(
        "gptj",
        ["gpt-j", "gptj-99", "gptj-99.9"],
        Llm,
        ["gptj"],
        false,
        "pytorch_model-00001-of-00003.bin, pytorch_model-00002-of-00003.bin, pytorch_model-00003-of-00003.bin",
        llm_transformations
    ),
    // The seed documents' `llama2-70b-interactive` is the Interactive scenario of llama2-70b in both
    // shipped rounds (LoadGen model `llama2-70b-interactive`, results dir `llama2-70b-99.9/Interactive`).
    bench!("llama2-70b", ["llama2-70b-99", "llama2-70b-99.9", "llama2-70b-interactive"], Llm, ["llama2-70b"], false, LLM_WEIGHTS, llm_transformations),
    bench!("stable-diffusion-xl", ["sdxl"], Diffusion, ["clip1", "clip2", "unet", "vae"], false, "Huggingface model weights hosted by MLCommons", quantized_or_none),
    bench!("mixtral-8x7b", ["moe", "mixtral"], Llm, ["mixtral-8x7b"], false, LLM_WEIGHTS, llm_transformations),
    bench!("llama3.1-405b", ["llama3_1-405b"], Llm, ["llama3.1-405b"], false, LLM_WEIGHTS, llm_transformations),
    bench!("llama3.1-8b", ["llama3_1-8b"], Llm, ["llama3.1-8b"], false, LLM_WEIGHTS, llm_transformations),
    // The edge variant (the CNN/DailyMail subset of 5,000) has its own LoadGen model and checker name.
    bench!("llama3.1-8b-edge", ["llama3_1-8b-edge"], Llm, ["llama3.1-8b-edge"], false, LLM_WEIGHTS, llm_transformations),
    bench!("gpt-oss-120b", ["gpt-oss", "gptoss"], Llm, ["gpt-oss-120b"], false, LLM_WEIGHTS, llm_transformations),
    bench!("deepseek-r1", ["dsr1"], Llm, ["deepseek-r1"], false, LLM_WEIGHTS, llm_transformations),
    // A vision-language model served over an OpenAI-compatible chat API (images and text in, JSON text out).
    bench!(
        "qwen3-vl-235b-a22b",
        ["qwen3-vl", "qwen3vl"],
        Llm,
        ["qwen3-vl-235b-a22b"],
        false,
        "Original Huggingface model weights (Qwen/Qwen3-VL-235B-A22B-Instruct at 710c1386)",
        llm_transformations
    ),
    bench!("whisper", [], Speech, ["encoder", "decoder"], false, "Original Huggingface model weights (openai/whisper-large-v3)", llm_transformations),
    // YOLOv11-L object detection (edge, new in v6.1); weights as ultralytics publishes them.
    bench!("yolo", ["yolo-95", "yolo-99"], Vision, ["yolo"], false, "yolo11l.pt (ultralytics v8.3 release)", quantized_or_none),
    bench!("rgat", [], Graph, ["rgat"], false, "RGAT.pt hosted by MLCommons", untransformed),
];

/// Looks a benchmark up by id or alias (case-insensitive).
pub fn find(name: &str) -> Option<&'static BenchmarkInfo> {
    let lower = name.to_ascii_lowercase();
    BENCHMARKS.iter().find(|b| b.id == lower || b.aliases.contains(&lower.as_str()))
}

impl BenchmarkClass {
    /// Answered by a serving engine over its OpenAI-compatible HTTP API, with token latencies: the
    /// LLMs and speech-to-text (whisper's `/v1/audio/transcriptions`).
    pub fn served(self) -> bool {
        matches!(self, BenchmarkClass::Llm | BenchmarkClass::Speech)
    }
}

/// Whether a field's `benchmarks` list (ids or the classes `llm`, `lwis`) covers this benchmark.
/// `llm` is every benchmark a serving engine answers ([`BenchmarkClass::served`]).
pub fn applies(list: &[&str], bench: &BenchmarkInfo) -> bool {
    list.is_empty()
        || list.iter().any(|entry| match *entry {
            "llm" => bench.class.served(),
            "lwis" => bench.lwis,
            id => id == bench.id,
        })
}
