//! A ResNet50 v1.5 ONNX model with seeded weights, written directly as ONNX protobuf messages.
//!
//! The topology is the real one (torchvision's / MLPerf's ResNet50 v1.5): a 7x7/2 convolution stem
//! with batch norm, ReLU and a 3x3/2 max pool; four stages of [3, 4, 6, 3] bottleneck blocks of
//! widths 64/128/256/512 with 4x expansion, the stride on the 3x3 convolution (the "v1.5" change),
//! a projection shortcut (1x1 convolution + batch norm) on each stage's first block; global average
//! pooling, flatten and a 1000-way fully connected layer producing logits. Batch norms are folded
//! into the convolutions' weights and biases, as inference exports usually have them, so the
//! operator set is Conv (with bias), Relu, MaxPool, Add, GlobalAveragePool, Flatten and Gemm.
//! (Folding also matters for speed: tract left the norm before each residual Add unfused, which
//! cost about 12% of the CPU engine's time.) Only the input side differs from the real model (any
//! square size; the CPU-only system uses a reduced one), which global pooling makes legal.
//!
//! Weights are He-uniform (variance 2/fan_in, keeping ReLU activations at a steady scale through
//! 53 convolutions) and the folded batch norms roughly normalise what reaches them, so activations
//! stay finite and O(1)..O(10) in fp32 and fp16 alike. The fully connected layer is generated here
//! with zero bias; [`super::calibrate_classifier`] then standardises its logits (see there for why).

use tract_onnx::pb;

use super::rng::SplitMix64;
use crate::engines::onnx_writer::{Dim, GraphWriter, attr_float, attr_int, attr_ints, f32_bytes, value_info};

/// Number of classes (ImageNet-1k, no background class).
pub const CLASSES: usize = 1000;
/// Features entering the classifier.
pub const FEATURES: usize = 2048;
/// Name of the image input (NCHW, symbolic batch `N`).
pub const INPUT_NAME: &str = "input";
/// Name of the logits output (`N x 1000`).
pub const OUTPUT_NAME: &str = "logits";
/// Names of the classifier's initializers, which calibration rewrites.
pub const FC_WEIGHT: &str = "fc.weight";
pub const FC_BIAS: &str = "fc.bias";
/// The batch norms' epsilon (PyTorch's default), used when folding them.
const BN_EPSILON: f64 = 1e-5;
/// Second moment (mean square) assumed for input pixels after mean subtraction: ImageNet pixels
/// minus their channel means have a standard deviation of about 55..60, and so do
/// [`super::synthetic_image`]'s. The stem's batch norm divides by the matching variance.
pub const INPUT_SECOND_MOMENT: f32 = 3_000.0;

/// Stages as (blocks, bottleneck width, stride of the first block).
pub const STAGES: [(usize, usize, usize); 4] = [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)];

/// The whole model as an ONNX `ModelProto` (classifier bias zero, not yet calibrated).
pub fn resnet50(size: usize, seed: u64) -> pb::ModelProto {
    resnet50_with(size, seed, true)
}

/// The same model with every batch norm left as its own `BatchNormalization` node (as training
/// exports and the MLPerf reference model have them), for the GPU engine builder's folding pass.
pub fn resnet50_with_batch_norms(size: usize, seed: u64) -> pb::ModelProto {
    resnet50_with(size, seed, false)
}

