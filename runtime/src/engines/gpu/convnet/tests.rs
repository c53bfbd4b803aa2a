//! CI tests of the convnet engine (import, shapes, fusion, plan framing) and its opt-in GPU tests
//! (`--ignored convnet_gpu`): each op's graph against tract within fp16 tolerance.

use super::import::{Act, Net, OpKind, import};
use super::plan::{BUILDER_VERSION, ConvnetHeader, ConvnetPlan, GpuIdentity, key};
use crate::engines::gpu::plan::{PlanStatus, check, require_fresh, sha256_hex};
use crate::engines::onnx_writer::{Dim, GraphWriter, attr_float, attr_int, attr_ints, attr_str, value_info};
use crate::engines::synthetic::rng::SplitMix64;
use tract_onnx::pb;
use tract_onnx::prelude::*;

/// A one-input model around `build`, which adds nodes to the writer reading "x" and returns the
/// output name; input shape `[1, shape...]` and output `[1, out...]`.
pub(super) fn model(shape: &[usize], out: &[usize], build: impl FnOnce(&mut GraphWriter, &mut SplitMix64) -> String) -> pb::ModelProto {
    let mut g = GraphWriter::default();
    let mut rng = SplitMix64::derive(7, "convnet-test", 0);
    let y = build(&mut g, &mut rng);
    let dims = |s: &[usize]| std::iter::once(Dim::Value(1)).chain(s.iter().map(|&d| Dim::Value(d))).collect();
    // The graph's output is renamed by an identity-free trick: the last node's output is "y".
    let last = g.nodes.iter_mut().rev().find(|n| n.output[0] == y).expect("the output's node");
    last.output[0] = "y".into();
    g.into_model("test".into(), String::new(), vec![value_info("x", dims(shape))], vec![value_info("y", dims(out))])
}

pub(super) fn weights(g: &mut GraphWriter, rng: &mut SplitMix64, name: &str, dims: &[usize], bound: f32) -> String {
    let values: Vec<f32> = (0..dims.iter().product()).map(|_| rng.symmetric() * bound).collect();
    g.constant(name, dims, &values)
}

#[allow(clippy::too_many_arguments)] // a test's node builder: each argument is one attribute
fn conv(g: &mut GraphWriter, rng: &mut SplitMix64, name: &str, x: &str, cin: usize, cout: usize, k: &[usize], stride: i64, pad: i64, groups: usize, bias: bool) -> String {
    let mut dims = vec![cout, cin / groups];
    dims.extend(k);
    let w = weights(g, rng, &format!("{name}.w"), &dims, 0.3);
    let mut inputs = vec![x.to_string(), w];
    if bias {
        inputs.push(weights(g, rng, &format!("{name}.b"), &[cout], 0.2));
    }
    let inputs: Vec<&str> = inputs.iter().map(|s| s.as_str()).collect();
    let attrs = vec![
        attr_ints("kernel_shape", &k.iter().map(|&v| v as i64).collect::<Vec<_>>()),
        attr_ints("strides", &vec![stride; k.len()]),
        attr_ints("pads", &vec![pad; 2 * k.len()]),
        attr_int("group", groups as i64),
    ];
    g.node("Conv", name, &inputs, attrs)
}

