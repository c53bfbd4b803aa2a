//! A YOLOv11 detector with seeded weights, written as ONNX with the topology, operator set and
//! interface of `yolo export model=yolo11l.pt format=onnx` (ultralytics `yolo11.yaml` at scale
//! "l": depth 1.0, width 1.0, at most 512 channels; `C3k2` blocks with `C3k` inside, as the
//! "m", "l" and "x" scales build them):
//!
//! - input `images`: f32 `[N, 3, S, S]`, RGB in [0, 1]; output `output0`: f32 `[N, 84, A]`,
//!   per anchor 4 box values (centre x, centre y, width, height in input pixels, after DFL and
//!   anchor decoding) and 80 class sigmoids; A = (S/8)² + (S/16)² + (S/32)² (8,400 at S = 640);
//! - every `Conv` is a convolution with its batch norm folded into a bias, then SiLU as `Sigmoid`
//!   and `Mul`; `C3k2` splits with `Split`, `SPPF` is three 5x5 `MaxPool`s, the neck upsamples with
//!   nearest `Resize` and joins with `Concat`; `C2PSA`'s attention is `Reshape`, `Split`,
//!   `Transpose`, `MatMul`, `Softmax` with a depthwise 3x3 positional term; the `Detect` head has
//!   the box branch (two 3x3 convs, a 1x1 to 4 x 16 logits) and the class branch (depthwise and
//!   pointwise pairs, a 1x1 to 80), the DFL (softmax over 16 bins and a 1x1 conv with weights
//!   0..15), and the anchor decoding with the anchors and strides as constants.
//!
//! Only the widths differ: [`YoloShape::width_divisor`] divides every channel count of the "l"
//! scale (1 for the real network), and the square input side S is the shape's (640 for the real
//! network; a multiple of 32). The head's own widths follow ultralytics' formulas from the
//! narrowed inputs. Weights are uniform with variance `2 / fan_in`; the class logits' bias is
//! [`YoloShape::class_bias`] (ultralytics initialises it so that scores start small).

use tract_onnx::pb;

use crate::engines::onnx_writer::{Dim, GraphWriter, attr_int, attr_ints, attr_str, value_info};
use crate::engines::synthetic::model::seeded_uniform;

/// The exported model's graph input and output.
pub const INPUT_NAME: &str = "images";
pub const OUTPUT_NAME: &str = "output0";
/// COCO's 80 detection classes.
pub const CLASSES: usize = 80;
/// DFL bins per box side.
pub const REG_MAX: usize = 16;
/// The strides of the three detection levels (P3, P4, P5).
pub const STRIDES: [usize; 3] = [8, 16, 32];
/// Repeats of every `C3k2` and `C2PSA` (scale "l": 2 x depth 1.0).
const REPEATS: usize = 2;

/// Anchors of a square input of side `size`: one per cell of each level.
pub fn anchors(size: usize) -> usize {
    STRIDES.iter().map(|s| (size / s) * (size / s)).sum()
}

/// The sizes of a generated YOLOv11.
#[derive(Clone, Debug, PartialEq)]
pub struct YoloShape {
    /// Input side S (a multiple of 32).
    pub size: usize,
    /// Every channel count of scale "l" divided by this (1: the real widths).
    pub width_divisor: usize,
    /// The class logits' bias.
    pub class_bias: f32,
}

impl YoloShape {
    /// Channels of a layer whose yaml width is `c` at scale "l" (capped at 512).
    fn ch(&self, c: usize) -> usize {
        (c.min(512) / self.width_divisor).max(1)
    }
}

