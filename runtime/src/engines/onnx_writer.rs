//! Writing ONNX models as protobuf messages, for the models this crate generates: the synthetic
//! ResNet50 and BERT, and the GPU builder's CPU reference of an int8 plan (`gpu::export`).

use tract_onnx::pb;
use tract_onnx::pb::attribute_proto::AttributeType;
use tract_onnx::pb::tensor_proto::DataType;

/// ONNX operator set the generated models are written against.
pub const OPSET: i64 = 13;
/// ONNX IR version of the generated models.
const IR_VERSION: i64 = 7;

/// A graph under construction: nodes in topological order and their initializers.
#[derive(Default)]
pub struct GraphWriter {
    pub nodes: Vec<pb::NodeProto>,
    pub initializers: Vec<pb::TensorProto>,
}

impl GraphWriter {
    /// Adds a node with one output named after the node; returns the output's name.
    pub fn node(&mut self, op: &str, name: &str, inputs: &[&str], attribute: Vec<pb::AttributeProto>) -> String {
        self.nodes.push(pb::NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![name.to_string()],
            name: name.to_string(),
            op_type: op.to_string(),
            attribute,
            ..Default::default()
        });
        name.to_string()
    }

    /// Adds an f32 initializer of shape `dims`; returns its name.
    pub fn constant(&mut self, name: &str, dims: &[usize], values: &[f32]) -> String {
        debug_assert_eq!(values.len(), dims.iter().product::<usize>());
        self.initializers.push(pb::TensorProto {
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type: DataType::Float as i32,
            name: name.to_string(),
            raw_data: f32_bytes(values),
            ..Default::default()
        });
        name.to_string()
    }

    /// Adds an int64 initializer of shape `dims` (shapes, axes, indices); returns its name.
    pub fn constant_i64(&mut self, name: &str, dims: &[usize], values: &[i64]) -> String {
        debug_assert_eq!(values.len(), dims.iter().product::<usize>());
        self.initializers.push(pb::TensorProto {
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type: DataType::Int64 as i32,
            name: name.to_string(),
            raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ..Default::default()
        });
        name.to_string()
    }

    /// The finished model with its graph inputs and outputs.
    pub fn into_model(self, graph_name: String, doc_string: String, input: Vec<pb::ValueInfoProto>, output: Vec<pb::ValueInfoProto>) -> pb::ModelProto {
        let graph = pb::GraphProto { node: self.nodes, name: graph_name, initializer: self.initializers, doc_string, input, output, ..Default::default() };
        pb::ModelProto {
            ir_version: IR_VERSION,
            opset_import: vec![pb::OperatorSetIdProto { domain: String::new(), version: OPSET }],
            producer_name: "mlperf-runtime".into(),
            producer_version: env!("CARGO_PKG_VERSION").into(),
            graph: Some(graph),
            ..Default::default()
        }
    }
}

/// A tensor dimension: fixed, or named (the batch).
pub enum Dim {
    Value(usize),
    Param(&'static str),
}

/// An f32 tensor's name and shape, as a graph input or output.
pub fn value_info(name: &str, dims: Vec<Dim>) -> pb::ValueInfoProto {
    typed_value_info(name, DataType::Float, dims)
}

/// A tensor's name, element type and shape, as a graph input or output.
pub fn typed_value_info(name: &str, elem_type: DataType, dims: Vec<Dim>) -> pb::ValueInfoProto {
    use pb::tensor_shape_proto::{Dimension, dimension::Value};
    let dim = dims
        .into_iter()
        .map(|d| Dimension {
            value: Some(match d {
                Dim::Value(v) => Value::DimValue(v as i64),
                Dim::Param(p) => Value::DimParam(p.to_string()),
            }),
            ..Default::default()
        })
        .collect();
    pb::ValueInfoProto {
        name: name.to_string(),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor { elem_type: elem_type as i32, shape: Some(pb::TensorShapeProto { dim }) })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn attr_int(name: &str, i: i64) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}

pub fn attr_ints(name: &str, ints: &[i64]) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::Ints as i32, ints: ints.to_vec(), ..Default::default() }
}

pub fn attr_float(name: &str, f: f32) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::Float as i32, f, ..Default::default() }
}

pub fn attr_str(name: &str, value: &str) -> pb::AttributeProto {
    pb::AttributeProto { name: name.into(), r#type: AttributeType::String as i32, s: value.as_bytes().to_vec(), ..Default::default() }
}

/// `values` as ONNX raw data (little-endian f32).
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