/// The small graphs of every op the engine runs: (name, input shape, output shape, model).
pub(super) fn op_graphs() -> Vec<(&'static str, Vec<usize>, Vec<usize>, pb::ModelProto)> {
    vec![
        (
            "conv3d_relu",
            vec![1, 6, 8, 10],
            vec![16, 3, 4, 5],
            model(&[1, 6, 8, 10], &[16, 3, 4, 5], |g, r| {
                let y = conv(g, r, "c", "x", 1, 16, &[3, 3, 3], 2, 1, 1, false);
                g.node("Relu", "r", &[&y], vec![])
            }),
        ),
        (
            "conv2d_silu_bias",
            vec![8, 12, 12],
            vec![12, 12, 12],
            model(&[8, 12, 12], &[12, 12, 12], |g, r| {
                let y = conv(g, r, "c", "x", 8, 12, &[3, 3], 1, 1, 1, true);
                then_silu(g, "c", &y)
            }),
        ),
        // Stems: stride-2 convolutions of few channels, run as a space-to-depth and a stride-1 one.
        (
            "stem_space_to_depth",
            vec![3, 12, 10],
            vec![16, 6, 5],
            model(&[3, 12, 10], &[16, 6, 5], |g, r| {
                let y = conv(g, r, "c", "x", 3, 16, &[3, 3], 2, 1, 1, true);
                then_silu(g, "c", &y)
            }),
        ),
        ("stem_space_to_depth_5x5", vec![1, 9, 7], vec![8, 5, 4], model(&[1, 9, 7], &[8, 5, 4], |g, r| conv(g, r, "c", "x", 1, 8, &[5, 5], 2, 2, 1, false))),
        ("depthwise_conv2d", vec![16, 9, 9], vec![16, 5, 5], model(&[16, 9, 9], &[16, 5, 5], |g, r| conv(g, r, "c", "x", 16, 16, &[3, 3], 2, 1, 16, true))),
        // Stride 1: the kernel's column path, large enough (at the GPU test's batch of 2) for two
        // rows a thread, the last run of each column a single row.
        (
            "depthwise_conv2d_columns",
            vec![64, 185, 185],
            vec![64, 185, 185],
            model(&[64, 185, 185], &[64, 185, 185], |g, r| {
                let y = conv(g, r, "c", "x", 64, 64, &[3, 3], 1, 1, 64, true);
                then_silu(g, "c", &y)
            }),
        ),
        (
            "conv_transpose3d",
            vec![16, 3, 4, 5],
            vec![8, 6, 8, 10],
            model(&[16, 3, 4, 5], &[8, 6, 8, 10], |g, r| {
                let w = weights(g, r, "t.w", &[16, 8, 2, 2, 2], 0.3);
                let b = weights(g, r, "t.b", &[8], 0.2);
                g.node("ConvTranspose", "t", &["x", &w, &b], vec![attr_ints("kernel_shape", &[2, 2, 2]), attr_ints("strides", &[2, 2, 2])])
            }),
        ),
        (
            "instance_norm_relu",
            vec![8, 4, 6, 5],
            vec![8, 4, 6, 5],
            model(&[8, 4, 6, 5], &[8, 4, 6, 5], |g, r| {
                let s = weights(g, r, "n.s", &[8], 1.0);
                let b = weights(g, r, "n.b", &[8], 0.5);
                let y = g.node("InstanceNormalization", "n", &["x", &s, &b], vec![attr_float("epsilon", 1e-5)]);
                g.node("Relu", "r", &[&y], vec![])
            }),
        ),
        (
            "concat_channels",
            vec![8, 4, 4, 4],
            vec![12, 4, 4, 4],
            model(&[8, 4, 4, 4], &[12, 4, 4, 4], |g, r| {
                // 4 channels (padded to 8) then 8: the slices follow the logical channels.
                let a = conv(g, r, "a", "x", 8, 4, &[1, 1, 1], 1, 0, 1, true);
                g.node("Concat", "cat", &[&a, "x"], vec![attr_int("axis", 1)])
            }),
        ),
        (
            // The bias cancels in the norm (dropped at import); 3,072 positions span two blocks of
            // the statistics and 24 channels three vectors per row.
            "conv_bias_instance_norm",
            vec![8, 16, 16, 12],
            vec![24, 16, 16, 12],
            model(&[8, 16, 16, 12], &[24, 16, 16, 12], |g, r| {
                let y = conv(g, r, "c", "x", 8, 24, &[3, 3, 3], 1, 1, 1, true);
                let s = weights(g, r, "n.s", &[24], 1.0);
                let b = weights(g, r, "n.b", &[24], 0.5);
                g.node("InstanceNormalization", "n", &[&y, &s, &b], vec![attr_float("epsilon", 1e-5)])
            }),
        ),
        (
            // Every count a multiple of 8: the copies move 8 channels at a time.
            "concat_wide",
            vec![8, 4, 4, 4],
            vec![24, 4, 4, 4],
            model(&[8, 4, 4, 4], &[24, 4, 4, 4], |g, r| {
                let a = conv(g, r, "a", "x", 8, 16, &[1, 1, 1], 1, 0, 1, true);
                g.node("Concat", "cat", &["x", &a], vec![attr_int("axis", 1)])
            }),
        ),
        ("sigmoid_alone", vec![8, 5, 5], vec![8, 5, 5], model(&[8, 5, 5], &[8, 5, 5], |g, _| g.node("Sigmoid", "s", &["x"], vec![]))),
        (
            // YOLO's C2f: a split's halves, a residual, a max pool, all concatenated; every input
            // is written in place (the split's source moves so that its halves are views).
            "c2f_in_place",
            vec![8, 6, 6],
            vec![16, 6, 6],
            model(&[8, 6, 6], &[16, 6, 6], |g, r| {
                let u = silu(g, r, "cv1", "x", 8, 16, 1);
                let split = g.constant_i64("halves", &[2], &[8, 8]);
                g.nodes.push(pb::NodeProto {
                    input: vec![u, split],
                    output: vec!["a".into(), "b".into()],
                    name: "split".into(),
                    op_type: "Split".into(),
                    attribute: vec![attr_int("axis", 1)],
                    ..Default::default()
                });
                let m1 = silu(g, r, "m1", "b", 8, 8, 3);
                let m2 = conv(g, r, "m2", &m1, 8, 8, &[3, 3], 1, 1, 1, true);
                let sum = g.node("Add", "sum", &[&m1, &m2], vec![]);
                let pool = g.node("MaxPool", "pool", &[&sum], vec![attr_ints("kernel_shape", &[3, 3]), attr_ints("pads", &[1; 4]), attr_ints("strides", &[1, 1])]);
                let cat = g.node("Concat", "cat", &["a", "b", &m1, &sum, &pool], vec![attr_int("axis", 1)]);
                conv(g, r, "cv2", &cat, 40, 16, &[1, 1], 1, 0, 1, true)
            }),
        ),
        (
            // The neck's join: an upsampled value written in place, the network's input copied.
            "upsample_concat",
            vec![8, 8, 8],
            vec![8, 8, 8],
            model(&[8, 8, 8], &[8, 8, 8], |g, r| {
                let down = conv(g, r, "down", "x", 8, 16, &[3, 3], 2, 1, 1, true);
                let scales = g.constant("up.scales", &[4], &[1.0, 1.0, 2.0, 2.0]);
                let attrs = vec![attr_str("coordinate_transformation_mode", "asymmetric"), attr_str("mode", "nearest"), attr_str("nearest_mode", "floor")];
                let up = g.node("Resize", "up", &[&down, "", &scales], attrs);
                let cat = g.node("Concat", "cat", &[&up, "x"], vec![attr_int("axis", 1)]);
                conv(g, r, "out", &cat, 24, 8, &[1, 1], 1, 0, 1, true)
            }),
        ),
        (
            // The attention's products: each reads a transposed operand through its Transpose; the
            // scores' scale is folded into their product.
            "matmul_transposed",
            vec![8, 4, 4],
            vec![8, 4, 4],
            model(&[8, 4, 4], &[8, 4, 4], |g, _| {
                let heads = g.constant_i64("heads", &[4], &[0, 2, 4, 16]);
                let x = g.node("Reshape", "x.heads", &["x", &heads], vec![]);
                let xt = g.node("Transpose", "xt", &[&x], vec![attr_ints("perm", &[0, 1, 3, 2])]);
                let scores = g.node("MatMul", "scores", &[&xt, &x], vec![]);
                let scale = g.constant("scale", &[], &[0.25]);
                let scores = g.node("Mul", "scaled", &[&scores, &scale], vec![]);
                let st = g.node("Transpose", "st", &[&scores], vec![attr_ints("perm", &[0, 1, 3, 2])]);
                let mixed = g.node("MatMul", "mixed", &[&x, &st], vec![]);
                let image = g.constant_i64("image", &[4], &[0, 8, 4, 4]);
                g.node("Reshape", "back", &[&mixed, &image], vec![])
            }),
        ),
    ]
}

