//! The engine boundary: what an engine is given (samples, their shape, layout and element type)
//! and what it offers (`Engine::infer`). The harness, the benchmarks and `mlperf bench` drive
//! engines only through these types; engines import nothing above this module.

use serde::{Deserialize, Serialize};
use std::ops::{Deref, Range};
use std::sync::Arc;

/// The bytes of one loaded sample: a range of a shared buffer (a whole contiguous tensor file, or
/// one sample's own buffer), so handing a sample to an engine never copies it.
#[derive(Clone, Debug)]
pub struct Sample {
    buf: Arc<[u8]>,
    range: Range<usize>,
}

impl Sample {
    pub fn new(buf: Arc<[u8]>, range: Range<usize>) -> Sample {
        assert!(range.end <= buf.len(), "sample range inside its buffer");
        Sample { buf, range }
    }

    pub fn whole(buf: Arc<[u8]>) -> Sample {
        let len = buf.len();
        Sample { buf, range: 0..len }
    }

    pub fn empty() -> Sample {
        Sample::whole(Arc::from(Vec::new()))
    }
}

impl Deref for Sample {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

/// Sample data for engines: the sample library's view of loaded samples.
pub trait SampleSource: Send + Sync {
    /// One loaded sample (its preprocessed tensor). Only samples LoadGen asked to load are valid.
    fn sample(&self, index: usize) -> Sample;
}

/// Samples held in memory, one buffer each (tests).
#[cfg(test)]
impl SampleSource for Vec<Vec<u8>> {
    fn sample(&self, index: usize) -> Sample {
        Sample::whole(Arc::from(self[index].as_slice()))
    }
}

/// A model on one device. `infer` fills `outputs` with one response per sample, in order.
pub trait Engine: Send + Sync {
    fn name(&self) -> &str;
    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), EngineError>;
}

/// Why an engine could not answer a batch: the engine's own error (the CPU engine's, the GPU
/// engine's, a family's model), whose message names the sample or the batch. Kept whole (boxed,
/// so this boundary imports none of the engines above it); a run whose engine fails is FAILED, so
/// where it reaches the runtime's error it is [`crate::Error::EngineFailed`]. The batcher keeps its
/// text for the run's FAILED record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error(transparent)]
    Engine(Box<dyn std::error::Error + Send + Sync>),
}

impl EngineError {
    /// An engine's own error.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> EngineError {
        EngineError::Engine(Box::new(e))
    }
}

impl From<EngineError> for crate::Error {
    fn from(e: EngineError) -> crate::Error {
        crate::Error::EngineFailed(e.to_string())
    }
}

/// An image input spec no engine can feed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputSpecError {
    #[error("input spec has a zero dimension: batch {batch}, sample {sample}")]
    ZeroDimension { batch: usize, sample: String },
    #[error("image samples are fp32, fp16 or int8, not int32")]
    Int32,
    #[error("int8 input scale must be a positive finite number, not {0}")]
    Int8Scale(f32),
}

/// Element type of a tensor: of samples as the engines read them, and of the tensors, weights and
/// sums inside a GPU plan (where it is also the plan's precision). Written as `fp32`, `fp16`,
/// `int8`, `int32`, the config's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElementType {
    #[serde(rename = "fp32")]
    F32,
    #[serde(rename = "fp16")]
    F16,
    #[serde(rename = "int8")]
    I8,
    #[serde(rename = "int32")]
    I32,
}

impl ElementType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            ElementType::F32 | ElementType::I32 => 4,
            ElementType::F16 => 2,
            ElementType::I8 => 1,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            ElementType::F32 => "fp32",
            ElementType::F16 => "fp16",
            ElementType::I8 => "int8",
            ElementType::I32 => "int32",
        }
    }

    /// The config's data type, where an engine can hold it.
    pub fn from_config(dtype: mlperf_config::DataType) -> Option<ElementType> {
        use mlperf_config::DataType;
        match dtype {
            DataType::Fp32 => Some(ElementType::F32),
            DataType::Fp16 => Some(ElementType::F16),
            DataType::Int8 => Some(ElementType::I8),
            DataType::Int32 => Some(ElementType::I32),
            DataType::Bf16 | DataType::Fp8 | DataType::Fp4 | DataType::Int64 => None,
        }
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Memory layout of one image sample (and of a model's image input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Channels, then rows, then columns (ONNX's convention; MLPerf's preprocessed ImageNet).
    Nchw,
    /// Rows, then columns, then channels ("channels last").
    Nhwc,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Nchw => "NCHW",
            Layout::Nhwc => "NHWC",
        }
    }
}

