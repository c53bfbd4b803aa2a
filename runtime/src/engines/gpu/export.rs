//! The builder's network written back as ONNX, int8 rounding included, so that the CPU engine
//! (tract) computes what a plan computes. An int8 plan is checked against this model: the original
//! fp32 model would measure what quantisation changes, not whether the GPU runs it right.

use super::error::GpuError;
use super::network::{INT8_MAX, Network, Op};
use crate::engines::onnx_writer::{Dim, GraphWriter, attr_int, attr_ints, value_info};
use tract_onnx::pb;

/// Names of the exported model's input (NCHW f32, symbolic batch `N`) and output (`N x classes`).
pub const INPUT_NAME: &str = "input";
pub const OUTPUT_NAME: &str = "logits";

/// A network as ONNX.
pub struct Exported {
    pub model: pb::ModelProto,
    /// The ONNX name of each of the network's values (index: `ValueId`).
    pub values: Vec<String>,
}

/// The fused (and possibly quantised) network as an ONNX model. An int8 value is held in f32 on
/// its grid: `Round(x / scale)` clipped to [-127, 127], times `scale` (ONNX rounds ties to even, as
/// the GPU's conversions do).
pub fn to_onnx(net: &Network) -> Result<Exported, GpuError> {
    let mut g = GraphWriter::default();
    let bounds = [g.constant("int8.min", &[], &[-INT8_MAX]), g.constant("int8.max", &[], &[INT8_MAX])];
    let round_to_int8 = |g: &mut GraphWriter, name: &str, x: &str, scale: f32| {
        let scale = g.constant(&format!("{name}.scale"), &[], &[scale]);
        let units = g.node("Div", &format!("{name}/div"), &[x, &scale], vec![]);
        let units = g.node("Round", &format!("{name}/round"), &[&units], vec![]);
        let units = g.node("Clip", &format!("{name}/clip"), &[&units, &bounds[0], &bounds[1]], vec![]);
        g.node("Mul", &format!("{name}/int8"), &[&units, &scale], vec![])
    };
    let mut names = vec![INPUT_NAME.to_string()];
    for node in &net.nodes {
        let (x, name) = (names[node.input].clone(), node.name.as_str());
        let output = match &node.op {
            Op::Conv(c) => {
                let weight = g.constant(&format!("{name}.weight"), &[c.cout, c.cin, c.kernel, c.kernel], &c.weight);
                let bias = g.constant(&format!("{name}.bias"), &[c.cout], &c.bias);
                let (k, s, p) = (c.kernel as i64, c.stride as i64, c.pad as i64);
                let attrs = vec![attr_ints("kernel_shape", &[k, k]), attr_ints("strides", &[s, s]), attr_ints("pads", &[p; 4])];
                let mut y = g.node("Conv", name, &[&x, &weight, &bias], attrs);
                if let Some(r) = c.residual {
                    y = g.node("Add", &format!("{name}/add"), &[&y, &names[r]], vec![]);
                }
                if c.relu {
                    y = g.node("Relu", &format!("{name}/relu"), &[&y], vec![]);
                }
                match c.output_scale() {
                    Some(scale) => round_to_int8(&mut g, name, &y, scale),
                    None => y,
                }
            }
            Op::MaxPool { kernel, stride, pad, int8_output } => {
                let (k, s, p) = (*kernel as i64, *stride as i64, *pad as i64);
                let y = g.node("MaxPool", name, &[&x], vec![attr_ints("kernel_shape", &[k, k]), attr_ints("strides", &[s, s]), attr_ints("pads", &[p; 4])]);
                match int8_output {
                    Some(scale) => round_to_int8(&mut g, name, &y, *scale),
                    None => y,
                }
            }
            Op::GlobalAveragePool => g.node("GlobalAveragePool", name, &[&x], vec![]),
            Op::Quantize { scale } => round_to_int8(&mut g, name, &x, *scale),
            // Already on the grid in f32.
            Op::Dequantize => x,
            Op::BatchNorm { .. } | Op::Relu | Op::Add(_) => {
                return Err(GpuError::Network(format!("node {name:?} is not fused into a convolution; export the network network::build returns")));
            }
        };
        names.push(output);
    }
    g.node("Flatten", OUTPUT_NAME, &[&names[net.output]], vec![attr_int("axis", 1)]);
    let model = g.into_model(
        "mlperf-gpu-plan-reference".into(),
        "what a GPU plan computes, int8 rounding included, for the CPU engine".into(),
        vec![value_info(INPUT_NAME, vec![Dim::Param("N"), Dim::Value(net.channels), Dim::Value(net.height), Dim::Value(net.width)])],
        vec![value_info(OUTPUT_NAME, vec![Dim::Param("N"), Dim::Value(net.classes)])],
    );
    Ok(Exported { model, values: names })
}