/// A 2-D convolution (stride 1, same padding, bias) followed by SiLU as exported (`Sigmoid`, `Mul`).
fn silu(g: &mut GraphWriter, rng: &mut SplitMix64, name: &str, x: &str, cin: usize, cout: usize, k: usize) -> String {
    let y = conv(g, rng, name, x, cin, cout, &[k, k], 1, (k / 2) as i64, 1, true);
    then_silu(g, name, &y)
}

/// SiLU of `y` as exported: `y * Sigmoid(y)`, nodes named after `name`.
fn then_silu(g: &mut GraphWriter, name: &str, y: &str) -> String {
    let s = g.node("Sigmoid", &format!("{name}.s"), &[y], vec![]);
    g.node("Mul", &format!("{name}.m"), &[y, &s], vec![])
}

fn imported(name: &str) -> Net {
    let (_, input, _, m) = op_graphs().into_iter().find(|(n, ..)| *n == name).expect("a test graph");
    let mut net = import(&m, &input).expect("imports").0;
    net.places = super::place::places(&net);
    net
}

#[test]
fn every_op_graph_imports_with_the_model_s_output_shape() {
    for (name, input, output, m) in op_graphs() {
        let (net, blob) = import(&m, &input).unwrap_or_else(|e| panic!("{name}: {e}"));
        let out = &net.values[net.output()];
        assert_eq!(std::iter::once(out.channels).chain(out.spatial.iter().copied()).collect::<Vec<_>>(), output, "{name}");
        assert_eq!(out.padded % 8, 0, "{name}: rows padded for tensor cores");
        assert!(net.ops.iter().all(|op| op.inputs.iter().all(|&i| i < op.output)), "{name}: ops in dataflow order");
        let weights: usize = m.graph.as_ref().unwrap().initializer.len();
        assert_eq!(blob.0.is_empty(), weights == 0, "{name}");
    }
}

