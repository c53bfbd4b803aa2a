//! The GPU engines' error above the device layer, in cudarc's layering: [`DeviceError`] (a driver,
//! NVRTC, cuDNN or cuBLASLt call, missing libraries), [`GraphError`] (cuDNN's graph API) and
//! [`PlanError`] (a plan file missing, stale or corrupt) come in whole; the rest says which step
//! of importing, calibrating, building or running failed. Each maps to the runtime's
//! [`crate::Error`], whose kind is the exit status.

use super::device::DeviceError;
use super::graph::GraphError;
use cudarc::driver::DriverError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Opening GPU `ordinal` failed.
    #[error("{source} (GPU {ordinal})")]
    OnGpu { ordinal: usize, source: DeviceError },
    /// The step of one layer failed.
    #[error("layer {layer}: {source}")]
    Layer { layer: String, source: Box<GpuError> },
    /// A plan this binary reads but cannot run as it is (corrupt, built incomplete, for another
    /// GPU): the message names the fix.
    #[error("{0}")]
    PlanContent(String),
    /// The ONNX model cannot become a network the GPU runs (import, fusion, quantisation,
    /// lowering, export).
    #[error("{0}")]
    Network(String),
    /// The model file cannot be read.
    #[error("cannot read model {origin}: {source}")]
    ModelUnreadable { origin: String, source: std::io::Error },
    /// The model file is not ONNX.
    #[error("{origin} is not an ONNX model: {source}")]
    NotOnnx { origin: String, source: prost::DecodeError },
    /// An error about model `origin`.
    #[error("{origin}: {source}")]
    InModel { origin: String, source: Box<GpuError> },
    /// The int8 calibration cache is missing, unreadable or corrupt, or cannot be measured.
    #[error("{0}")]
    Calibration(String),
    /// The builder cannot make the plan asked for, or the plan it made fails its check.
    #[error("{0}")]
    Build(String),
    /// This GPU cannot run the engine (too old, too little shared memory).
    #[error("{0}")]
    Unsupported(String),
    /// A batch cannot run (a sample of the wrong size, a launch too large).
    #[error("{0}")]
    Run(String),
    /// A layer's cuDNN algorithm needs more workspace at this batch size than the config allows.
    #[error("layer {layer} needs {need} bytes of cuDNN workspace at batch {batch}, above workspace_size ({limit} bytes); raise workspace_size or rebuild the plan with it")]
    WorkspaceLimit { layer: String, need: usize, batch: usize, limit: usize },
    /// A sample could not be copied into the resident pool.
    #[error("CUDA upload of sample {index}: {source:?}")]
    SampleUpload { index: usize, source: DriverError },
    /// An ONNX initializer or attribute that cannot be read.
    #[error(transparent)]
    Onnx(#[from] crate::engines::onnx_reader::OnnxReadError),
    /// The CPU reference engine failed.
    #[error(transparent)]
    Cpu(#[from] crate::engines::cpu::CpuError),
    /// A plan or cache file could not be written.
    #[error(transparent)]
    Write(#[from] crate::fsutil::FsError),
    /// A step outside the GPU engines failed with its own message.
    #[error("{0}")]
    Other(String),
}

impl GpuError {
    /// `self` as the error of layer `layer`.
    pub fn in_layer(self, layer: &str) -> GpuError {
        GpuError::Layer { layer: layer.to_string(), source: Box::new(self) }
    }

    /// `self` as an error about model `origin`.
    pub fn in_model(self, origin: impl std::fmt::Display) -> GpuError {
        GpuError::InModel { origin: origin.to_string(), source: Box::new(self) }
    }
}

/// The kinds the runtime's boundaries gave these errors while they were strings: a plan that is
/// missing, stale or corrupt is [`crate::Error::Data`]; the rest is [`crate::Error::Other`]
/// (boundaries that know better, such as opening a plan for a run, say so themselves).
impl From<GpuError> for crate::Error {
    fn from(e: GpuError) -> crate::Error {
        match e {
            GpuError::Plan(p) => p.into(),
            other => crate::Error::Other(other.to_string()),
        }
    }
}

impl From<DeviceError> for crate::Error {
    fn from(e: DeviceError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

/// Why a plan file cannot be used: what is wrong with its bytes, and what a run that needs it is
/// told (missing, stale or corrupt, with the command that rebuilds it): [`crate::Error::Data`].
/// [`PlanError::Io`] (hashing the model for a key) is [`crate::Error::Other`], as it always was
/// where a plan is built; opening one for a run calls it Data itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    #[error("not an engine plan (bad magic)")]
    BadMagic,
    #[error("plan format {found}, this binary reads {reads}")]
    FormatVersion { found: u32, reads: u32 },
    #[error("shorter than a plan header")]
    ShortHeader,
    #[error("header length {0} is implausible")]
    ImplausibleHeader(usize),
    #[error("header runs past the end of the file")]
    HeaderPastEnd,
    #[error("unreadable header: {0}")]
    UnreadableHeader(#[source] serde_json::Error),
    #[error("weights are {found} bytes, the header says {expected} (truncated file?)")]
    Truncated { found: usize, expected: usize },
    #[error("weights checksum {found} does not match the header's {expected}")]
    Checksum { found: String, expected: String },
    /// A file (a plan, or the model a key hashes) cannot be opened or read.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot read engine plan {}: {source}", path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    /// A plan whose bytes are wrong, found while loading it.
    #[error("engine plan {} is corrupt: {source}; rebuild it with `mlperf generate_engines`", path.display())]
    Corrupt { path: PathBuf, source: Box<PlanError> },
    #[error("no engine plan {}: run `mlperf generate_engines` with the same selection first", path.display())]
    Missing { path: PathBuf },
    #[error("engine plan {} is stale ({}): run `mlperf generate_engines` with the same selection first", path.display(), differences.join("; "))]
    Stale { path: PathBuf, differences: Vec<String> },
    /// A plan whose key cannot be read, found before a run.
    #[error("engine plan {} is corrupt ({reason}): run `mlperf generate_engines` with the same selection first", path.display())]
    CorruptKey { path: PathBuf, reason: String },
}

impl From<PlanError> for crate::Error {
    fn from(e: PlanError) -> crate::Error {
        match e {
            PlanError::Io { .. } => crate::Error::Other(e.to_string()),
            _ => crate::Error::Data(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit;

    #[test]
    fn each_error_keeps_its_kind_and_its_old_text() {
        let missing = PlanError::Missing { path: "p.plan".into() };
        assert_eq!(missing.to_string(), "no engine plan p.plan: run `mlperf generate_engines` with the same selection first");
        assert_eq!(crate::Error::from(GpuError::from(missing)).exit_code(), exit::DATA);
        let corrupt = PlanError::Corrupt { path: "p.plan".into(), source: Box::new(PlanError::BadMagic) };
        assert_eq!(corrupt.to_string(), "engine plan p.plan is corrupt: not an engine plan (bad magic); rebuild it with `mlperf generate_engines`");
        assert_eq!(crate::Error::from(corrupt).exit_code(), exit::DATA);
        let io = PlanError::Io { path: "m.onnx".into(), source: std::io::Error::other("gone") };
        assert_eq!(crate::Error::from(io).exit_code(), exit::OTHER);

        let libraries = DeviceError::LibrariesMissing { missing: vec!["cuDNN 9 (libcudnn.so.9)", "NVRTC (libnvrtc.so)"] };
        assert!(libraries.to_string().starts_with("the GPU engine cannot load cuDNN 9 (libcudnn.so.9), NVRTC (libnvrtc.so): install them"), "{libraries}");
        assert_eq!(crate::Error::from(libraries).exit_code(), exit::OTHER);

        let layer = GpuError::PlanContent("the plan has no algorithm (build incomplete)".into()).in_layer("conv1");
        assert_eq!(layer.to_string(), "layer conv1: the plan has no algorithm (build incomplete)");
        assert_eq!(crate::Error::from(layer).exit_code(), exit::OTHER);
        let model = GpuError::Network("the ONNX model has no graph".into()).in_model("m.onnx");
        assert_eq!(model.to_string(), "m.onnx: the ONNX model has no graph");
        assert_eq!(DeviceError::TooFewGpus { devices: 8, present: 1 }.to_string(), "the system has 8 GPUs but this machine shows 1");
    }
}