/// The whole model as an ONNX `ModelProto`.
pub fn yolo11(shape: &YoloShape, seed: u64) -> pb::ModelProto {
    let mut g = Builder { seed, onnx: GraphWriter::default() };
    let c = |w| shape.ch(w);
    // Backbone (yolo11.yaml layers 0-10).
    let x0 = g.conv("model.0", INPUT_NAME, 3, c(64), 3, 2, 1, true);
    let x1 = g.conv("model.1", &x0, c(64), c(128), 3, 2, 1, true);
    let x2 = g.c3k2("model.2", &x1, c(128), c(256), 0.25);
    let x3 = g.conv("model.3", &x2, c(256), c(256), 3, 2, 1, true);
    let x4 = g.c3k2("model.4", &x3, c(256), c(512), 0.25);
    let x5 = g.conv("model.5", &x4, c(512), c(512), 3, 2, 1, true);
    let x6 = g.c3k2("model.6", &x5, c(512), c(512), 0.5);
    let x7 = g.conv("model.7", &x6, c(512), c(1024), 3, 2, 1, true);
    let x8 = g.c3k2("model.8", &x7, c(1024), c(1024), 0.5);
    let x9 = g.sppf("model.9", &x8, c(1024), c(1024));
    let x10 = g.c2psa("model.10", &x9, c(1024));
    // Head (layers 11-22).
    let x11 = g.upsample("model.11", &x10);
    let x12 = g.onnx.node("Concat", "model.12", &[&x11, &x6], vec![attr_int("axis", 1)]);
    let x13 = g.c3k2("model.13", &x12, c(1024) + c(512), c(512), 0.5);
    let x14 = g.upsample("model.14", &x13);
    let x15 = g.onnx.node("Concat", "model.15", &[&x14, &x4], vec![attr_int("axis", 1)]);
    let x16 = g.c3k2("model.16", &x15, c(512) + c(512), c(256), 0.5);
    let x17 = g.conv("model.17", &x16, c(256), c(256), 3, 2, 1, true);
    let x18 = g.onnx.node("Concat", "model.18", &[&x17, &x13], vec![attr_int("axis", 1)]);
    let x19 = g.c3k2("model.19", &x18, c(256) + c(512), c(512), 0.5);
    let x20 = g.conv("model.20", &x19, c(512), c(512), 3, 2, 1, true);
    let x21 = g.onnx.node("Concat", "model.21", &[&x20, &x10], vec![attr_int("axis", 1)]);
    let x22 = g.c3k2("model.22", &x21, c(512) + c(1024), c(1024), 0.5);
    g.detect("model.23", [(&x16, c(256)), (&x19, c(512)), (&x22, c(1024))], shape);

    let images = vec![Dim::Param("N"), Dim::Value(3), Dim::Value(shape.size), Dim::Value(shape.size)];
    let output = vec![Dim::Param("N"), Dim::Value(4 + CLASSES), Dim::Value(anchors(shape.size))];
    let mut model = g.onnx.into_model(
        "yolo11_synthetic".into(),
        format!("YOLOv11 (scale l) topology with seeded weights (seed {seed}), widths / {}, {}px input; synthetic, never submittable", shape.width_divisor, shape.size),
        vec![value_info(INPUT_NAME, images)],
        vec![value_info(OUTPUT_NAME, output)],
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

    /// A plain convolution with bias (`nn.Conv2d`, or a `Conv` whose batch norm is folded).
    #[allow(clippy::too_many_arguments)]
    fn conv2d(&mut self, name: &str, x: &str, cin: usize, cout: usize, k: usize, stride: usize, groups: usize, bias: Option<f32>) -> String {
        let fan_in = cin / groups * k * k;
        let weight = self.uniform(&format!("{name}.weight"), &[cout, cin / groups, k, k], (6.0 / fan_in as f32).sqrt());
        let bias = match bias {
            Some(value) => self.onnx.constant(&format!("{name}.bias"), &[cout], &vec![value; cout]),
            None => self.uniform(&format!("{name}.bias"), &[cout], 0.1),
        };
        let pad = (k / 2) as i64;
        let attrs = vec![attr_ints("kernel_shape", &[k as i64; 2]), attr_ints("pads", &[pad; 4]), attr_ints("strides", &[stride as i64; 2]), attr_int("group", groups as i64)];
        self.onnx.node("Conv", name, &[x, &weight, &bias], attrs)
    }

    /// ultralytics `Conv`: convolution (batch norm folded), SiLU when `act`.
    #[allow(clippy::too_many_arguments)]
    fn conv(&mut self, name: &str, x: &str, cin: usize, cout: usize, k: usize, stride: usize, groups: usize, act: bool) -> String {
        let y = self.conv2d(&format!("{name}.conv"), x, cin, cout, k, stride, groups, None);
        if !act {
            return y;
        }
        let gate = self.onnx.node("Sigmoid", &format!("{name}.act.sigmoid"), &[&y], vec![]);
        self.onnx.node("Mul", &format!("{name}.act"), &[&y, &gate], vec![])
    }

    /// `Split` along `axis` into parts of `sizes`.
    fn split(&mut self, name: &str, x: &str, sizes: &[usize], axis: i64) -> Vec<String> {
        let sizes: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
        let split = self.onnx.constant_i64(&format!("{name}.sizes"), &[sizes.len()], &sizes);
        let outputs: Vec<String> = (0..sizes.len()).map(|i| format!("{name}.{i}")).collect();
        self.onnx.nodes.push(pb::NodeProto {
            input: vec![x.into(), split],
            output: outputs.clone(),
            name: name.into(),
            op_type: "Split".into(),
            attribute: vec![attr_int("axis", axis)],
            ..Default::default()
        });
        outputs
    }

    fn reshape(&mut self, name: &str, x: &str, dims: &[i64]) -> String {
        let shape = self.onnx.constant_i64(&format!("{name}.shape"), &[dims.len()], dims);
        self.onnx.node("Reshape", name, &[x, &shape], vec![])
    }

    fn concat(&mut self, name: &str, parts: &[String]) -> String {
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        self.onnx.node("Concat", name, &parts, vec![attr_int("axis", 1)])
    }

    /// `Bottleneck(c, c, shortcut=True, k=3, e)`.
    fn bottleneck(&mut self, name: &str, x: &str, c: usize, e: f64) -> String {
        let hidden = (c as f64 * e) as usize;
        let y = self.conv(&format!("{name}.cv1"), x, c, hidden, 3, 1, 1, true);
        let y = self.conv(&format!("{name}.cv2"), &y, hidden, c, 3, 1, 1, true);
        self.onnx.node("Add", &format!("{name}.add"), &[x, &y], vec![])
    }

    /// `C3k(c, c, n=2, shortcut=True)`: a CSP block of two 3x3 bottlenecks.
    fn c3k(&mut self, name: &str, x: &str, c: usize) -> String {
        let hidden = c / 2;
        let mut a = self.conv(&format!("{name}.cv1"), x, c, hidden, 1, 1, 1, true);
        for i in 0..2 {
            a = self.bottleneck(&format!("{name}.m.{i}"), &a, hidden, 1.0);
        }
        let b = self.conv(&format!("{name}.cv2"), x, c, hidden, 1, 1, 1, true);
        let joined = self.concat(&format!("{name}.cat"), &[a, b]);
        self.conv(&format!("{name}.cv3"), &joined, 2 * hidden, c, 1, 1, 1, true)
    }

    /// `C3k2(c1, c2, n=2, c3k=True, e)`: split in two, a chain of `C3k`s on the second half, every
    /// output concatenated.
    fn c3k2(&mut self, name: &str, x: &str, c1: usize, c2: usize, e: f64) -> String {
        let c = (c2 as f64 * e) as usize;
        let y = self.conv(&format!("{name}.cv1"), x, c1, 2 * c, 1, 1, 1, true);
        let mut parts = self.split(&format!("{name}.split"), &y, &[c, c], 1);
        for i in 0..REPEATS {
            let last = parts[parts.len() - 1].clone();
            parts.push(self.c3k(&format!("{name}.m.{i}"), &last, c));
        }
        let joined = self.concat(&format!("{name}.cat"), &parts);
        self.conv(&format!("{name}.cv2"), &joined, (2 + REPEATS) * c, c2, 1, 1, 1, true)
    }

    /// `SPPF(c1, c2, k=5)`: three chained 5x5 max pools, all four concatenated.
    fn sppf(&mut self, name: &str, x: &str, c1: usize, c2: usize) -> String {
        let hidden = c1 / 2;
        let mut parts = vec![self.conv(&format!("{name}.cv1"), x, c1, hidden, 1, 1, 1, true)];
        for i in 0..3 {
            let attrs = vec![attr_ints("kernel_shape", &[5, 5]), attr_ints("pads", &[2; 4]), attr_ints("strides", &[1, 1])];
            let last = parts[i].clone();
            parts.push(self.onnx.node("MaxPool", &format!("{name}.m.{i}"), &[&last], attrs));
        }
        let joined = self.concat(&format!("{name}.cat"), &parts);
        self.conv(&format!("{name}.cv2"), &joined, 4 * hidden, c2, 1, 1, 1, true)
    }

    /// `C2PSA(c1, c1, n=2)`: half the channels through position-sensitive attention blocks.
    fn c2psa(&mut self, name: &str, x: &str, c1: usize) -> String {
        let c = c1 / 2;
        let y = self.conv(&format!("{name}.cv1"), x, c1, 2 * c, 1, 1, 1, true);
        let parts = self.split(&format!("{name}.split"), &y, &[c, c], 1);
        let mut b = parts[1].clone();
        for i in 0..REPEATS {
            b = self.psa_block(&format!("{name}.m.{i}"), &b, c);
        }
        let joined = self.concat(&format!("{name}.cat"), &[parts[0].clone(), b]);
        self.conv(&format!("{name}.cv2"), &joined, 2 * c, c1, 1, 1, 1, true)
    }

    /// `PSABlock(c, attn_ratio=0.5, num_heads=c // 64)`: attention then a 2x feed-forward, each
    /// with its residual. A narrowed network keeps at least one head.
    fn psa_block(&mut self, name: &str, x: &str, c: usize) -> String {
        let a = self.attention(&format!("{name}.attn"), x, c, (c / 64).max(1));
        let x = self.onnx.node("Add", &format!("{name}.add1"), &[x, &a], vec![]);
        let f = self.conv(&format!("{name}.ffn.0"), &x, c, 2 * c, 1, 1, 1, true);
        let f = self.conv(&format!("{name}.ffn.1"), &f, 2 * c, c, 1, 1, 1, false);
        self.onnx.node("Add", &format!("{name}.add2"), &[&x, &f], vec![])
    }

    /// ultralytics `Attention(dim, num_heads, attn_ratio=0.5)` on `[N, dim, H, W]`.
    fn attention(&mut self, name: &str, x: &str, dim: usize, heads: usize) -> String {
        let head_dim = dim / heads;
        let key_dim = head_dim / 2;
        let qkv = self.conv(&format!("{name}.qkv"), x, dim, dim + 2 * key_dim * heads, 1, 1, 1, false);
        // [N, heads, 2 key_dim + head_dim, H W], then q, k, v along the third axis.
        let grouped = self.reshape(&format!("{name}.view"), &qkv, &[0, heads as i64, (2 * key_dim + head_dim) as i64, -1]);
        let qkv = self.split(&format!("{name}.split"), &grouped, &[key_dim, key_dim, head_dim], 2);
        let (q, k, v) = (&qkv[0], &qkv[1], &qkv[2]);
        let qt = self.onnx.node("Transpose", &format!("{name}.qt"), &[q], vec![attr_ints("perm", &[0, 1, 3, 2])]);
        let scores = self.onnx.node("MatMul", &format!("{name}.qk"), &[&qt, k], vec![]);
        let scale = self.onnx.constant(&format!("{name}.scale"), &[], &[(key_dim as f32).powf(-0.5)]);
        let scores = self.onnx.node("Mul", &format!("{name}.scaled"), &[&scores, &scale], vec![]);
        let weights = self.onnx.node("Softmax", &format!("{name}.softmax"), &[&scores], vec![attr_int("axis", -1)]);
        let wt = self.onnx.node("Transpose", &format!("{name}.wt"), &[&weights], vec![attr_ints("perm", &[0, 1, 3, 2])]);
        let attended = self.onnx.node("MatMul", &format!("{name}.av"), &[v, &wt], vec![]);
        // Back to [N, dim, H, W]: the input's own shape.
        let shape = self.onnx.node("Shape", &format!("{name}.shape"), &[x], vec![]);
        let attended = self.onnx.node("Reshape", &format!("{name}.unview"), &[&attended, &shape], vec![]);
        let v_map = self.onnx.node("Reshape", &format!("{name}.v"), &[v, &shape], vec![]);
        let pe = self.conv(&format!("{name}.pe"), &v_map, dim, dim, 3, 1, dim, false);
        let sum = self.onnx.node("Add", &format!("{name}.pe_add"), &[&attended, &pe], vec![]);
        self.conv(&format!("{name}.proj"), &sum, dim, dim, 1, 1, 1, false)
    }

    /// Nearest-neighbour upsampling by 2 (`nn.Upsample(None, 2, "nearest")` as exported).
    fn upsample(&mut self, name: &str, x: &str) -> String {
        let scales = self.onnx.constant(&format!("{name}.scales"), &[4], &[1.0, 1.0, 2.0, 2.0]);
        let attrs = vec![attr_str("coordinate_transformation_mode", "asymmetric"), attr_str("mode", "nearest"), attr_str("nearest_mode", "floor")];
        self.onnx.node("Resize", name, &[x, "", &scales], attrs)
    }

    /// ultralytics `Detect` (YOLO11, exported): per level the box and class branches, joined
    /// over the levels, DFL, anchor decoding, class sigmoids; writes `output0`.
    fn detect(&mut self, name: &str, levels: [(&str, usize); 3], shape: &YoloShape) {
        let c2 = 16.max(levels[0].1 / 4).max(4 * REG_MAX);
        let c3 = levels[0].1.max(CLASSES.min(100));
        let mut flat = Vec::new();
        for (i, (x, ch)) in levels.into_iter().enumerate() {
            let b = self.conv(&format!("{name}.cv2.{i}.0"), x, ch, c2, 3, 1, 1, true);
            let b = self.conv(&format!("{name}.cv2.{i}.1"), &b, c2, c2, 3, 1, 1, true);
            let b = self.conv2d(&format!("{name}.cv2.{i}.2"), &b, c2, 4 * REG_MAX, 1, 1, 1, None);
            let c = self.conv(&format!("{name}.cv3.{i}.0.0"), x, ch, ch, 3, 1, ch, true);
            let c = self.conv(&format!("{name}.cv3.{i}.0.1"), &c, ch, c3, 1, 1, 1, true);
            let c = self.conv(&format!("{name}.cv3.{i}.1.0"), &c, c3, c3, 3, 1, c3, true);
            let c = self.conv(&format!("{name}.cv3.{i}.1.1"), &c, c3, c3, 1, 1, 1, true);
            let c = self.conv2d(&format!("{name}.cv3.{i}.2"), &c, c3, CLASSES, 1, 1, 1, Some(shape.class_bias));
            let level = self.concat(&format!("{name}.level{i}"), &[b, c]);
            flat.push(self.reshape(&format!("{name}.flat{i}"), &level, &[0, (4 * REG_MAX + CLASSES) as i64, -1]));
        }
        let all = self.onnx.node("Concat", &format!("{name}.cat"), &[&flat[0], &flat[1], &flat[2]], vec![attr_int("axis", 2)]);
        let parts = self.split(&format!("{name}.split"), &all, &[4 * REG_MAX, CLASSES], 1);
        // DFL: [N, 4, 16, A] -> softmax over the 16 bins -> expected bin.
        let a = anchors(shape.size) as i64;
        let bins = self.reshape(&format!("{name}.dfl.view"), &parts[0], &[0, 4, REG_MAX as i64, a]);
        let bins = self.onnx.node("Transpose", &format!("{name}.dfl.transpose"), &[&bins], vec![attr_ints("perm", &[0, 2, 1, 3])]);
        let bins = self.onnx.node("Softmax", &format!("{name}.dfl.softmax"), &[&bins], vec![attr_int("axis", 1)]);
        let ramp: Vec<f32> = (0..REG_MAX).map(|i| i as f32).collect();
        let ramp = self.onnx.constant(&format!("{name}.dfl.conv.weight"), &[1, REG_MAX, 1, 1], &ramp);
        let dist = self.onnx.node("Conv", &format!("{name}.dfl.conv"), &[&bins, &ramp], vec![attr_ints("kernel_shape", &[1, 1])]);
        let dist = self.reshape(&format!("{name}.dfl.out"), &dist, &[0, 4, a]);
        // dist2bbox(xywh=True) * strides, anchors at cell centres in grid units.
        let (mut points, mut strides) = (vec![Vec::new(), Vec::new()], Vec::new());
        for s in STRIDES {
            let cells = shape.size / s;
            for y in 0..cells {
                for x in 0..cells {
                    points[0].push(x as f32 + 0.5);
                    points[1].push(y as f32 + 0.5);
                    strides.push(s as f32);
                }
            }
        }
        let anchor_points = self.onnx.constant(&format!("{name}.anchors"), &[1, 2, a as usize], &points.concat());
        let strides = self.onnx.constant(&format!("{name}.strides"), &[1, a as usize], &strides);
        let lt_rb = self.split(&format!("{name}.dist"), &dist, &[2, 2], 1);
        let x1y1 = self.onnx.node("Sub", &format!("{name}.x1y1"), &[&anchor_points, &lt_rb[0]], vec![]);
        let x2y2 = self.onnx.node("Add", &format!("{name}.x2y2"), &[&anchor_points, &lt_rb[1]], vec![]);
        let sum = self.onnx.node("Add", &format!("{name}.xy_sum"), &[&x1y1, &x2y2], vec![]);
        let two = self.onnx.constant(&format!("{name}.two"), &[], &[2.0]);
        let centre = self.onnx.node("Div", &format!("{name}.centre"), &[&sum, &two], vec![]);
        let wh = self.onnx.node("Sub", &format!("{name}.wh"), &[&x2y2, &x1y1], vec![]);
        let boxes = self.onnx.node("Concat", &format!("{name}.xywh"), &[&centre, &wh], vec![attr_int("axis", 1)]);
        let boxes = self.onnx.node("Mul", &format!("{name}.scaled"), &[&boxes, &strides], vec![]);
        let scores = self.onnx.node("Sigmoid", &format!("{name}.scores"), &[&parts[1]], vec![]);
        self.onnx.nodes.push(pb::NodeProto {
            input: vec![boxes, scores],
            output: vec![OUTPUT_NAME.into()],
            name: format!("{name}.output"),
            op_type: "Concat".into(),
            attribute: vec![attr_int("axis", 1)],
            ..Default::default()
        });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// At full width and 640 px the generated network has the layers of ultralytics 8.4.190's own
    /// ONNX export of `yolo11l.yaml` (`YOLO("yolo11l.yaml").export(format="onnx", opset=17,
    /// simplify=False)`, counted with onnx 1.23.2): its compute nodes by type, its grouped
    /// (depthwise) convolutions and its 25,310,688 weights. The export's Identity, Constant, Shape and
    /// Gather nodes only carry shapes and constants, which we write as initializers. Writes the
    /// model where `MLPERF_YOLO_ONNX` says, for the PyTorch comparator (`scripts/onnx_torch.py`).
    #[test]
    fn the_full_size_network_has_ultralytics_yolo11l_layers() {
        let model = yolo11(&YoloShape { size: 640, width_divisor: 1, class_bias: -2.0 }, 1);
        let graph = model.graph.as_ref().expect("graph");
        let mut ops = BTreeMap::new();
        for node in &graph.node {
            *ops.entry(node.op_type.as_str()).or_insert(0usize) += 1;
        }
        // The layers that carry the work; the Detect head's box decoding and the attention's
        // reshapes are written with a few different element-wise and shape nodes than the export's.
        let expected = [("Conv", 174), ("MatMul", 4), ("MaxPool", 3), ("Resize", 2), ("Sigmoid", 160), ("Softmax", 3), ("Transpose", 5)];
        let compute: BTreeMap<&str, usize> = ops.iter().filter(|(op, _)| expected.iter().any(|(e, _)| e == *op)).map(|(op, n)| (*op, *n)).collect();
        assert_eq!(compute, BTreeMap::from(expected), "compute nodes (all: {ops:?})");
        let grouped = graph.node.iter().filter(|n| n.op_type == "Conv" && n.attribute.iter().any(|a| a.name == "group" && a.i > 1)).count();
        assert_eq!(grouped, 8, "depthwise convolutions");
        let weights: i64 = graph.initializer.iter().map(|t| t.dims.iter().product::<i64>()).sum();
        println!("{weights} weights");
        if let Ok(path) = std::env::var("MLPERF_YOLO_ONNX") {
            std::fs::write(path, prost::Message::encode_to_vec(&model)).expect("write the model");
        }
    }

    const SMALL: YoloShape = YoloShape { size: 64, width_divisor: 16, class_bias: -2.0 };

    /// The GPU's convnet engine imports the whole network: the backbone as images, the attention
    /// and the head as dense values, `output0` dense `[84, A]`.
    #[test]
    fn the_network_imports_into_the_gpu_convnet_engine() {
        use crate::engines::gpu::convnet::import::TensorOp;
        use crate::engines::gpu::convnet::import::{OpKind, import};
        let (net, _) = import(&yolo11(&SMALL, 7), &[3, SMALL.size, SMALL.size]).expect("imports");
        let out = &net.values[net.output()];
        assert!(out.dense, "output0 is dense");
        assert_eq!(out.dims(), vec![4 + CLASSES, anchors(SMALL.size)]);
        let count = |f: &dyn Fn(&TensorOp) -> bool| net.ops.iter().filter(|op| matches!(&op.kind, OpKind::Tensor(t) if f(t))).count();
        assert_eq!(count(&|t| matches!(t, TensorOp::MaxPool { .. })), 3);
        assert_eq!(count(&|t| matches!(t, TensorOp::Upsample { .. })), 2);
        assert_eq!(count(&|t| matches!(t, TensorOp::MatMul { .. })), 4);
        assert_eq!(count(&|t| matches!(t, TensorOp::MatMul { a_transposed, b_transposed, .. } if a_transposed != b_transposed)), 4, "q and the scores read transposed, not copied");
        assert_eq!(count(&|t| matches!(t, TensorOp::Softmax { .. })), 3);
        assert_eq!(count(&|t| matches!(t, TensorOp::Pointwise { .. })), 1, "DFL's expectation");
        let convs = net.ops.iter().filter(|op| matches!(op.kind, OpKind::Conv { .. })).count();
        assert_eq!(convs, 173, "every convolution but DFL's runs on cuDNN");
        let silu = net.ops.iter().filter(|op| matches!(op.kind, OpKind::Conv { act: crate::engines::gpu::convnet::import::Act::Silu, .. })).count();
        assert_eq!(silu, 159, "SiLU fused into its convolution (the 160th Sigmoid is the class scores')");
        assert_eq!(count(&|t| matches!(t, TensorOp::Activation(_))), 1, "the class scores' sigmoid");
    }

    /// At half the real widths (every channel count a multiple of 8, as at full width) every
    /// channel concatenation (C3k2, C3k, SPPF, C2PSA, the neck, the head's box and class rows)
    /// takes its inputs in place: it copies nothing (C2PSA's split still copies the half it keeps,
    /// since its other half is not concatenated), and no value is overwritten before its last read.
    #[test]
    fn concatenations_take_their_inputs_in_place() {
        use crate::engines::gpu::convnet::import::{OpKind, import};
        use crate::engines::gpu::convnet::place::{assert_schedule_keeps_values, places};
        let (mut net, _) = import(&yolo11(&YoloShape { size: 64, width_divisor: 2, class_bias: -2.0 }, 7), &[3, 64, 64]).expect("imports");
        net.places = places(&net);
        assert_schedule_keeps_values(&net);
        let (mut placed, mut copied) = (0, Vec::new());
        for op in net.ops.iter().filter(|op| op.kind == OpKind::Concat) {
            let mut at = 0;
            for &v in &op.inputs {
                if net.lies_in(v, op.output, at) {
                    placed += 1;
                } else {
                    copied.push(format!("{} input {v}", op.name));
                }
                at += net.values[v].channels;
            }
        }
        println!("{placed} concatenation inputs in place; copied: {copied:?}");
        assert!(placed > 0 && copied.is_empty(), "{placed} in place; copied: {copied:?}");
    }

    /// ultralytics' own export (`MLPERF_YOLO_EXPORT`: `YOLO("yolo11l.yaml").export(format="onnx",
    /// opset=17)`, 101 MB, not in the repository) imports into the GPU's convnet engine too, its
    /// shape arithmetic (Shape, Gather, Add on the head's index) evaluated at import.
    #[test]
    #[ignore = "needs ultralytics' export (MLPERF_YOLO_EXPORT)"]
    fn ultralytics_export_imports_into_the_gpu_convnet_engine() {
        let path = std::env::var("MLPERF_YOLO_EXPORT").expect("MLPERF_YOLO_EXPORT");
        let model: pb::ModelProto = prost::Message::decode(std::fs::read(path).expect("read").as_slice()).expect("onnx");
        let (net, _) = crate::engines::gpu::convnet::import::import(&model, &[3, 640, 640]).expect("imports");
        let out = &net.values[net.output()];
        assert_eq!((out.dense, out.dims()), (true, vec![4 + CLASSES, anchors(640)]));
        println!("{} ops, {} values", net.ops.len(), net.values.len());
    }

    /// The convnet engine's `output0` for `images` (CHW bytes of `size`), a plan of `batch` built
    /// from `path`, and the time per batch of `runs` graph replays (ms).
    fn gpu_output(path: &std::path::Path, size: usize, batch: usize, images: &[Vec<u8>], runs: usize) -> (Vec<f32>, f64) {
        use crate::engines::gpu::convnet::{builder, exec};
        let input = [3, size, size];
        let request = builder::ConvnetRequest { model_path: path, ordinal: 0, batch, input: &input, workspace_bytes: 1 << 30, cut: None };
        let started = std::time::Instant::now();
        let plan = builder::build(&request, &mut |_| {}).expect("plan");
        println!("yolo_gpu: plan of {} at batch {batch} built in {:.1} s", path.display(), started.elapsed().as_secs_f64());
        let model = exec::Convnet::load(0, &plan).expect("load");
        let mut slot = exec::Slot::new(&model, 1 << 30, true).expect("slot");
        let pixels: Vec<f32> = images.iter().flat_map(|i| i.iter().map(|&v| f32::from(v) / 255.0)).collect();
        let out = slot.run_host(&pixels).expect("run");
        let ms = if runs > 0 { slot.time_batches(runs).expect("time") } else { 0.0 };
        if runs > 0 {
            print_profile(&slot, &plan, batch, ms);
        }
        (out, ms)
    }

    /// Where a batch's time goes on `slot` (a plan of `batch`, `ms` a graph replay): each op timed
    /// alone, by kind, and the slowest ops with their shapes.
    pub(crate) fn print_profile(slot: &crate::engines::gpu::convnet::exec::Slot, plan: &crate::engines::gpu::convnet::plan::ConvnetPlan, batch: usize, ms: f64) {
        use crate::engines::gpu::convnet::import::OpKind;
        let times = slot.profile().expect("profile");
        let ops = &plan.header.net.ops;
        let first_word = |debug: String| debug.split([' ', '(', '{']).next().unwrap_or("").to_string();
        let kind = |k: &OpKind| match k {
            OpKind::Tensor(t) => format!("tensor {}", first_word(format!("{t:?}"))),
            k => first_word(format!("{k:?}")),
        };
        let mut by_kind = std::collections::BTreeMap::<String, (f32, usize)>::new();
        for (op, &us) in ops.iter().zip(&times) {
            let e = by_kind.entry(kind(&op.kind)).or_default();
            (e.0, e.1) = (e.0 + us, e.1 + 1);
        }
        let total: f32 = times.iter().sum();
        println!("yolo_gpu profile at batch {batch}: ops alone {:.2} ms (graph {ms:.2} ms)", total / 1000.0);
        for (k, (us, count)) in &by_kind {
            println!("  {k:<24} {count:>4} ops {:>8.1} us {:>5.1} %", us, 100.0 * us / total);
        }
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by(|&a, &b| times[b].total_cmp(&times[a]));
        let values = &plan.header.net.values;
        let shape = |v: usize| format!("{}x{:?}", values[v].channels, values[v].spatial);
        for &i in order.iter().take(40) {
            println!("  slowest: {:<40} {:>8.1} us {:<12} {} -> {}", ops[i].name, times[i], kind(&ops[i].kind), shape(ops[i].inputs[0]), shape(ops[i].output));
        }
    }

    fn random_images(n: usize, size: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = crate::engines::synthetic::rng::SplitMix64::derive(seed, "yolo-gpu-images", 0);
        (0..n).map(|_| (0..3 * size * size).map(|_| (rng.unit() * 255.0) as u8).collect()).collect()
    }

    #[test]
    #[ignore = "needs a GPU"]
    fn yolo_gpu_matches_the_cpu_engine() {
        let dir = std::env::temp_dir().join(format!("mlperf-yolo-gpu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("small.onnx");
        std::fs::write(&small, prost::Message::encode_to_vec(&yolo11(&SMALL, 7))).unwrap();
        let images = random_images(2, SMALL.size, 1);
        let (gpu, _) = gpu_output(&small, SMALL.size, 2, &images, 0);
        let cpu_engine = super::super::cpu::CpuYoloEngine::load(&small, 2).unwrap();
        let views: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
        let cpu = cpu_engine.output(&views).unwrap();
        let agreement = super::super::gpu::OutputAgreement::of(&gpu, &cpu, anchors(SMALL.size));
        println!("yolo_gpu small ({} px): {agreement}", SMALL.size);
        assert!(agreement.acceptable(), "{agreement}");
        // Full size where MLPERF_YOLO_ONNX names a 640 px network: agreement on one image, then
        // the time per batch at 1 and MLPERF_YOLO_BATCH (32).
        if let Ok(path) = std::env::var("MLPERF_YOLO_ONNX") {
            let path = std::path::PathBuf::from(path);
            let images = random_images(1, 640, 2);
            let (gpu, ms1) = gpu_output(&path, 640, 1, &images, 200);
            let cpu = super::super::cpu::CpuYoloEngine::load(&path, 1).unwrap().output(&[images[0].as_slice()]).unwrap();
            let agreement = super::super::gpu::OutputAgreement::of(&gpu, &cpu, anchors(640));
            println!("yolo_gpu full size: {agreement}; batch 1: {ms1:.3} ms ({:.1} img/s)", 1000.0 / ms1);
            let batch: usize = std::env::var("MLPERF_YOLO_BATCH").ok().and_then(|b| b.parse().ok()).unwrap_or(32);
            let (_, ms) = gpu_output(&path, 640, batch, &random_images(batch, 640, 3), 20);
            println!("yolo_gpu full size: batch {batch}: {ms:.2} ms per batch, {:.1} img/s", batch as f64 * 1000.0 / ms);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
