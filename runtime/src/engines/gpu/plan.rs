//! The serialized engine ("plan"): the fused network lowered for one GPU, batch size and
//! precision, with the cuDNN algorithm chosen for each convolution and the weights already in the
//! GPU's layout, plus what it was built from, so a stale plan is never run.
//!
//! File format (little-endian):
//! ```text
//! b"MLPGPLAN" | format version u32 | header length u64 | header (JSON) | weights blob
//! ```
//! The header's `key` says what the plan was built from; `blob_sha256` guards the weights. Reading
//! the header alone is enough to decide whether a plan is up to date ([`check`]).

pub use super::error::PlanError;
use super::graph::plan::SerializedPlan;
use super::network::{SpaceToDepth, WeightScaling};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

const MAGIC: &[u8; 8] = b"MLPGPLAN";
/// Bumped whenever the format or the builder's output changes: older plans are then stale.
pub const FORMAT_VERSION: u32 = 8;

/// Everything a plan depends on. Two keys differ exactly when a plan must be rebuilt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanKey {
    pub format_version: u32,
    /// sha256 of the ONNX file.
    pub model_sha256: String,
    pub gpu_name: String,
    /// e.g. "9.0".
    pub compute_capability: String,
    pub cuda_driver_version: i32,
    pub cudnn_version: usize,
    /// 0 for engines that do not use cuBLASLt (plans from before it was keyed have none).
    #[serde(default)]
    pub cublaslt_version: usize,
    pub batch_size: usize,
    pub precision: crate::engines::ElementType,
    /// Sample element type and layout as the QSL delivers them, e.g. "int8 NCHW 3x224x224 scale 1".
    pub input: String,
    pub workspace_bytes: u64,
    /// sha256 of the calibration cache an int8 plan was quantised with (empty for fp16 plans).
    pub calibration_sha256: String,
}

impl PlanKey {
    /// What differs from `other`, one line per field (empty when equal).
    pub fn differences(&self, other: &PlanKey) -> Vec<String> {
        let a = serde_json::to_value(self).expect("keys serialize");
        let b = serde_json::to_value(other).expect("keys serialize");
        let (a, b) = (a.as_object().expect("object"), b.as_object().expect("object"));
        a.iter().filter(|(k, v)| b.get(*k) != Some(v)).map(|(k, v)| format!("{k}: plan has {v}, needed {}", b[k])).collect()
    }
}

/// One layer as the GPU runs it. Tensors are NHWC, fp16 or (between `Quantize` and `Dequantize`)
/// int8; weights are KRSC (output channel, row, column, input channel) at `weight_offset` bytes
/// into the blob, in the layer's element type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedLayer {
    pub name: String,
    pub kind: LayerKind,
    pub input: usize,
    pub output: usize,
    /// Input and output per-sample shapes (channels, height, width).
    pub input_shape: (usize, usize, usize),
    pub output_shape: (usize, usize, usize),
}

