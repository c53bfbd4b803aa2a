//! The builder's graph passes and lowering, checked on the CPU with a plain reference executor
//! (fp32, NCHW, loops) against tract on the same ONNX.

use super::lower::{lower, pad_channels, CHANNEL_ALIGN, SPACE_TO_DEPTH_CHANNEL_ALIGN};
use super::network::{assign_buffers, build, fold_batch_norms, fuse_activations, fuse_residuals, import, space_to_depth, Network, Op, SpaceToDepth};
use crate::engines::cpu::{CpuEngine, InputDtype, InputSpec, Layout};
use crate::engines::synthetic::{model, synthetic_image_f32};

/// Runs a network on one NCHW image with loops (the semantics each op has in ONNX).
fn execute(net: &Network, image: &[f32]) -> Vec<f32> {
    let shapes = net.shapes();
    let mut values: Vec<Vec<f32>> = vec![image.to_vec()];
    for (i, node) in net.nodes.iter().enumerate() {
        let x = &values[node.input];
        let (c, h, w) = shapes[node.input];
        let (oc, oh, ow) = shapes[i + 1];
        let mut out = vec![0f32; oc * oh * ow];
        match &node.op {
            Op::Conv(conv) => {
                let k = conv.kernel;
                for o in 0..oc {
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let mut acc = conv.bias[o];
                            for ci in 0..c {
                                for ky in 0..k {
                                    let iy = (oy * conv.stride + ky) as isize - conv.pad as isize;
                                    if iy < 0 || iy >= h as isize {
                                        continue;
                                    }
                                    for kx in 0..k {
                                        let ix = (ox * conv.stride + kx) as isize - conv.pad as isize;
                                        if ix >= 0 && ix < w as isize {
                                            acc += conv.weight[((o * c + ci) * k + ky) * k + kx] * x[(ci * h + iy as usize) * w + ix as usize];
                                        }
                                    }
                                }
                            }
                            let at = (o * oh + oy) * ow + ox;
                            if let Some(r) = conv.residual {
                                acc += values[r][at];
                            }
                            out[at] = if conv.relu { acc.max(0.0) } else { acc };
                        }
                    }
                }
            }
            Op::BatchNorm { scale, shift, mean, variance, epsilon } => {
                for ch in 0..c {
                    let a = scale[ch] / (variance[ch] + epsilon).sqrt();
                    for p in 0..h * w {
                        out[ch * h * w + p] = (x[ch * h * w + p] - mean[ch]) * a + shift[ch];
                    }
                }
            }
            Op::Relu => out.iter_mut().zip(x).for_each(|(o, v)| *o = v.max(0.0)),
            Op::Add(other) => out.iter_mut().enumerate().for_each(|(j, o)| *o = x[j] + values[*other][j]),
            Op::MaxPool { kernel, stride, pad } => {
                for ch in 0..c {
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let mut m = f32::NEG_INFINITY;
                            for ky in 0..*kernel {
                                for kx in 0..*kernel {
                                    let (iy, ix) = ((oy * stride + ky) as isize - *pad as isize, (ox * stride + kx) as isize - *pad as isize);
                                    if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                                        m = m.max(x[(ch * h + iy as usize) * w + ix as usize]);
                                    }
                                }
                            }
                            out[(ch * oh + oy) * ow + ox] = m;
                        }
                    }
                }
            }
            Op::GlobalAveragePool => {
                for ch in 0..c {
                    out[ch] = x[ch * h * w..(ch + 1) * h * w].iter().sum::<f32>() / (h * w) as f32;
                }
            }
        }
        values.push(out);
    }
    values[net.output].clone()
}

fn max_relative_difference(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}

const SIZE: usize = 32;

fn count(net: &Network, f: impl Fn(&Op) -> bool) -> usize {
    net.nodes.iter().filter(|n| f(&n.op)).count()
}

#[test]
fn resnet50_fuses_to_convolutions_and_pooling_only() {
    let net = build(&model::resnet50_with_batch_norms(SIZE, 7)).unwrap();
    assert_eq!(count(&net, |op| matches!(op, Op::Conv(_))), 54, "53 convolutions and the classifier");
    assert_eq!(count(&net, |op| matches!(op, Op::Conv(c) if c.residual.is_some())), 16, "one residual add per bottleneck");
    assert_eq!(count(&net, |op| matches!(op, Op::Conv(c) if c.relu)), 49);
    assert_eq!(count(&net, |op| matches!(op, Op::MaxPool { .. })), 1);
    assert_eq!(count(&net, |op| matches!(op, Op::GlobalAveragePool)), 1);
    assert_eq!(net.nodes.len(), 56);
    assert_eq!(net.classes, 1000);
}

#[test]
fn each_pass_preserves_what_the_network_computes() {
    let proto = model::resnet50_with_batch_norms(SIZE, 7);
    let image = synthetic_image_f32(3, SIZE, Layout::Nchw);
    let mut net = import(&proto).unwrap();
    let reference = execute(&net, &image);
    for (name, pass) in [("fold", fold_batch_norms as fn(&mut Network)), ("residuals", fuse_residuals), ("activations", fuse_activations)] {
        let before = net.nodes.len();
        pass(&mut net);
        assert!(net.nodes.len() < before, "{name} removed nodes");
        let d = max_relative_difference(&execute(&net, &image), &reference);
        assert!(d < 1e-4, "{name}: logits moved by {d}");
    }
}