#[test]
fn activations_fuse_into_their_producer() {
    let net = imported("conv3d_relu");
    assert_eq!(net.ops.len(), 1);
    assert!(matches!(&net.ops[0].kind, OpKind::Conv { act: Act::Relu, bias: None, .. }));
    let net = imported("conv2d_silu_bias");
    assert_eq!(net.ops.len(), 1, "Sigmoid and Mul fold into the convolution");
    assert!(matches!(&net.ops[0].kind, OpKind::Conv { act: Act::Silu, bias: Some(_), .. }));
    let net = imported("instance_norm_relu");
    assert!(matches!(&net.ops[..], [op] if matches!(op.kind, OpKind::InstanceNorm { act: Act::Relu, .. })));
    let net = imported("conv_bias_instance_norm");
    assert!(matches!(&net.ops[0].kind, OpKind::Conv { bias: None, .. }), "a bias before an instance norm cancels: dropped");
    let net = imported("sigmoid_alone");
    assert!(matches!(&net.ops[..], [op] if op.kind == OpKind::Activation(Act::Sigmoid)));
}

/// A stem's stride-2 convolution becomes a space-to-depth and a stride-1 convolution of half the
/// kernel; the two, computed here as the kernels do from the plan's weights (fp16) and the
/// op's definition, give tract's output of the original.
#[test]
fn stems_run_as_a_space_to_depth_and_a_stride_1_convolution() {
    use super::import::TensorOp;
    for (name, half) in [("stem_space_to_depth", 2), ("stem_space_to_depth_5x5", 3)] {
        let (_, input, out, m) = op_graphs().into_iter().find(|(n, ..)| *n == name).unwrap();
        let (net, blob) = import(&m, &input).unwrap();
        let [OpKind::Tensor(TensorOp::SpaceToDepth { pad }), OpKind::Conv { geometry: g, weights, bias, act, .. }] = [&net.ops[0].kind, &net.ops[1].kind] else {
            panic!("{name}: {:?}", net.ops)
        };
        assert_eq!((g.kernel.as_slice(), g.stride.as_slice(), g.pad.as_slice()), (&[half, half][..], &[1, 1][..], &[0, 0][..]), "{name}");
        assert!(net.ops.iter().all(|op| op.inputs.iter().all(|&i| i < op.output)), "{name}: values in dataflow order");
        let (x, s, y) = (&net.values[0], &net.values[net.ops[0].output], &net.values[net.output()]);
        assert_eq!((s.channels, y.spatial.as_slice()), (4 * x.channels, &out[1..]), "{name}");
        let mut rng = SplitMix64::derive(5, name, 0);
        let image: Vec<f32> = (0..input.iter().product::<usize>()).map(|_| half::f16::from_f32(rng.symmetric()).to_f32()).collect();
        let (c, h, w) = (x.channels, x.spatial[0], x.spatial[1]);
        // The space-to-depth as TensorOp::SpaceToDepth defines it.
        let at = |yy: usize, xx: usize, j: usize| {
            let sub = j / c;
            let (iy, ix) = ((2 * yy + sub / 2) as isize - pad[0] as isize, (2 * xx + sub % 2) as isize - pad[1] as isize);
            let inside = j < 4 * c && iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w;
            if inside { image[(j % c * h + iy as usize) * w + ix as usize] } else { 0.0 }
        };
        let f16_at = |i: usize| half::f16::from_le_bytes([blob.0[weights + 2 * i], blob.0[weights + 2 * i + 1]]).to_f32();
        let f32_at = |o: usize| bias.map_or(0.0, |b| f32::from_le_bytes(blob.0[b + 4 * o..b + 4 * o + 4].try_into().unwrap()));
        let mut got = Vec::new();
        for o in 0..y.channels {
            for oy in 0..y.spatial[0] {
                for ox in 0..y.spatial[1] {
                    let mut sum = f32_at(o);
                    for ty in 0..half {
                        for tx in 0..half {
                            for j in 0..s.padded {
                                sum += f16_at(((o * half + ty) * half + tx) * s.padded + j) * at(oy + ty, ox + tx, j);
                            }
                        }
                    }
                    got.push(if *act == Act::Silu { sum / (1.0 + (-sum).exp()) } else { sum });
                }
            }
        }
        let mut shape = vec![1];
        shape.extend(&input);
        let want = tract_output(&m, &shape, &image);
        let scale = want.iter().fold(0f32, |a, v| a.max(v.abs()));
        let err = got.iter().zip(&want).fold(0f32, |a, (g, w)| a.max((g - w).abs())) / scale;
        assert!(got.len() == want.len() && err < 2e-3, "{name}: {err:.2e} of the output's range");
    }
}