fn resnet50_with(size: usize, seed: u64, fold_batch_norms: bool) -> pb::ModelProto {
    let mut g = GraphBuilder { seed, fold_batch_norms, onnx: GraphWriter::default() };

    let x = g.conv_bn("conv1", "bn1", INPUT_NAME, 3, 64, 7, 2, 1.0, 2.0 * INPUT_SECOND_MOMENT);
    let x = g.relu("relu", &x);
    let mut x = g.max_pool("maxpool", &x);

    let mut channels = 64;
    for (stage, &(blocks, width, stride)) in STAGES.iter().enumerate() {
        for block in 0..blocks {
            let p = format!("layer{}.{block}", stage + 1);
            let s = if block == 0 { stride } else { 1 };
            let out = width * 4;
            let shortcut = if block == 0 { g.conv_bn(&format!("{p}.downsample.0"), &format!("{p}.downsample.1"), &x, channels, out, 1, s, 1.0, 1.0) } else { x.clone() };
            let y = g.conv_bn(&format!("{p}.conv1"), &format!("{p}.bn1"), &x, channels, width, 1, 1, 1.0, 1.0);
            let y = g.relu(&format!("{p}.relu1"), &y);
            let y = g.conv_bn(&format!("{p}.conv2"), &format!("{p}.bn2"), &y, width, width, 3, s, 1.0, 1.0);
            let y = g.relu(&format!("{p}.relu2"), &y);
            // A smaller gain on the residual branch's last norm keeps the residual stream's growth
            // over 16 blocks moderate (the role zero-init-residual plays in training).
            let y = g.conv_bn(&format!("{p}.conv3"), &format!("{p}.bn3"), &y, width, out, 1, 1, 0.5, 1.0);
            let sum = g.node("Add", &format!("{p}.add"), &[&y, &shortcut], vec![]);
            x = g.relu(&format!("{p}.relu3"), &sum);
            channels = out;
        }
    }

    let x = g.node("GlobalAveragePool", "avgpool", &[&x], vec![]);
    let x = g.node("Flatten", "flatten", &[&x], vec![attr_int("axis", 1)]);
    let bound = 1.0 / (FEATURES as f32).sqrt();
    g.uniform(FC_WEIGHT, &[CLASSES, FEATURES], bound);
    g.constant(FC_BIAS, &[CLASSES], vec![0.0; CLASSES]);
    let gemm = pb::NodeProto {
        input: vec![x, FC_WEIGHT.into(), FC_BIAS.into()],
        output: vec![OUTPUT_NAME.into()],
        name: "fc".into(),
        op_type: "Gemm".into(),
        attribute: vec![attr_float("alpha", 1.0), attr_float("beta", 1.0), attr_int("transB", 1)],
        ..Default::default()
    };
    g.onnx.nodes.push(gemm);

    let mut model = g.onnx.into_model(
        format!("resnet50_v1.5_synthetic_{size}px"),
        format!(
            "ResNet50 v1.5 topology with seeded random weights (seed {seed}) for {size}x{size} inputs; \
             synthetic, never submittable"
        ),
        vec![value_info(INPUT_NAME, vec![Dim::Param("N"), Dim::Value(3), Dim::Value(size), Dim::Value(size)])],
        vec![value_info(OUTPUT_NAME, vec![Dim::Param("N"), Dim::Value(CLASSES)])],
    );
    model.producer_name = "mlperf-runtime synthetic".into();
    model.producer_version = super::GENERATOR_VERSION.to_string();
    model
}

/// Adds a constant of values uniform in [-bound, bound) from the stream `seed` derives for `name`
/// (the generated models' seeded weights: each tensor reproducible on its own); returns its name.
pub fn seeded_uniform(onnx: &mut GraphWriter, seed: u64, name: &str, dims: &[usize], bound: f32) -> String {
    let mut rng = SplitMix64::derive(seed, name, 0);
    let values: Vec<f32> = (0..dims.iter().product()).map(|_| rng.symmetric() * bound).collect();
    onnx.constant(name, dims, &values)
}

/// The f32 values of a named initializer, for calibration to rewrite.
pub fn initializer_mut<'a>(model: &'a mut pb::ModelProto, name: &str) -> Option<&'a mut pb::TensorProto> {
    model.graph.as_mut()?.initializer.iter_mut().find(|t| t.name == name)
}