/// What an image engine is fed: the batch size to optimise for and the shape, layout and element
/// type of one sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputSpec {
    /// The batch size the engine is optimised for (the config's `gpu_batch_size`).
    pub batch_size: usize,
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    /// Layout of the sample bytes (a model's own layout may differ; engines convert).
    pub layout: Layout,
    /// fp32, fp16 or int8 (little-endian).
    pub element: ElementType,
    /// The real value of an int8 element is `q * scale` (NVIDIA's int8 ImageNet tensors: 1);
    /// 1 for the float types.
    pub scale: f32,
}

impl InputSpec {
    /// Elements in one sample.
    pub fn sample_elements(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// Bytes in one sample.
    pub fn sample_bytes(&self) -> usize {
        self.sample_elements() * self.element.size()
    }

    /// The element type, with the scale of int8 samples.
    pub fn describe_element(&self) -> String {
        match self.element {
            ElementType::I8 => format!("int8 (scale {})", self.scale),
            other => other.name().to_string(),
        }
    }

    pub fn describe(&self) -> String {
        let (c, h, w) = (self.channels, self.height, self.width);
        match self.layout {
            Layout::Nchw => format!("{c}x{h}x{w} (CHW) {}", self.describe_element()),
            Layout::Nhwc => format!("{h}x{w}x{c} (HWC) {}", self.describe_element()),
        }
    }

    pub fn validate(&self) -> Result<(), InputSpecError> {
        if self.batch_size == 0 || self.channels == 0 || self.height == 0 || self.width == 0 {
            return Err(InputSpecError::ZeroDimension { batch: self.batch_size, sample: self.describe() });
        }
        match self.element {
            ElementType::I32 => Err(InputSpecError::Int32),
            ElementType::I8 if !(self.scale.is_finite() && self.scale > 0.0) => Err(InputSpecError::Int8Scale(self.scale)),
            _ => Ok(()),
        }
    }

    /// Sample values in this spec's element type (int8: divided by the scale, rounded and
    /// saturated), as a sample library holds them.
    pub fn encode(&self, values: &[f32]) -> Vec<u8> {
        match self.element {
            ElementType::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ElementType::F16 => values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect(),
            ElementType::I8 => values.iter().map(|v| (v / self.scale).round().clamp(-128.0, 127.0) as i8 as u8).collect(),
            ElementType::I32 => unreachable!("validated: image samples are never int32"),
        }
    }

    /// Little-endian sample bytes to f32 values (the inverse of [`InputSpec::encode`] up to rounding).
    pub fn decode_into(&self, bytes: &[u8], out: &mut [f32]) {
        match self.element {
            ElementType::F32 => {
                for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                    *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            ElementType::F16 => {
                for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                    *o = half::f16::from_le_bytes([b[0], b[1]]).to_f32();
                }
            }
            ElementType::I8 => {
                for (o, &b) in out.iter_mut().zip(bytes) {
                    *o = b as i8 as f32 * self.scale;
                }
            }
            ElementType::I32 => unreachable!("validated: image samples are never int32"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(element: ElementType, scale: f32) -> InputSpec {
        InputSpec { batch_size: 1, channels: 1, height: 1, width: 3, layout: Layout::Nchw, element, scale }
    }

    #[test]
    fn samples_are_encoded_and_decoded_in_the_configured_type() {
        assert_eq!(spec(ElementType::I8, 1.0).encode(&[1.5, -200.0, 126.6]), vec![2, 0x80, 127]);
        assert_eq!(spec(ElementType::F16, 1.0).encode(&[1.0]), vec![0x00, 0x3c]);
        assert_eq!(spec(ElementType::F32, 1.0).encode(&[-2.0]), (-2.0f32).to_le_bytes().to_vec());
        let mut out = [0.0f32; 3];
        spec(ElementType::F16, 1.0).decode_into(&[0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38], &mut out);
        assert_eq!(out, [1.0, -2.0, 0.5]);
        spec(ElementType::I8, 0.5).decode_into(&[2, 0xff, 0x80], &mut out);
        assert_eq!(out, [1.0, -0.5, -64.0]);
    }

    #[test]
    fn an_engine_error_keeps_its_text_and_fails_the_run() {
        let e = EngineError::new(std::io::Error::other("sample 3: device lost"));
        assert_eq!(e.to_string(), "sample 3: device lost");
        assert_eq!(crate::Error::from(e).exit_code(), crate::error::exit::FAILED);
    }

    #[test]
    fn int32_samples_and_bad_int8_scales_are_refused() {
        assert!(spec(ElementType::I32, 1.0).validate().unwrap_err().to_string().contains("not int32"));
        assert!(spec(ElementType::I8, 0.0).validate().unwrap_err().to_string().contains("positive finite"));
        assert!(spec(ElementType::I8, 0.25).validate().is_ok());
    }
}