/// The builder times our kernels against cuDNN where they apply: depthwise layers, and inputs of 8
/// or 16 padded channels into at most 64 outputs without a residual.
#[test]
fn our_kernels_are_offered_where_they_apply() {
    use super::import::OwnKernel;
    let offered = |name: &str| {
        let net = imported(name);
        net.ops.iter().filter(|op| matches!(op.kind, OpKind::Conv { .. })).map(|op| net.own_kernel(op)).collect::<Vec<_>>()
    };
    assert_eq!(offered("depthwise_conv2d"), [Some(OwnKernel::Depthwise)]);
    assert_eq!(offered("stem_space_to_depth"), [Some(OwnKernel::FewChannels)], "16 channels after the space-to-depth");
    assert_eq!(offered("conv2d_silu_bias"), [Some(OwnKernel::FewChannels)], "8 channels in, 16 out");
    assert_eq!(offered("conv3d_relu"), [None], "3-D");
    let wide = model(&[8, 6, 6], &[72, 6, 6], |g, r| conv(g, r, "c", "x", 8, 72, &[3, 3], 1, 1, 1, false));
    let (net, _) = import(&wide, &[8, 6, 6]).unwrap();
    assert_eq!(net.own_kernel(&net.ops[0]), None, "72 outputs: more than a warp's 64");
}

/// Concatenations without copies: C2f's inputs all written in place (its split's halves views of
/// the moved source), the neck's upsampled value in place beside the copied network input; 3D-UNet's
/// concatenation (a padded 4-channel input) copies; no schedule lets a value be overwritten before
/// its last read.
#[test]
fn concatenation_inputs_are_written_in_place_where_the_rows_allow() {
    use super::import::Place;
    use super::place::assert_schedule_keeps_values;
    for (name, ..) in op_graphs() {
        assert_schedule_keeps_values(&imported(name));
    }
    let copies = |net: &Net| {
        let op = net.ops.iter().find(|op| op.kind == OpKind::Concat).expect("a concatenation");
        let own = |v: usize| net.places[v] == Place::own(v);
        op.inputs.iter().filter(|&&v| own(v) || net.places[v].root != net.places[op.output].root).count()
    };
    let net = imported("c2f_in_place");
    assert_eq!(copies(&net), 0, "{:?}", net.places);
    let slices: Vec<_> = net.ops.iter().filter(|op| matches!(op.kind, OpKind::Tensor(super::import::TensorOp::ChannelSlice { .. }))).collect();
    let cat = net.ops.iter().find(|op| op.kind == OpKind::Concat).unwrap().output;
    assert_eq!(slices.iter().map(|op| net.places[op.output]).collect::<Vec<_>>(), [Place { root: cat, offset: 0 }, Place { root: cat, offset: 8 }], "the halves are views");
    assert_eq!(copies(&imported("upsample_concat")), 1, "the network's input is copied");
    assert_eq!(copies(&imported("concat_channels")), 2, "4 channels padded to 8: copied");
}