impl PlannedLayer {
    /// Whether our 1x1 kernel takes this int8 convolution: one tap, no padding, and channel
    /// counts its tiles divide.
    pub fn fits_pointwise(&self) -> bool {
        let LayerKind::Conv { kernel: 1, pad: 0, epilogue_offset: Some(_), .. } = self.kind else { return false };
        super::pointwise::takes(self.input_shape.0, self.output_shape.0)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LayerKind {
    Conv {
        kernel: usize,
        stride: usize,
        pad: usize,
        relu: bool,
        residual: Option<usize>,
        weight_offset: usize,
        /// fp16 biases for fp16 layers; f32 biases in output units (divided by the output's
        /// scale) for int8 layers.
        bias_offset: usize,
        /// cuDNN's alpha1 and alpha2: `y = act(scale * conv(x, w) + residual_scale * z + bias)`.
        /// 1 and 1 (0 without a residual) in fp16; ratios of the tensors' scales in int8.
        scale: f32,
        residual_scale: f32,
        /// Int32 for int8 layers; Fp32 or Fp16 for fp16 layers, chosen with the algorithm by timing.
        accumulator: Accumulator,
        /// cuDNN forward algorithm (cudnnConvolutionFwdAlgo_t), chosen by timing on the GPU.
        algorithm: i32,
        workspace_bytes: usize,
        /// Measured time of the chosen algorithm at the plan's batch size, microseconds.
        measured_us: f32,
        /// Int8 layers: f32 `[scale; K]`, `[bias; K]` and, with a residual, `[ratio; K]` at this
        /// offset, the cuDNN graph's epilogue (`graph::spec::conv_scale_bias_residual_relu`; the
        /// sum runs in the residual's units, `ratio` brings it to the output's).
        epilogue_offset: Option<usize>,
        /// Int8 weights scaled per output channel: only a runner other than the legacy call runs
        /// the layer.
        per_channel: bool,
        /// What runs the layer, chosen by timing.
        runner: ConvRunner,
        /// `Some(scale)`: an fp16 layer whose output is int8 on this scale (a fused Quantize); only
        /// our stem kernel runs it.
        quantized_output: Option<f32>,
    },
    MaxPool {
        kernel: usize,
        stride: usize,
        pad: usize,
        /// Reads int8 (on `int8_output`'s scale, which must be set): our kernel pools int8 to int8.
        int8_input: bool,
        /// `Some(scale)`: our kernel pools fp16 and writes int8 on this scale (a fused Quantize);
        /// `None`: cuDNN pools fp16 to fp16.
        int8_output: Option<f32>,
    },
    GlobalAveragePool {
        /// `Some(scale)`: our kernel pools int8 on this scale to fp16 (a fused Dequantize); `None`:
        /// cuDNN pools fp16 to fp16.
        int8_input: Option<f32>,
    },
    /// fp16 to int8, `q = round(x / scale)` saturated.
    Quantize { scale: f32 },
    /// int8 to fp16, `x = q * scale`.
    Dequantize { scale: f32 },
}

/// What runs a convolution: for int8 layers, whichever of the three timing found fastest at the
/// plan's batch size; fp16 layers always run the legacy call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ConvRunner {
    /// cuDNN's legacy fused call with the layer's `algorithm` (one weight scale per layer).
    Legacy,
    /// This cuDNN graph plan (per-channel weight scales, the epilogue fused).
    Graph(SerializedPlan),
    /// Our int8 1x1 kernel (`pointwise.cu`; per-channel weight scales, the graph's epilogue).
    Pointwise,
    /// Our stem kernel (`stem.cu`; fp16 weights, int8 output).
    Stem,
}

impl ConvRunner {
    /// The weight scaling the runner takes.
    pub fn weight_scaling(&self) -> WeightScaling {
        match self {
            ConvRunner::Legacy => WeightScaling::PerTensor,
            ConvRunner::Graph(_) | ConvRunner::Pointwise | ConvRunner::Stem => WeightScaling::PerChannel,
        }
    }
}

/// What a convolution accumulates its products in (cuDNN's compute type). fp16 sums run up to
/// 2x faster on some layers (ResNet50's layer1 1x1 convolutions with a residual, on an H200) and
/// lose precision over long sums; the builder keeps a plan with fp16 sums only if it still agrees
/// with the CPU engine. Int8 layers always sum in int32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Accumulator {
    Fp32,
    Fp16,
    Int32,
}

/// The plan's header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanHeader {
    pub key: PlanKey,
    pub model_path: String,
    pub layers: Vec<PlannedLayer>,
    /// Buffer of each value and elements per sample of each buffer (see `network::assign_buffers`).
    pub buffer_of: Vec<usize>,
    pub buffer_elements: Vec<usize>,
    /// Logits value, its padded channel count and the real class count.
    pub output: usize,
    pub classes: usize,
    /// Added to the top-1 index (-1 for 1001-class models whose class 0 is "background").
    pub class_offset: i32,
    /// How the input conversion lays the image out for the first layer.
    pub input_layout: SpaceToDepth,
    pub blob_len: usize,
    pub blob_sha256: String,
    /// What the builder's check against the CPU engine found (empty if it was skipped).
    pub verification: String,
}

/// What the file framing needs of a plan's header (ResNet50's [`PlanHeader`], BERT's).
pub trait Header: Serialize + DeserializeOwned {
    fn blob_len(&self) -> usize;
    fn blob_sha256(&self) -> &str;
}

impl Header for PlanHeader {
    fn blob_len(&self) -> usize {
        self.blob_len
    }
    fn blob_sha256(&self) -> &str {
        &self.blob_sha256
    }
}

#[derive(Debug)]
pub struct Plan<H = PlanHeader> {
    pub header: H,
    pub blob: Vec<u8>,
}

