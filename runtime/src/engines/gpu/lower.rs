//! Lowering the fused network to what the GPU runs: a stride-2 stem rewritten for a
//! space-to-depth image (see `network::space_to_depth`), NHWC fp16 tensors (int8 where
//! `network::quantize` put them), KRSC weights in one blob (fp16, or int8 with f32 biases and the
//! cuDNN graph's per-channel epilogue), channel counts padded where tensor-core kernels want
//! multiples of 8 (the image and a classifier whose class count is not a multiple of 8; the pad
//! weights are zero, so padded channels carry zeros and padded classes are never reported), and a
//! buffer per value chosen by liveness. On GPUs with our tensor-core kernels an int8 plan's stem
//! writes the max pool's int8 itself (`network::fuse_conv_quantization`, run by `stem.cu`), on the
//! space-to-depth image's 12 channels, unpadded, instead of 32. Algorithms, graphs and accumulators
//! are left unset here: choosing them needs the GPU (see `builder`).

use super::error::GpuError;
use super::network::{Network, Node, Op, Shape, SpaceToDepth, WeightScaling, assign_buffers, fuse_conv_quantization, fuse_pool_conversions, space_to_depth};
use super::plan::{Accumulator, ConvRunner, LayerKind, PlannedLayer};
use super::stem;
use half::f16;

/// Channel multiple the image and the classifier are padded to.
pub const CHANNEL_ALIGN: usize = 8;
/// Channel multiple of a space-to-depth image (12 channels for RGB): on an H200, cuDNN ran
/// ResNet50's rewritten stem in 0.45 ms per 256 images on 32 channels, 0.66 ms on 16, 1.02 ms on 24.
pub const SPACE_TO_DEPTH_CHANNEL_ALIGN: usize = 32;

pub struct Lowered {
    pub layers: Vec<PlannedLayer>,
    pub blob: Vec<u8>,
    pub buffer_of: Vec<usize>,
    pub buffer_elements: Vec<usize>,
    pub output: usize,
    pub classes: usize,
    /// Channels of the value-0 tensor the input conversion writes (the image's, rearranged and padded).
    pub input_channels: usize,
    pub input_layout: SpaceToDepth,
}

fn align(n: usize) -> usize {
    n.next_multiple_of(CHANNEL_ALIGN)
}

/// Pads the image channels to a multiple of `image_align` and the classifier's outputs to one of
/// [`CHANNEL_ALIGN`] (zero weights) in place.
pub fn pad_channels(net: &mut Network, image_align: usize) {
    let padded_in = net.channels.next_multiple_of(image_align);
    let classes_out = net.output;
    for (i, node) in net.nodes.iter_mut().enumerate() {
        let Op::Conv(conv) = &mut node.op else { continue };
        if node.input == 0 && conv.cin != padded_in {
            let k2 = conv.kernel * conv.kernel;
            let mut w = vec![0f32; conv.cout * padded_in * k2];
            for o in 0..conv.cout {
                for c in 0..conv.cin {
                    let src = (o * conv.cin + c) * k2;
                    let dst = (o * padded_in + c) * k2;
                    w[dst..dst + k2].copy_from_slice(&conv.weight[src..src + k2]);
                }
            }
            conv.weight = w;
            conv.cin = padded_in;
        }
        if i + 1 == classes_out && conv.cout != align(conv.cout) {
            let extra = align(conv.cout) - conv.cout;
            conv.weight.extend(std::iter::repeat_n(0.0, extra * conv.cin * conv.kernel * conv.kernel));
            conv.bias.extend(std::iter::repeat_n(0.0, extra));
            conv.cout += extra;
        }
    }
    net.channels = padded_in;
}