/// A MatMul reads a Transpose's source transposed, and the Transpose's copy is gone; a scalar
/// product after it becomes its alpha.
#[test]
fn products_read_transposed_operands_and_fold_their_scale() {
    use super::import::TensorOp;
    let net = imported("matmul_transposed");
    let flags: Vec<_> = net
        .ops
        .iter()
        .filter_map(|op| if let OpKind::Tensor(TensorOp::MatMul { a_transposed, b_transposed, alpha, .. }) = op.kind { Some((a_transposed, b_transposed, alpha)) } else { None })
        .collect();
    assert_eq!(flags, [(true, false, 0.25), (false, true, 1.0)]);
    let names: Vec<_> = net.ops.iter().map(|op| op.name.as_str()).collect();
    assert!(!names.iter().any(|n| ["xt", "st", "scaled"].contains(n)), "{names:?}");
}

#[test]
fn weights_are_laid_out_channels_last_and_padded() {
    // One input channel padded to 8: weight [16, 1, 3,3,3] -> [16][27][8], zeros past channel 0.
    let (_, input, _, m) = op_graphs().remove(0);
    let (net, blob) = import(&m, &input).unwrap();
    let OpKind::Conv { weights, geometry, .. } = &net.ops[0].kind else { panic!() };
    assert_eq!((geometry.kernel.as_slice(), geometry.stride.as_slice(), geometry.pad.as_slice()), (&[3, 3, 3][..], &[2, 2, 2][..], &[1, 1, 1][..]));
    let w = m.graph.as_ref().unwrap().initializer.iter().find(|t| t.name == "c.w").unwrap();
    let onnx = crate::engines::onnx_reader::f32_values(w).unwrap();
    let at = |o: usize, t: usize, c: usize| half::f16::from_le_bytes([blob.0[weights + 2 * ((o * 27 + t) * 8 + c)], blob.0[weights + 2 * ((o * 27 + t) * 8 + c) + 1]]).to_f32();
    for (o, t) in [(0, 0), (5, 13), (15, 26)] {
        assert!((at(o, t, 0) - onnx[o * 27 + t]).abs() < 1e-3, "({o}, {t})");
        assert!((1..8).all(|c| at(o, t, c) == 0.0), "padding is zero");
    }
}

#[test]
fn unsupported_graphs_are_refused_naming_the_node() {
    let m = model(&[8, 4, 4], &[8, 4, 4], |g, _| g.node("Softplus", "soft", &["x"], vec![]));
    let e = import(&m, &[8, 4, 4]).unwrap_err().to_string();
    assert!(e.contains("soft") && e.contains("Softplus"), "{e}");
    let m = model(&[8, 4, 4], &[8, 4, 4], |g, r| {
        let w = weights(g, r, "c.w", &[8, 8, 3, 3], 0.3);
        g.node("Conv", "asym", &["x", &w], vec![attr_ints("kernel_shape", &[3, 3]), attr_ints("pads", &[1, 1, 0, 0])])
    });
    let e = import(&m, &[8, 4, 4]).unwrap_err().to_string();
    assert!(e.contains("asym") && e.contains("symmetric"), "{e}");
}

fn gpu() -> GpuIdentity {
    GpuIdentity { name: "NVIDIA H200".into(), compute_capability: "9.0".into(), driver: 13000, cudnn: 91400 }
}

fn plan() -> ConvnetPlan {
    let (_, input, _, m) = op_graphs().remove(3);
    let (net, blob) = import(&m, &input).unwrap();
    let header = ConvnetHeader {
        key: key(&"ab".repeat(32), &gpu(), 4, &input, 1 << 30, None),
        model_path: "t.onnx".into(),
        net,
        blob_len: blob.0.len(),
        blob_sha256: sha256_hex(&blob.0),
        verification: String::new(),
    };
    ConvnetPlan { header, blob: blob.0 }
}