/// Whether a plan on disk can be run for `wanted`.
#[derive(Debug, PartialEq)]
pub enum PlanStatus {
    Missing,
    Fresh,
    Stale(Vec<String>),
    Corrupt(String),
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of a file, streamed.
pub fn file_sha256(path: &Path) -> Result<String, PlanError> {
    use std::io::Read;
    let io = |source| PlanError::Io { path: path.to_path_buf(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

impl<H: Header> Plan<H> {
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = serde_json::to_vec_pretty(&self.header).expect("headers serialize");
        let mut out = Vec::with_capacity(20 + header.len() + self.blob.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&self.blob);
        out
    }

    /// Parses and verifies a whole plan (header and weights).
    pub fn from_bytes(bytes: &[u8]) -> Result<Plan<H>, PlanError> {
        let (header, start) = parse_header::<H>(bytes)?;
        let blob = &bytes[start..];
        if blob.len() != header.blob_len() {
            return Err(PlanError::Truncated { found: blob.len(), expected: header.blob_len() });
        }
        let digest = sha256_hex(blob);
        if digest != header.blob_sha256() {
            return Err(PlanError::Checksum { found: digest, expected: header.blob_sha256().to_string() });
        }
        Ok(Plan { header, blob: blob.to_vec() })
    }

    pub fn load(path: &Path) -> Result<Plan<H>, PlanError> {
        let bytes = std::fs::read(path).map_err(|source| PlanError::Unreadable { path: path.to_path_buf(), source })?;
        Plan::from_bytes(&bytes).map_err(|e| PlanError::Corrupt { path: path.to_path_buf(), source: Box::new(e) })
    }
}

fn parse_header<H: DeserializeOwned>(bytes: &[u8]) -> Result<(H, usize), PlanError> {
    if bytes.len() < 20 || &bytes[..8] != MAGIC {
        return Err(PlanError::BadMagic);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(PlanError::FormatVersion { found: version, reads: FORMAT_VERSION });
    }
    let len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes")) as usize;
    let end = 20usize.checked_add(len).filter(|&e| e <= bytes.len()).ok_or(PlanError::HeaderPastEnd)?;
    let header = serde_json::from_slice(&bytes[20..end]).map_err(PlanError::UnreadableHeader)?;
    Ok((header, end))
}

/// The part of any plan's header that says what it was built from.
#[derive(Deserialize)]
struct Keyed {
    key: PlanKey,
}

/// Reads only a plan's key (cheap: no weights are hashed), whatever the engine's header.
fn read_key(path: &Path) -> Result<PlanKey, PlanError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|source| PlanError::Io { path: path.to_path_buf(), source })?;
    let mut prefix = [0u8; 20];
    file.read_exact(&mut prefix).map_err(|_| PlanError::ShortHeader)?;
    let len = u64::from_le_bytes(prefix[12..20].try_into().expect("8 bytes")) as usize;
    if len > 64 << 20 {
        return Err(PlanError::ImplausibleHeader(len));
    }
    let mut bytes = prefix.to_vec();
    bytes.resize(20 + len, 0);
    file.read_exact(&mut bytes[20..]).map_err(|_| PlanError::HeaderPastEnd)?;
    parse_header::<Keyed>(&bytes).map(|(h, _)| h.key)
}

/// Compares the plan at `path` with what is wanted now.
pub fn check(path: &Path, wanted: &PlanKey) -> PlanStatus {
    if !path.exists() {
        return PlanStatus::Missing;
    }
    match read_key(path) {
        Err(e) => PlanStatus::Corrupt(e.to_string()),
        Ok(key) => match key.differences(wanted) {
            d if d.is_empty() => PlanStatus::Fresh,
            d => PlanStatus::Stale(d),
        },
    }
}

/// Refuses a plan that is not there, not what the run wants, or unreadable, naming the command
/// that rebuilds it: runs never build, and never run a stale plan.
pub fn require_fresh(path: &Path, wanted: &PlanKey) -> Result<(), PlanError> {
    let path = path.to_path_buf();
    match check(&path, wanted) {
        PlanStatus::Fresh => Ok(()),
        PlanStatus::Missing => Err(PlanError::Missing { path }),
        PlanStatus::Stale(differences) => Err(PlanError::Stale { path, differences }),
        PlanStatus::Corrupt(reason) => Err(PlanError::CorruptKey { path, reason }),
    }
}

/// NVIDIA's engine path: `build/engines/<system>/<Scenario>/resnet50/gpu-resnet50-<precision>-b<batch>.<workload>.plan`.
pub fn engine_path(root: &Path, system: &str, scenario: &str, benchmark: &str, precision: &str, batch: usize, workload: &str) -> std::path::PathBuf {
    root.join(system).join(scenario).join(benchmark).join(format!("gpu-{benchmark}-{precision}-b{batch}.{workload}.plan"))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::engines::gpu) fn key() -> PlanKey {
        PlanKey {
            format_version: FORMAT_VERSION,
            model_sha256: "ab".repeat(32),
            gpu_name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: "9.0".into(),
            cuda_driver_version: 13000,
            cudnn_version: 91400,
            cublaslt_version: 0,
            batch_size: 256,
            precision: crate::engines::ElementType::F16,
            input: "int8 NCHW 3x224x224 scale 1".into(),
            workspace_bytes: 1 << 30,
            calibration_sha256: String::new(),
        }
    }