#[test]
fn the_imported_graph_computes_what_tract_computes() {
    for (proto, what) in [(model::resnet50(SIZE, 11), "folded"), (model::resnet50_with_batch_norms(SIZE, 11), "with batch norms")] {
        let net = build(&proto).unwrap();
        let spec = InputSpec { batch_size: 2, channels: 3, height: SIZE, width: SIZE, layout: Layout::Nchw, dtype: InputDtype::F32 };
        let cpu = CpuEngine::from_proto(&proto, what, spec).unwrap();
        let images: Vec<Vec<f32>> = (0..2).map(|i| synthetic_image_f32(i, SIZE, Layout::Nchw)).collect();
        let bytes: Vec<Vec<u8>> = images.iter().map(|im| im.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
        let refs: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
        let tract = cpu.scores(&refs).unwrap();
        for (i, image) in images.iter().enumerate() {
            let d = max_relative_difference(&execute(&net, image), &tract[i * 1000..(i + 1) * 1000]);
            assert!(d < 1e-3, "{what}, image {i}: {d}");
        }
    }
}

#[test]
fn channel_padding_changes_no_logit() {
    let mut net = build(&model::resnet50(SIZE, 5)).unwrap();
    // A classifier of 1001 classes is padded to 1008.
    let Op::Conv(fc) = &mut net.nodes.last_mut().unwrap().op else { panic!("classifier last") };
    fc.weight.extend(vec![0.01; fc.cin]);
    fc.bias.push(0.5);
    fc.cout = 1001;
    net.classes = 1001;
    let image = synthetic_image_f32(1, SIZE, Layout::Nchw);
    let reference = execute(&net, &image);
    let mut padded = net.clone();
    pad_channels(&mut padded, CHANNEL_ALIGN);
    assert_eq!(padded.channels, 8);
    let Op::Conv(fc) = &padded.nodes.last().unwrap().op else { panic!() };
    assert_eq!(fc.cout, 1008);
    let mut image8 = image.clone();
    image8.extend(vec![0.0; 5 * SIZE * SIZE]);
    let out = execute(&padded, &image8);
    assert!(max_relative_difference(&out[..1001], &reference) < 1e-6);
    assert!(out[1001..].iter().all(|&v| v == 0.0));
}

#[test]
fn the_space_to_depth_stem_computes_what_the_stride_2_stem_computes() {
    let net = build(&model::resnet50(SIZE, 5)).unwrap();
    let image = synthetic_image_f32(1, SIZE, Layout::Nchw);
    let reference = execute(&net, &image);
    let mut rewritten = net.clone();
    let layout = space_to_depth(&mut rewritten);
    // ResNet50's 7x7/2 stem, pad 3: a 4x4/1 kernel on a grid shifted by 4 pixels, 16 + 3 cells wide.
    assert_eq!(layout, SpaceToDepth { block: 2, offset: 4 });
    let Op::Conv(stem) = &rewritten.nodes.iter().find(|n| n.input == 0).unwrap().op else { panic!("the stem is a convolution") };
    assert_eq!((stem.kernel, stem.stride, stem.pad, stem.cin), (4, 1, 0, 12));
    assert_eq!((rewritten.channels, rewritten.height, rewritten.width), (12, 19, 19));
    // Rearranged as the input conversion kernel does, then padded as the lowering does.
    pad_channels(&mut rewritten, SPACE_TO_DEPTH_CHANNEL_ALIGN);
    assert_eq!(rewritten.channels, 32);
    let out = execute(&rewritten, &rearranged(layout, &net, &rewritten, &image));
    assert!(max_relative_difference(&out, &reference) < 1e-5, "{:?} vs {:?}", &out[..4], &reference[..4]);
    // A network whose first layer is not a stride-2 convolution keeps its image as it is.
    let mut pooled_first = net.clone();
    let Op::Conv(first) = &mut pooled_first.nodes[0].op else { panic!() };
    first.stride = 1;
    assert_eq!(space_to_depth(&mut pooled_first), SpaceToDepth::IDENTITY);
}

/// `image` (NCHW, `original`'s input) laid out for `rewritten`'s input as `layout` says (what the
/// GPU's input conversion kernel does).
fn rearranged(layout: SpaceToDepth, original: &Network, rewritten: &Network, image: &[f32]) -> Vec<f32> {
    let (c, h, w) = (rewritten.channels, rewritten.height, rewritten.width);
    let mut out = vec![0f32; c * h * w];
    for ch in 0..c {
        for a in 0..h {
            for b in 0..w {
                if let Some((ic, y, x)) = layout.source(original.channels, original.height, original.width, ch, a, b) {
                    out[(ch * h + a) * w + b] = image[(ic * original.height + y) * original.width + x];
                }
            }
        }
    }
    out
}

#[test]
fn space_to_depth_is_exact_for_any_stride_2_kernel_and_padding() {
    // One stride-2 convolution on a non-square image with odd and even sides; its whole output map
    // is compared, element by element.
    let value = |i: usize| ((i * 2654435761) % 2001) as f32 / 1000.0 - 1.0;
    for (kernel, pad) in [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2), (7, 3), (3, 0), (4, 2)] {
        for (height, width) in [(9, 10), (12, 7)] {
            let (cin, cout) = (3, 4);
            let conv = super::network::Conv {
                cin,
                cout,
                kernel,
                stride: 2,
                pad,
                weight: (0..cout * cin * kernel * kernel).map(value).collect(),
                bias: (0..cout).map(|o| value(o + 7)).collect(),
                residual: None,
                relu: false,
            };
            let net = Network { channels: cin, height, width, nodes: vec![super::network::Node { name: "stem".into(), op: Op::Conv(conv), input: 0 }], output: 1, classes: cout };
            let image: Vec<f32> = (0..cin * height * width).map(|i| value(i + 11)).collect();
            let reference = execute(&net, &image);
            let mut rewritten = net.clone();
            let layout = space_to_depth(&mut rewritten);
            assert_eq!((layout.block, rewritten.shapes()[1]), (2, net.shapes()[1]), "kernel {kernel} pad {pad} on {height}x{width}");
            let out = execute(&rewritten, &rearranged(layout, &net, &rewritten, &image));
            // The same products summed in another order: fp32 rounding only.
            let worst = max_relative_difference(&out, &reference);
            assert!(worst < 1e-6, "kernel {kernel} pad {pad} on {height}x{width}: differs by {worst} of the largest output");
        }
    }
}