#[test]
fn plans_round_trip_and_stale_or_corrupt_ones_are_refused() {
    let p = plan();
    let back = ConvnetPlan::from_bytes(&p.to_bytes()).unwrap();
    assert_eq!((back.header, back.blob), (p.header.clone(), p.blob.clone()));
    assert!(p.header.key.input.ends_with(&format!("convnet builder {BUILDER_VERSION}")));

    let dir = std::env::temp_dir().join(format!("mlperf-convnet-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p.plan");
    super::builder::write(&p, &path).unwrap();
    assert_eq!(check(&path, &p.header.key), PlanStatus::Fresh);
    let other = key(&"ab".repeat(32), &gpu(), 8, &[16, 3, 4, 5], 1 << 30, None);
    let e = require_fresh(&path, &other).unwrap_err().to_string();
    assert!(e.contains("batch_size: plan has 4, needed 8") && e.contains("mlperf generate_engines"), "{e}");
    // A plan a family cut elsewhere (or not at all) is stale too.
    let cut = key(&"ab".repeat(32), &gpu(), 4, &p.header.net.values[0].dims(), 1 << 30, Some("yolo detect levels"));
    let e = require_fresh(&path, &cut).unwrap_err().to_string();
    assert!(e.contains("cut at yolo detect levels") && e.contains("mlperf generate_engines"), "{e}");
    let mut bytes = p.to_bytes();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let e = ConvnetPlan::load(&path).unwrap_err().to_string();
    assert!(e.contains("corrupt") && e.contains("generate_engines"), "{e}");
    std::fs::write(&path, b"junk").unwrap();
    assert!(require_fresh(&path, &p.header.key).unwrap_err().to_string().contains("is corrupt"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// tract's output of `m` for `input` (`[batch, shape...]`).
pub(super) fn tract_output(m: &pb::ModelProto, shape: &[usize], input: &[f32]) -> Vec<f32> {
    let model = tract_onnx::onnx()
        .model_for_proto_model(m)
        .unwrap()
        .with_input_fact(0, f32::fact(shape).into())
        .unwrap()
        .into_typed()
        .unwrap()
        .into_optimized()
        .unwrap()
        .into_runnable()
        .unwrap();
    let out = model.run(tvec!(Tensor::from_shape(shape, input).unwrap().into_tvalue())).unwrap();
    out[0].cast_to::<f32>().unwrap().try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
}

#[test]
#[ignore = "needs a GPU"]
fn convnet_gpu_each_op_graph_matches_tract() {
    let dir = std::env::temp_dir().join(format!("mlperf-convnet-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let batch = 2;
    // Every graph runs whatever an earlier one did, so that one device run reports them all.
    let mut failures = Vec::new();
    for (name, input, _, m) in op_graphs() {
        let path = dir.join(format!("{name}.onnx"));
        std::fs::write(&path, prost::Message::encode_to_vec(&m)).unwrap();
        let mut shape = vec![batch];
        shape.extend(&input);
        let mut rng = SplitMix64::derive(3, name, 0);
        let x: Vec<f32> = (0..batch * input.iter().product::<usize>()).map(|_| rng.symmetric()).collect();
        let run = || -> Result<(Vec<f32>, Vec<f32>), crate::engines::gpu::GpuError> {
            let request = super::builder::ConvnetRequest { model_path: &path, ordinal: 0, batch, input: &input, workspace_bytes: 1 << 28, cut: None };
            // Whether one of our kernels or cuDNN runs a convolution is the builder's timing.
            let plan = super::builder::build(&request, &mut |line| {
                if line.contains(" kernel") {
                    println!("convnet_gpu {name}: {line}")
                }
            })?;
            let model = super::exec::Convnet::load(0, &plan)?;
            let mut slot = super::exec::Slot::new(&model, 1 << 28, true)?;
            Ok((slot.run_host(&x)?, slot.run_host(&x)?))
        };
        let (got, again) = match run() {
            Ok(r) => r,
            Err(e) => {
                println!("convnet_gpu {name}: FAILED {e}");
                failures.push(name);
                continue;
            }
        };
        let want = tract_output(&m, &shape, &x);
        let scale = want.iter().fold(0f32, |a, v| a.max(v.abs())).max(1e-3);
        let err = got.iter().zip(&want).fold(0f32, |a, (g, w)| a.max((g - w).abs())) / scale;
        println!("convnet_gpu {name}: max error {err:.2e} of the output's range {scale:.3}; graph replay identical: {}", got == again);
        if got.len() != want.len() || got != again || err.is_nan() || err >= 1e-2 {
            failures.push(name);
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
    std::fs::remove_dir_all(dir).unwrap();
}