    fn plan() -> Plan {
        let blob: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let header = PlanHeader {
            key: key(),
            model_path: "models/ResNet50/resnet50_v1.onnx".into(),
            layers: vec![PlannedLayer {
                name: "conv1".into(),
                kind: LayerKind::Conv {
                    kernel: 7,
                    stride: 2,
                    pad: 3,
                    relu: true,
                    residual: None,
                    weight_offset: 0,
                    bias_offset: 900,
                    scale: 1.0,
                    residual_scale: 0.0,
                    accumulator: Accumulator::Fp16,
                    algorithm: 1,
                    workspace_bytes: 4096,
                    measured_us: 12.5,
                    epilogue_offset: None,
                    per_channel: false,
                    runner: ConvRunner::Legacy,
                    quantized_output: None,
                },
                input: 0,
                output: 1,
                input_shape: (8, 224, 224),
                output_shape: (64, 112, 112),
            }],
            buffer_of: vec![0, 1],
            buffer_elements: vec![8 * 224 * 224, 64 * 112 * 112],
            output: 1,
            classes: 1000,
            class_offset: 0,
            input_layout: SpaceToDepth { block: 2, offset: 4 },
            blob_len: blob.len(),
            blob_sha256: sha256_hex(&blob),
            verification: String::new(),
        };
        Plan { header, blob }
    }

    #[test]
    fn plans_round_trip_and_reject_corruption() {
        let p = plan();
        let bytes = p.to_bytes();
        let back: Plan = Plan::from_bytes(&bytes).unwrap();
        assert_eq!(back.header, p.header);
        assert_eq!(back.blob, p.blob);

        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(Plan::<PlanHeader>::from_bytes(&flipped).unwrap_err().to_string().contains("checksum"));
        assert!(Plan::<PlanHeader>::from_bytes(&bytes[..bytes.len() - 10]).unwrap_err().to_string().contains("truncated"));
        assert!(Plan::<PlanHeader>::from_bytes(b"not a plan at all, really").unwrap_err().to_string().contains("magic"));
        let mut future = bytes.clone();
        future[8] = 99;
        assert!(Plan::<PlanHeader>::from_bytes(&future).unwrap_err().to_string().contains("plan format 99"));
    }

    #[test]
    fn check_tells_fresh_stale_missing_and_corrupt_apart() {
        let dir = tempdir();
        let path = dir.join("p.plan");
        assert_eq!(check(&path, &key()), PlanStatus::Missing);
        std::fs::write(&path, plan().to_bytes()).unwrap();
        assert_eq!(check(&path, &key()), PlanStatus::Fresh);

        let other_gpu = PlanKey { gpu_name: "NVIDIA H200".into(), batch_size: 2048, ..key() };
        let PlanStatus::Stale(diffs) = check(&path, &other_gpu) else { panic!("must be stale") };
        assert_eq!(diffs.len(), 2, "{diffs:?}");
        assert!(diffs.iter().any(|d| d.starts_with("gpu_name:")) && diffs.iter().any(|d| d.starts_with("batch_size: plan has 256, needed 2048")));

        let new_model = PlanKey { model_sha256: "cd".repeat(32), ..key() };
        assert!(matches!(check(&path, &new_model), PlanStatus::Stale(d) if d[0].starts_with("model_sha256")));

        std::fs::write(&path, b"MLPGPLAN\x01\0\0\0\xff\xff\xff\xff\0\0\0\0").unwrap();
        assert!(matches!(check(&path, &key()), PlanStatus::Corrupt(_)));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn runs_refuse_missing_stale_and_corrupt_plans_naming_the_rebuild() {
        let dir = tempdir().join("refuse");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.plan");
        let e = require_fresh(&path, &key()).unwrap_err().to_string();
        assert!(e.starts_with(&format!("no engine plan {}", path.display())) && e.ends_with("run `mlperf generate_engines` with the same selection first"), "{e}");
        std::fs::write(&path, plan().to_bytes()).unwrap();
        assert!(require_fresh(&path, &key()).is_ok());
        let int8 = PlanKey { precision: crate::engines::ElementType::I8, calibration_sha256: "ef".repeat(32), ..key() };
        let e = require_fresh(&path, &int8).unwrap_err().to_string();
        assert!(
            e.contains("is stale (")
                && e.contains("precision: plan has \"fp16\", needed \"int8\"")
                && e.contains("calibration_sha256: plan has \"\"")
                && e.contains("generate_engines"),
            "{e}"
        );
        std::fs::write(&path, b"not a plan").unwrap();
        assert!(require_fresh(&path, &key()).unwrap_err().to_string().contains("is corrupt"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn engine_paths_follow_nvidia() {
        let p = engine_path(Path::new("build/engines"), "H200-SXM-141GBx1", "Offline", "resnet50", "fp16", 2048, "default");
        assert_eq!(p, Path::new("build/engines/H200-SXM-141GBx1/Offline/resnet50/gpu-resnet50-fp16-b2048.default.plan"));
    }

    fn tempdir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mlperf-plan-test-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