/// Lowers a fused network (see `network::build`) for a GPU that has our tensor-core kernels
/// (`tensor_cores`: compute capability 8.0 or later) or not: with them, an int8 plan's stem writes
/// int8 for the max pooling after it (`stem`).
pub fn lower(net: &Network, tensor_cores: bool) -> Result<Lowered, GpuError> {
    let classes = net.classes;
    let mut net = net.clone();
    let input_layout = space_to_depth(&mut net);
    fuse_pool_conversions(&mut net);
    // The image's channels are padded to what its first convolution's runner reads: the stem
    // kernel's 12 (none, after space-to-depth) or cuDNN's multiples.
    let takes = |node: &Node, (_, _, width): Shape| {
        let Op::Conv(conv) = &node.op else { return false };
        tensor_cores && node.input == 0 && stem::takes(conv.kernel, conv.stride, conv.pad, conv.cin, conv.cout, width)
    };
    let image_align = if fuse_conv_quantization(&mut net, &takes) > 0 {
        stem::CHANNELS
    } else if input_layout == SpaceToDepth::IDENTITY {
        CHANNEL_ALIGN
    } else {
        SPACE_TO_DEPTH_CHANNEL_ALIGN
    };
    pad_channels(&mut net, image_align);
    let shapes = net.shapes();
    let mut blob = Vec::new();
    let mut layers = Vec::new();
    for (i, node) in net.nodes.iter().enumerate() {
        let kind = match &node.op {
            Op::Conv(conv) => {
                let weight_offset = blob.len();
                let k2 = conv.kernel * conv.kernel;
                // OIHW -> OHWI (KRSC), one element at a time in the layer's type.
                // (output channel, weight) in KRSC order.
                let krsc = (0..conv.cout).flat_map(|o| (0..k2).flat_map(move |rs| (0..conv.cin).map(move |c| (o, conv.weight[(o * conv.cin + c) * k2 + rs]))));
                let (bias_offset, scale, residual_scale, accumulator, epilogue_offset) = match &conv.int8 {
                    None => {
                        blob.extend(krsc.flat_map(|(_, w)| f16::from_f32(w).to_le_bytes()));
                        let bias_offset = align_blob(&mut blob);
                        blob.extend(conv.bias.iter().flat_map(|b| f16::from_f32(*b).to_le_bytes()));
                        (bias_offset, 1.0, if conv.residual.is_some() { 1.0 } else { 0.0 }, Accumulator::Fp32, None)
                    }
                    Some(q) => {
                        // `quantize` left the weights on the int8 grid: rounding recovers the integers.
                        blob.extend(krsc.map(|(o, w)| (w / q.weight_scales[o]).round() as i8 as u8));
                        let bias_offset = align_blob(&mut blob);
                        blob.extend(conv.bias.iter().flat_map(|b| (b / q.output_scale).to_le_bytes()));
                        let int8_input = |v| {
                            net.int8_scale(v).ok_or_else(|| GpuError::Network(format!("node {:?}: an int8 convolution reads an fp16 value (run network::quantize)", node.name)))
                        };
                        let x = int8_input(node.input)?;
                        let z = conv.residual.map(int8_input).transpose()?;
                        // The graph's epilogue sums in the residual's units (the output's without one).
                        let sum_scale = z.unwrap_or(q.output_scale);
                        let epilogue_offset = align_blob(&mut blob);
                        let epilogue = q.weight_scales.iter().map(|w| x * w / sum_scale).chain(conv.bias.iter().map(|b| b / sum_scale));
                        let ratio = z.map(|z| std::iter::repeat_n(z / q.output_scale, conv.cout)).into_iter().flatten();
                        blob.extend(epilogue.chain(ratio).flat_map(f32::to_le_bytes));
                        // The legacy call's one scale; with per-channel weights it serves timing only.
                        let weight_scale = q.weight_scales.iter().fold(0f32, |m, &s| m.max(s));
                        (bias_offset, x * weight_scale / q.output_scale, z.map_or(0.0, |z| z / q.output_scale), Accumulator::Int32, Some(epilogue_offset))
                    }
                };
                align_blob(&mut blob);
                LayerKind::Conv {
                    kernel: conv.kernel,
                    stride: conv.stride,
                    pad: conv.pad,
                    relu: conv.relu,
                    residual: conv.residual,
                    weight_offset,
                    bias_offset,
                    scale,
                    residual_scale,
                    accumulator,
                    algorithm: -1,
                    workspace_bytes: 0,
                    measured_us: 0.0,
                    epilogue_offset,
                    per_channel: conv.int8.as_ref().is_some_and(|q| q.scaling == WeightScaling::PerChannel),
                    runner: if conv.quantized_output.is_some() { ConvRunner::Stem } else { ConvRunner::Legacy },
                    quantized_output: conv.quantized_output,
                }
            }
            &Op::MaxPool { kernel, stride, pad, int8_output } => LayerKind::MaxPool { kernel, stride, pad, int8_input: net.int8_scale(node.input).is_some(), int8_output },
            Op::GlobalAveragePool => LayerKind::GlobalAveragePool { int8_input: net.int8_scale(node.input) },
            Op::Quantize { scale } => LayerKind::Quantize { scale: *scale },
            Op::Dequantize => {
                LayerKind::Dequantize { scale: net.int8_scale(node.input).ok_or_else(|| GpuError::Network(format!("node {:?} dequantizes an fp16 value", node.name)))? }
            }
            other => return Err(GpuError::Network(format!("node {:?}: {other:?} survived fusion; the GPU cannot run it", node.name))),
        };
        layers.push(PlannedLayer { name: node.name.clone(), kind, input: node.input, output: i + 1, input_shape: shapes[node.input], output_shape: shapes[i + 1] });
    }
    let (buffer_of, buffer_elements) = assign_buffers(&net);
    Ok(Lowered { layers, blob, buffer_of, buffer_elements, output: net.output, classes, input_channels: net.channels, input_layout })
}

/// Pads the blob to 256 bytes (cuDNN's preferred alignment) and returns the new length.
fn align_blob(blob: &mut Vec<u8>) -> usize {
    blob.resize(blob.len().div_ceil(256) * 256, 0);
    blob.len()
}