/// Decodes an f32 initializer's raw little-endian data.
pub fn tensor_values(t: &pb::TensorProto) -> Vec<f32> {
    t.raw_data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// Replaces an f32 initializer's data (same element count).
pub fn set_tensor_values(t: &mut pb::TensorProto, values: &[f32]) {
    debug_assert_eq!(values.len() * 4, t.raw_data.len());
    t.raw_data = f32_bytes(values);
}

struct GraphBuilder {
    seed: u64,
    fold_batch_norms: bool,
    onnx: GraphWriter,
}

impl GraphBuilder {
    fn node(&mut self, op: &str, name: &str, inputs: &[&str], attribute: Vec<pb::AttributeProto>) -> String {
        self.onnx.node(op, name, inputs, attribute)
    }

    fn constant(&mut self, name: &str, dims: &[usize], values: Vec<f32>) {
        self.onnx.constant(name, dims, &values);
    }

    /// A tensor of values uniform in [-bound, bound), from its own named stream.
    fn uniform(&mut self, name: &str, dims: &[usize], bound: f32) {
        let mut rng = SplitMix64::derive(self.seed, name, 0);
        let n = dims.iter().product();
        let values = (0..n).map(|_| rng.symmetric() * bound).collect();
        self.constant(name, dims, values);
    }

    /// A convolution followed by batch norm, folded into one `Conv` with bias (as in an exported
    /// inference model): He-uniform weights from the convolution's stream, batch-norm statistics
    /// jittered around (gain, 0, 0, variance) from the norm's stream, so they near-normalise
    /// without being an identity. Folding is done in f64 with one rounding to f32 per value.
    #[allow(clippy::too_many_arguments)]
    fn conv_bn(&mut self, conv: &str, norm: &str, input: &str, cin: usize, cout: usize, k: usize, stride: usize, gain: f32, variance: f32) -> String {
        let fan_in = cin * k * k;
        // Uniform on [-b, b) has variance b^2/3; b = sqrt(6/fan_in) gives He's 2/fan_in.
        let bound = (6.0 / fan_in as f32).sqrt();
        let mut rng = SplitMix64::derive(self.seed, &format!("{conv}.weight"), 0);
        let raw: Vec<f32> = (0..cout * fan_in).map(|_| rng.symmetric() * bound).collect();

        let mut rng = SplitMix64::derive(self.seed, norm, 0);
        let mut draw = |center: f32, spread: f32| -> Vec<f32> { (0..cout).map(|_| center + spread * rng.symmetric()).collect() };
        let scale = draw(gain, 0.1 * gain);
        let shift = draw(0.0, 0.1);
        let mean = draw(0.0, 0.05 * variance.sqrt());
        let var = draw(variance, 0.1 * variance);

        let (k, s, p) = (k as i64, stride as i64, (k as i64 - 1) / 2);
        let attrs =
            vec![attr_ints("dilations", &[1, 1]), attr_int("group", 1), attr_ints("kernel_shape", &[k, k]), attr_ints("pads", &[p, p, p, p]), attr_ints("strides", &[s, s])];
        let (w_name, b_name) = (format!("{conv}.weight"), format!("{conv}.bias"));
        if !self.fold_batch_norms {
            self.constant(&w_name, &[cout, cin, k as usize, k as usize], raw);
            let x = self.node("Conv", conv, &[input, &w_name], attrs);
            let names = ["scale", "shift", "mean", "var"].map(|p| format!("{norm}.{p}"));
            for (name, values) in names.iter().zip([scale, shift, mean, var]) {
                self.constant(name, &[cout], values);
            }
            let bn_inputs: Vec<&str> = std::iter::once(x.as_str()).chain(names.iter().map(String::as_str)).collect();
            return self.node("BatchNormalization", norm, &bn_inputs, vec![attr_float("epsilon", BN_EPSILON as f32)]);
        }
        let mut weight = Vec::with_capacity(raw.len());
        let mut bias = Vec::with_capacity(cout);
        for o in 0..cout {
            let a = scale[o] as f64 / (var[o] as f64 + BN_EPSILON).sqrt();
            weight.extend(raw[o * fan_in..(o + 1) * fan_in].iter().map(|&w| (w as f64 * a) as f32));
            bias.push((shift[o] as f64 - mean[o] as f64 * a) as f32);
        }
        self.constant(&w_name, &[cout, cin, k as usize, k as usize], weight);
        self.constant(&b_name, &[cout], bias);
        self.node("Conv", conv, &[input, &w_name, &b_name], attrs)
    }

    fn relu(&mut self, name: &str, input: &str) -> String {
        self.node("Relu", name, &[input], vec![])
    }

    fn max_pool(&mut self, name: &str, input: &str) -> String {
        let attrs = vec![attr_ints("kernel_shape", &[3, 3]), attr_ints("pads", &[1, 1, 1, 1]), attr_ints("strides", &[2, 2])];
        self.node("MaxPool", name, &[input], attrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn has_resnet50_v15_topology() {
        let m = resnet50(32, 1);
        let g = m.graph.as_ref().unwrap();
        let mut ops = BTreeMap::new();
        for n in &g.node {
            *ops.entry(n.op_type.as_str()).or_insert(0) += 1;
        }
        let expected: BTreeMap<&str, i32> = [("Conv", 53), ("Relu", 49), ("MaxPool", 1), ("Add", 16), ("GlobalAveragePool", 1), ("Flatten", 1), ("Gemm", 1)].into();
        assert_eq!(ops, expected);
        // ResNet50's 25,557,032 parameters, less one per batch-norm channel (26,560 channels: a
        // norm's scale and shift become one convolution bias when folded).
        let params: usize = g.initializer.iter().map(|t| t.dims.iter().product::<i64>() as usize).sum();
        assert_eq!(params, 25_557_032 - 26_560);
        // v1.5: the stride sits on the 3x3 convolution of each downsampling block.
        let strides = |name: &str| {
            let n = g.node.iter().find(|n| n.name == name).unwrap();
            n.attribute.iter().find(|a| a.name == "strides").unwrap().ints.clone()
        };
        assert_eq!(strides("layer2.0.conv1"), vec![1, 1]);
        assert_eq!(strides("layer2.0.conv2"), vec![2, 2]);
        assert_eq!(strides("layer2.0.downsample.0"), vec![2, 2]);
        assert_eq!(strides("layer1.0.conv2"), vec![1, 1]);
    }
}
