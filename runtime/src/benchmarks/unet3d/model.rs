//! A 3D-UNet segmentation model with seeded weights, written as ONNX protobuf messages with the
//! interface and operator set of MLPerf's KiTS19 model (`3dunet_kits19_128x128x128.onnx`, from the
//! MLPerf-Training UNet3D):
//!
//! - input `input`: f32 `[N, 1, R, R, R]` (NCDHW, one CT channel), output `output`: f32
//!   `[N, 3, R, R, R]`, raw logits of background, kidney and tumor (no softmax);
//! - each convolution block is a 3x3x3 `Conv` without bias, `InstanceNormalization` (affine) and
//!   `Relu`; the encoder's levels take a block at stride 2 then one at stride 1; the decoder's
//!   take a 2x2x2 `ConvTranspose` at stride 2, a `Concat` with the encoder's output of that level
//!   and two blocks; a 1x1x1 `Conv` with bias gives the logits.
//!
//! Only the sizes differ: `filters` per level (MLPerf's [32, 64, 128, 256, 320] with a 128-voxel
//! region of interest; the development system's a few narrow levels on a small one), so the CPU
//! engine runs a volume in CI time. Weights are uniform with variance `2 / fan_in` (instance norm
//! re-normalises every block anyway); the logits' biases are what [`UNet3dShape::class_bias`]
//! says, so that each class wins a share of the voxels.

use tract_onnx::pb;

use crate::engines::onnx_writer::{Dim, GraphWriter, attr_float, attr_int, attr_ints, value_info};
use crate::engines::synthetic::model::seeded_uniform;
use crate::engines::synthetic::rng::SplitMix64;

/// The model's graph input and output, as the reference SUT feeds and reads them.
pub const INPUT_NAME: &str = "input";
pub const OUTPUT_NAME: &str = "output";
/// Classes: background, kidney, tumor.
pub const CLASSES: usize = 3;
/// Instance norm epsilon (PyTorch's default).
const EPSILON: f32 = 1e-5;

/// The sizes of a 3D-UNet: output channels per level (the first is the input block's, the last the
/// bottleneck's), the cube side of its region of interest (a multiple of 2^(levels - 1)), and the
/// logits' biases.
#[derive(Clone, Debug, PartialEq)]
pub struct UNet3dShape {
    pub filters: Vec<usize>,
    pub roi: usize,
    pub class_bias: [f32; CLASSES],
}

/// The whole model as an ONNX `ModelProto`.
pub fn unet3d(shape: &UNet3dShape, seed: u64) -> pb::ModelProto {
    let mut g = Builder { seed, onnx: GraphWriter::default() };
    let f = &shape.filters;
    let mut x = g.block("input_block.0", INPUT_NAME, 1, f[0], 1);
    x = g.block("input_block.1", &x, f[0], f[0], 1);
    let mut skips = vec![x.clone()];
    for level in 1..f.len() {
        x = g.block(&format!("down{level}.0"), &x, f[level - 1], f[level], 2);
        x = g.block(&format!("down{level}.1"), &x, f[level], f[level], 1);
        skips.push(x.clone());
    }
    skips.pop();
    for level in (0..f.len() - 1).rev() {
        let up = g.transpose(&format!("up{level}.transpose"), &x, f[level + 1], f[level]);
        let joined = g.onnx.node("Concat", &format!("up{level}.concat"), &[&up, &skips[level]], vec![attr_int("axis", 1)]);
        x = g.block(&format!("up{level}.0"), &joined, 2 * f[level], f[level], 1);
        x = g.block(&format!("up{level}.1"), &x, f[level], f[level], 1);
    }
    let weight = g.uniform("output.weight", &[CLASSES, f[0], 1, 1, 1], (6.0 / f[0] as f32).sqrt());
    let bias = g.onnx.constant("output.bias", &[CLASSES], &shape.class_bias);
    let logits = pb::NodeProto { input: vec![x, weight, bias], output: vec![OUTPUT_NAME.into()], name: "output".into(), op_type: "Conv".into(), ..Default::default() };
    g.onnx.nodes.push(logits);
    let cube = |channels| vec![Dim::Param("N"), Dim::Value(channels), Dim::Value(shape.roi), Dim::Value(shape.roi), Dim::Value(shape.roi)];
    let mut model = g.onnx.into_model(
        "unet3d_kits19_synthetic".into(),
        format!("3D-UNet (KiTS19) topology with seeded weights (seed {seed}), filters {:?}, {}^3 region; synthetic, never submittable", shape.filters, shape.roi),
        vec![value_info(INPUT_NAME, cube(1))],
        vec![value_info(OUTPUT_NAME, cube(CLASSES))],
    );
    model.producer_name = "mlperf-runtime synthetic".into();
    model
}

struct Builder {
    seed: u64,
    onnx: GraphWriter,
}

impl Builder {
    /// A tensor of values uniform in [-bound, bound), from its own named stream.
    fn uniform(&mut self, name: &str, dims: &[usize], bound: f32) -> String {
        seeded_uniform(&mut self.onnx, self.seed, name, dims, bound)
    }

    /// Conv 3x3x3 (no bias) at `stride`, InstanceNormalization, Relu.
    fn block(&mut self, name: &str, input: &str, cin: usize, cout: usize, stride: i64) -> String {
        let weight = self.uniform(&format!("{name}.conv.weight"), &[cout, cin, 3, 3, 3], (6.0 / (cin * 27) as f32).sqrt());
        let attrs = vec![attr_ints("kernel_shape", &[3, 3, 3]), attr_ints("pads", &[1; 6]), attr_ints("strides", &[stride; 3])];
        let y = self.onnx.node("Conv", &format!("{name}.conv"), &[input, &weight], attrs);
        let mut rng = SplitMix64::derive(self.seed, &format!("{name}.norm"), 0);
        let scale: Vec<f32> = (0..cout).map(|_| 1.0 + 0.1 * rng.symmetric()).collect();
        let shift: Vec<f32> = (0..cout).map(|_| 0.1 * rng.symmetric()).collect();
        let scale = self.onnx.constant(&format!("{name}.norm.weight"), &[cout], &scale);
        let shift = self.onnx.constant(&format!("{name}.norm.bias"), &[cout], &shift);
        let y = self.onnx.node("InstanceNormalization", &format!("{name}.norm"), &[&y, &scale, &shift], vec![attr_float("epsilon", EPSILON)]);
        self.onnx.node("Relu", &format!("{name}.relu"), &[&y], vec![])
    }

    /// ConvTranspose 2x2x2 at stride 2, with bias.
    fn transpose(&mut self, name: &str, input: &str, cin: usize, cout: usize) -> String {
        // ONNX ConvTranspose weights are [C_in, C_out, k, k, k].
        let weight = self.uniform(&format!("{name}.weight"), &[cin, cout, 2, 2, 2], (6.0 / (cin * 8) as f32).sqrt());
        let bias = self.uniform(&format!("{name}.bias"), &[cout], 0.1);
        let attrs = vec![attr_ints("kernel_shape", &[2, 2, 2]), attr_ints("strides", &[2, 2, 2])];
        self.onnx.node("ConvTranspose", name, &[input, &weight, &bias], attrs)
    }
}
