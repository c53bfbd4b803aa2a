//! Reading ONNX protobuf messages: initializer values and node attributes, for the importers of
//! the GPU engine (image classifiers in `gpu::network`, BERT encoders in `benchmarks::bert::gpu::import`).

use tract_onnx::pb;
use tract_onnx::pb::tensor_proto::DataType;

/// An initializer whose element type is not the one the importer reads: the model is not the one
/// the run needs ([`crate::Error::Data`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OnnxReadError {
    #[error("initializer {name:?} is not {wanted} (type {data_type})")]
    WrongType { name: String, wanted: &'static str, data_type: i32 },
}

impl From<OnnxReadError> for crate::Error {
    fn from(e: OnnxReadError) -> crate::Error {
        crate::Error::Data(e.to_string())
    }
}

/// The values of a float32 initializer (raw little-endian data or `float_data`).
pub fn f32_values(t: &pb::TensorProto) -> Result<Vec<f32>, OnnxReadError> {
    if t.data_type != DataType::Float as i32 {
        return Err(OnnxReadError::WrongType { name: t.name.clone(), wanted: "float32", data_type: t.data_type });
    }
    if !t.raw_data.is_empty() {
        return Ok(t.raw_data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect());
    }
    Ok(t.float_data.clone())
}

/// The values of an int64 initializer (shapes, axes, indices).
pub fn i64_values(t: &pb::TensorProto) -> Result<Vec<i64>, OnnxReadError> {
    if t.data_type != DataType::Int64 as i32 {
        return Err(OnnxReadError::WrongType { name: t.name.clone(), wanted: "int64", data_type: t.data_type });
    }
    if !t.raw_data.is_empty() {
        return Ok(t.raw_data.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect());
    }
    Ok(t.int64_data.clone())
}

pub fn attr<'a>(node: &'a pb::NodeProto, key: &str) -> Option<&'a pb::AttributeProto> {
    node.attribute.iter().find(|a| a.name == key)
}

pub fn attr_ints(node: &pb::NodeProto, key: &str) -> Option<Vec<i64>> {
    attr(node, key).map(|a| a.ints.clone())
}

pub fn attr_int(node: &pb::NodeProto, key: &str) -> Option<i64> {
    attr(node, key).map(|a| a.i)
}

pub fn attr_float(node: &pb::NodeProto, key: &str) -> Option<f32> {
    attr(node, key).map(|a| a.f)
}