#[test]
fn lowering_writes_krsc_fp16_weights_and_aligned_offsets() {
    let net = build(&model::resnet50(SIZE, 5)).unwrap();
    let lowered = lower(&net).unwrap();
    assert_eq!((lowered.input_channels, lowered.input_layout), (32, SpaceToDepth { block: 2, offset: 4 }));
    // The first convolution after the stem and the pool: check its offsets and one weight.
    let layer = lowered.layers.iter().filter(|l| matches!(l.kind, super::plan::LayerKind::Conv { .. })).nth(1).unwrap();
    let super::plan::LayerKind::Conv { weight_offset, bias_offset, .. } = layer.kind.clone() else { unreachable!() };
    assert_eq!((weight_offset % 256, bias_offset % 256), (0, 0));
    let node = net.nodes.iter().find(|n| n.name == layer.name).unwrap();
    let Op::Conv(conv) = &node.op else { panic!() };
    let (o, c, r, s) = (3, 5, 0, 0);
    let k = conv.kernel;
    let krsc = ((o * k + r) * k + s) * conv.cin + c;
    let at = weight_offset + 2 * krsc;
    let got = half::f16::from_le_bytes([lowered.blob[at], lowered.blob[at + 1]]);
    assert_eq!(got, half::f16::from_f32(conv.weight[((o * conv.cin + c) * k + r) * k + s]));
}

#[test]
fn buffers_are_never_reused_while_a_value_is_live() {
    let net = build(&model::resnet50(SIZE, 5)).unwrap();
    let (buffer_of, sizes) = assign_buffers(&net);
    assert!(sizes.len() <= 5, "ResNet50 needs a handful of buffers, not {}", sizes.len());
    let shapes = net.shapes();
    // Last reader of each value.
    let mut last = vec![0usize; shapes.len()];
    for (i, n) in net.nodes.iter().enumerate() {
        last[n.input] = i + 1;
        if let Op::Conv(c) = &n.op {
            if let Some(r) = c.residual {
                last[r] = i + 1;
            }
        }
    }
    for v in 1..shapes.len() {
        let (c, h, w) = shapes[v];
        assert!(sizes[buffer_of[v]] >= c * h * w);
        // No value live when v is written (produced before v, read at or after v) shares its buffer.
        for u in 0..v {
            if last[u] >= v {
                assert_ne!(buffer_of[u], buffer_of[v], "value {v} overwrites live value {u}");
            }
        }
    }
}

#[test]
fn unsupported_graphs_are_refused_by_name() {
    let mut proto = model::resnet50(SIZE, 5);
    let graph = proto.graph.as_mut().unwrap();
    graph.node[1].op_type = "Sigmoid".into();
    let name = graph.node[1].name.clone();
    let e = build(&proto).unwrap_err();
    assert!(e.contains(&format!("node {name:?}")) && e.contains("Sigmoid is not supported"), "{e}");

    // A Relu reading the image fuses into nothing.
    let mut proto = model::resnet50(SIZE, 5);
    let graph = proto.graph.as_mut().unwrap();
    let first = graph.node[0].clone();
    graph.node.insert(0, tract_onnx::pb::NodeProto { op_type: "Relu".into(), name: "pre".into(), input: first.input[..1].to_vec(), output: vec!["pre".into()], ..Default::default() });
    graph.node[1].input[0] = "pre".into();
    let e = build(&proto).unwrap_err();
    assert!(e.contains("\"pre\" is a Relu that follows no convolution"), "{e}");
}
