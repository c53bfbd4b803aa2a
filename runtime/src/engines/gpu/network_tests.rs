//! The builder's graph passes and lowering, checked on the CPU with a plain reference executor
//! (fp32, NCHW, loops) against tract on the same ONNX.

use super::calibration::{self, Calibration, CalibrationSet};
use super::export;
use super::lower::{CHANNEL_ALIGN, SPACE_TO_DEPTH_CHANNEL_ALIGN, lower, pad_channels};
use super::network::{
    INT8_MAX, Network, Op, SpaceToDepth, WeightScaling, assign_buffers, build, fold_batch_norms, fuse_activations, fuse_conv_quantization, fuse_pool_conversions, fuse_residuals,
    import, quantize, space_to_depth,
};
use crate::engines::cpu::CpuEngine;
use crate::engines::synthetic::{model, synthetic_image_f32};
use crate::engines::{ElementType, InputSpec, Layout};

/// Runs a network on one NCHW image and returns its logits.
fn execute(net: &Network, image: &[f32]) -> Vec<f32> {
    execute_all(net, image).swap_remove(net.output)
}

/// Every value of a network run on one NCHW image, with loops (the semantics each op has in ONNX;
/// int8 values are f32 values on their int8 grid).
fn execute_all(net: &Network, image: &[f32]) -> Vec<Vec<f32>> {
    let shapes = net.shapes();
    let mut values: Vec<Vec<f32>> = vec![image.to_vec()];
    for i in 0..net.nodes.len() {
        let out = execute_node(net, &shapes, i, &values);
        values.push(out);
    }
    values
}

/// The output of node `i` computed from `values` (at least the values before it).
fn execute_node(net: &Network, shapes: &[(usize, usize, usize)], i: usize, values: &[Vec<f32>]) -> Vec<f32> {
    let node = &net.nodes[i];
    {
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
                            let y = if conv.relu { acc.max(0.0) } else { acc };
                            out[at] = conv.output_scale().map_or(y, |scale| fake_int8(y, scale));
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
            Op::MaxPool { kernel, stride, pad, int8_output } => {
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
                            out[(ch * oh + oy) * ow + ox] = int8_output.map_or(m, |scale| fake_int8(m, scale));
                        }
                    }
                }
            }
            Op::Quantize { scale } => out.iter_mut().zip(x).for_each(|(o, v)| *o = fake_int8(*v, *scale)),
            Op::Dequantize => out.copy_from_slice(x),
            Op::GlobalAveragePool => {
                for ch in 0..c {
                    out[ch] = x[ch * h * w..(ch + 1) * h * w].iter().sum::<f32>() / (h * w) as f32;
                }
            }
        }
        out
    }
}

/// `x` rounded to the int8 grid of `scale` and saturated, in f32 (what int8 storage keeps).
fn fake_int8(x: f32, scale: f32) -> f32 {
    (x / scale).round().clamp(-INT8_MAX, INT8_MAX) * scale
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

/// The CPU engine's (tract's) logits of `proto` for `images` (NCHW f32, `SIZE` px).
fn tract_logits(proto: &tract_onnx::pb::ModelProto, what: &str, images: &[Vec<f32>]) -> Vec<f32> {
    let spec = InputSpec { batch_size: images.len(), channels: 3, height: SIZE, width: SIZE, layout: Layout::Nchw, element: ElementType::F32, scale: 1.0 };
    let cpu = CpuEngine::from_proto(proto, what, spec).unwrap();
    let bytes: Vec<Vec<u8>> = images.iter().map(|im| im.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
    cpu.scores(&bytes.iter().map(|b| &b[..]).collect::<Vec<_>>()).unwrap()
}

#[test]
fn the_imported_graph_computes_what_tract_computes() {
    let images: Vec<Vec<f32>> = (0..2).map(|i| synthetic_image_f32(i, SIZE, Layout::Nchw)).collect();
    for (proto, what) in [(model::resnet50(SIZE, 11), "folded"), (model::resnet50_with_batch_norms(SIZE, 11), "with batch norms")] {
        let net = build(&proto).unwrap();
        let tract = tract_logits(&proto, what, &images);
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
                int8: None,
                quantized_output: None,
            };
            let net = Network {
                channels: cin,
                height,
                width,
                nodes: vec![super::network::Node { name: "stem".into(), op: Op::Conv(conv), input: 0, tensor: "stem".into() }],
                output: 1,
                classes: cout,
            };
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
    let lowered = lower(&net, true).unwrap();
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
        if let Op::Conv(c) = &n.op
            && let Some(r) = c.residual
        {
            last[r] = i + 1;
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
    let e = build(&proto).unwrap_err().to_string();
    assert!(e.contains(&format!("node {name:?}")) && e.contains("Sigmoid is not supported"), "{e}");

    // A Relu reading the image fuses into nothing.
    let mut proto = model::resnet50(SIZE, 5);
    let graph = proto.graph.as_mut().unwrap();
    let first = graph.node[0].clone();
    graph
        .node
        .insert(0, tract_onnx::pb::NodeProto { op_type: "Relu".into(), name: "pre".into(), input: first.input[..1].to_vec(), output: vec!["pre".into()], ..Default::default() });
    graph.node[1].input[0] = "pre".into();
    let e = build(&proto).unwrap_err().to_string();
    assert!(e.contains("\"pre\" is a Relu that follows no convolution"), "{e}");
}

/// Images the int8 tests calibrate on (the synthetic calibration set, not the checked images).
fn calibration_image(i: usize) -> Vec<f32> {
    synthetic_image_f32(crate::engines::synthetic::image::CALIBRATION_FIRST_INDEX + i, SIZE, Layout::Nchw)
}

/// Largest magnitude of each value's tensor over `images`, by the reference executor.
fn reference_ranges(net: &Network, images: usize) -> std::collections::BTreeMap<String, f32> {
    let mut amax = std::collections::BTreeMap::new();
    for i in 0..images {
        let values = execute_all(net, &calibration_image(i));
        for (node, value) in net.nodes.iter().zip(&values[1..]) {
            let a = value.iter().fold(0f32, |m, v| m.max(v.abs()));
            let entry = amax.entry(node.tensor.clone()).or_insert(0f32);
            *entry = entry.max(a);
        }
    }
    amax
}

#[test]
fn calibration_measures_each_fused_value_under_its_onnx_name() {
    // Batch norms in the model: the names must follow the values through folding and fusion.
    let proto = model::resnet50_with_batch_norms(SIZE, 7);
    let dir = std::env::temp_dir().join(format!("mlperf-calibration-test-{}", std::process::id()));
    let model_path = dir.join("model.onnx");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&model_path, prost::Message::encode_to_vec(&proto)).unwrap();
    let spec = InputSpec { batch_size: 2, channels: 3, height: SIZE, width: SIZE, layout: Layout::Nchw, element: ElementType::F32, scale: 1.0 };
    let library: Vec<Vec<u8>> = (0..4).map(|i| calibration_image(i).iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
    let set = CalibrationSet { source: &library, spec, batch: 2, batches: 2 };
    // The 100th percentile: the bin edge just above the largest magnitude (bins are 1/32 of an
    // octave wide, so at most 1/32 of the value).
    let measured = calibration::measure(&model_path, &set, 100.0).unwrap();

    let net = build(&proto).unwrap();
    let reference = reference_ranges(&net, 4);
    assert_eq!(measured.amax.len(), net.nodes.len(), "one range per fused value");
    assert_eq!((measured.images, measured.model_sha256.clone()), (4, super::plan::file_sha256(&model_path).unwrap()));
    for (tensor, want) in &reference {
        let got = measured.amax[tensor];
        assert!(got >= want * 0.9999 && got <= want * (1.0 + 1.0 / 32.0) + 1e-6, "{tensor}: tract measured {got}, the reference executor's largest magnitude is {want}");
    }

    // The cache: written when missing, reused, and never replaced for another model without force.
    let cache = dir.join("sub/resnet50.cache");
    let (first, outcome) = calibration::ensure(&cache, &model_path, &set, false).unwrap();
    assert_eq!((outcome, first.percentile, first.amax.len()), (calibration::CacheOutcome::Written, calibration::PERCENTILE, measured.amax.len()));
    assert!(first.amax.iter().all(|(t, r)| *r <= measured.amax[t]), "percentile ranges within the largest magnitudes");
    assert_eq!(Calibration::load(&cache).unwrap(), first, "the cache round-trips");
    let (_, outcome) = calibration::ensure(&cache, &model_path, &set, false).unwrap();
    assert_eq!(outcome, calibration::CacheOutcome::Reused);
    std::fs::write(&model_path, prost::Message::encode_to_vec(&model::resnet50_with_batch_norms(SIZE, 8))).unwrap();
    let e = calibration::ensure(&cache, &model_path, &set, false).unwrap_err().to_string();
    assert!(e.contains("was measured on a model with sha256") && e.contains("--force"), "{e}");
    let (again, outcome) = calibration::ensure(&cache, &model_path, &set, true).unwrap();
    assert!(outcome == calibration::CacheOutcome::Written && again.model_sha256 != measured.model_sha256);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn calibration_caches_with_errors_are_refused_with_their_line() {
    let ok = "mlperf-calibration 2 percentile=99.99 model-sha256=ab images=4\nconv_1: 2.5\nlayer1/add: 0.25\n";
    let c = Calibration::parse(ok, "c.cache").unwrap();
    assert_eq!((c.images, c.amax["layer1/add"]), (4, 0.25));
    assert_eq!(Calibration::parse(&c.to_text(), "again").unwrap(), c);
    for (text, want) in [
        ("TRT-8601-EntropyCalibration2\n", "c.cache:1: not a calibration cache"),
        ("mlperf-calibration 2 percentile=99.99 images=4\n", "c.cache:1: the header lacks model-sha256="),
        ("mlperf-calibration 1 max model-sha256=ab images=4\n", "c.cache:1: not a calibration cache"),
        ("mlperf-calibration 2 percentile=99.99 model-sha256=ab images=4\nconv_1 2.5\n", "c.cache:2: no `: `"),
        ("mlperf-calibration 2 percentile=99.99 model-sha256=ab images=4\nconv_1: 2.5\nconv_2: -1\n", "c.cache:3: a range that is not"),
        ("mlperf-calibration 2 percentile=99.99 model-sha256=ab images=4\nconv_1: 2.5\n\nconv_1: 3\n", "c.cache:4: a tensor listed twice"),
    ] {
        let e = Calibration::parse(text, "c.cache").unwrap_err().to_string();
        assert!(e.starts_with(want), "{e}");
    }
}

#[test]
fn int8_runs_between_the_pool_and_the_classifier_and_keeps_the_answers() {
    let net = build(&model::resnet50(SIZE, 5)).unwrap();
    let ranges = reference_ranges(&net, 8);
    let mut q = net.clone();
    assert_eq!(quantize(&mut q, &ranges, &|_| WeightScaling::PerTensor).unwrap(), 52, "every convolution but the stem and the classifier");
    assert_eq!(count(&q, |op| matches!(op, Op::Quantize { .. })), 1);
    assert_eq!(count(&q, |op| matches!(op, Op::Dequantize)), 1);
    for (i, node) in q.nodes.iter().enumerate() {
        let int8_conv = matches!(&node.op, Op::Conv(c) if c.int8.is_some());
        let reads_int8 = int8_conv || matches!(node.op, Op::Dequantize);
        assert_eq!(q.int8_scale(node.input).is_some(), reads_int8, "node {i} {:?} reads the wrong type", node.name);
        match &node.op {
            Op::Quantize { .. } => assert!(matches!(q.producer(node.input).unwrap().op, Op::MaxPool { .. })),
            Op::Dequantize => assert!(matches!(q.nodes[i + 1].op, Op::GlobalAveragePool)),
            Op::Conv(c) => {
                if let Some(r) = c.residual {
                    assert_eq!(q.int8_scale(r).is_some(), int8_conv, "node {:?}: its residual has another type", node.name);
                }
                if let Some(s) = &c.int8 {
                    assert!(s.weight_scales.iter().all(|&w| w == s.weight_scales[0]), "{:?}: one scale per tensor", node.name);
                    assert!(on_int8_grid(c, &s.weight_scales), "{:?}: weights off the int8 grid", node.name);
                }
            }
            _ => {}
        }
    }
    // The answers on images the calibration did not see.
    let images = 24;
    let (mut agree, mut worst) = (0, 0f32);
    for i in 0..images {
        let image = synthetic_image_f32(i, SIZE, Layout::Nchw);
        let (fp32, int8) = (execute(&net, &image), execute(&q, &image));
        agree += usize::from(crate::engines::cpu::argmax(&fp32) == crate::engines::cpu::argmax(&int8));
        worst = worst.max(max_relative_difference(&int8, &fp32));
    }
    eprintln!("int8 vs fp32: top-1 {agree}/{images}, max relative logit error {worst:.3e}");
    assert!(agree * 100 >= images * 90 && worst < 0.15, "top-1 {agree}/{images}, max relative logit error {worst}");

    let mut missing = ranges.clone();
    let tensor = q.nodes.iter().find(|n| matches!(&n.op, Op::Conv(c) if c.int8.is_some())).unwrap().tensor.clone();
    missing.remove(&tensor);
    let e = quantize(&mut net.clone(), &missing, &|_| WeightScaling::PerTensor).unwrap_err().to_string();
    assert!(e.contains(&format!("no range for tensor {tensor:?}")), "{e}");
}

#[test]
fn the_exported_network_computes_what_the_network_computes_int8_rounding_included() {
    let net = build(&model::resnet50(SIZE, 5)).unwrap();
    let images: Vec<Vec<f32>> = (0..3).map(|i| synthetic_image_f32(i, SIZE, Layout::Nchw)).collect();
    let tract = tract_logits(&export::to_onnx(&net).unwrap().model, "fp32", &images);
    for (i, image) in images.iter().enumerate() {
        let d = max_relative_difference(&execute(&net, image), &tract[i * 1000..(i + 1) * 1000]);
        assert!(d < 1e-4, "fp32, image {i}: logits differ by {d}");
    }

    // int8: one value rounded the other way (the two sum in another order) changes later roundings,
    // so the logits drift apart; node by node, from the same inputs, they must agree.
    let mut int8 = net.clone();
    quantize(&mut int8, &reference_ranges(&net, 8), &|_| WeightScaling::PerTensor).unwrap();
    let exported = export::to_onnx(&int8).unwrap();
    let values = tract_values(&exported, &images[0]);
    let shapes = int8.shapes();
    let (mut checked, mut one_step) = (0, 0);
    for (i, node) in int8.nodes.iter().enumerate() {
        let own = execute_node(&int8, &shapes, i, &values);
        let grid = int8.int8_scale(i + 1);
        for (a, b) in own.iter().zip(&values[i + 1]) {
            let d = (a - b).abs();
            match grid {
                Some(step) if d > 1e-6 * b.abs().max(step) => {
                    assert!((d / step - 1.0).abs() < 1e-3, "node {:?}: {a} against tract's {b}, not one step of {step}", node.name);
                    one_step += 1;
                }
                None => assert!(d <= 1e-4 * b.abs().max(1.0), "node {:?}: {a} against tract's {b}", node.name),
                _ => {}
            }
            checked += 1;
        }
    }
    assert!(one_step * 1000 < checked, "{one_step} of {checked} values one rounding step apart");
    assert!(max_relative_difference(&values[int8.output], &execute(&net, &images[0])) > 1e-3, "int8 rounding is in the exported model");
}

/// Every value of the exported network on one image, as tract computes it (index: `ValueId`).
fn tract_values(exported: &export::Exported, image: &[f32]) -> Vec<Vec<f32>> {
    use tract_onnx::prelude::*;
    let mut proto = exported.model.clone();
    let graph = proto.graph.as_mut().unwrap();
    graph.output = exported.values[1..].iter().map(|name| tract_onnx::pb::ValueInfoProto { name: name.clone(), ..Default::default() }).collect();
    let model = tract_onnx::onnx().model_for_proto_model(&proto).unwrap();
    let model = model.with_input_fact(0, f32::fact([1, 3, SIZE, SIZE]).into()).unwrap().into_optimized().unwrap().into_runnable().unwrap();
    let input = tract_ndarray::Array4::from_shape_vec((1, 3, SIZE, SIZE), image.to_vec()).unwrap();
    let outputs = model.run(tvec!(Tensor::from(input).into())).unwrap();
    std::iter::once(image.to_vec()).chain(outputs.iter().map(|t| t.to_plain_array_view::<f32>().unwrap().iter().copied().collect())).collect()
}

/// Whether every output channel's weights are integers in [-127, 127] times its scale.
fn on_int8_grid(c: &super::network::Conv, scales: &[f32]) -> bool {
    c.weight.chunks_exact(c.weight.len() / c.cout).zip(scales).all(|(channel, &scale)| {
        channel.iter().all(|w| {
            let k = w / scale;
            (k - k.round()).abs() < 1e-3 && k.abs() <= 127.5
        })
    })
}

#[test]
fn int8_lowering_writes_int8_weights_f32_biases_and_scale_ratios() {
    use super::plan::{Accumulator, LayerKind};
    let net = build(&model::resnet50(SIZE, 5)).unwrap();
    let ranges = reference_ranges(&net, 2);
    let residual_int8 = |l: &&super::plan::PlannedLayer| matches!(l.kind, LayerKind::Conv { residual: Some(_), accumulator: Accumulator::Int32, .. });
    let f32_at = |blob: &[u8], offset: usize, i: usize| f32::from_le_bytes(blob[offset + 4 * i..offset + 4 * i + 4].try_into().unwrap());

    // Per tensor: the legacy call's scale ratios.
    let mut q = net.clone();
    quantize(&mut q, &ranges, &|_| WeightScaling::PerTensor).unwrap();
    let lowered = lower(&q, true).unwrap();
    let layer = lowered.layers.iter().find(residual_int8).expect("an int8 convolution with a residual");
    let LayerKind::Conv { weight_offset, bias_offset, scale, residual_scale, residual: Some(_), per_channel, .. } = layer.kind else { unreachable!() };
    assert!(!per_channel);
    // Value numbers of the network (the lowering's differ: it fuses the pool's conversions).
    let node = q.nodes.iter().find(|n| n.name == layer.name).unwrap();
    let Op::Conv(conv) = &node.op else { panic!() };
    let residual = conv.residual.unwrap();
    let s = conv.int8.as_ref().unwrap();
    let (o, c, r, t, k) = (3, 5, 0, 0, conv.kernel);
    let stored = lowered.blob[weight_offset + ((o * k + r) * k + t) * conv.cin + c] as i8;
    assert_eq!(stored as f32, (conv.weight[((o * conv.cin + c) * k + r) * k + t] / s.weight_scales[o]).round());
    assert_eq!(f32_at(&lowered.blob, bias_offset, o), conv.bias[o] / s.output_scale, "biases in output units");
    let (x, z) = (q.int8_scale(node.input).unwrap(), q.int8_scale(residual).unwrap());
    assert_eq!((scale, residual_scale), (x * s.weight_scales[0] / s.output_scale, z / s.output_scale));

    // Per channel: the graph's epilogue sums in the residual's units, then rescales.
    let mut q = net.clone();
    quantize(&mut q, &ranges, &|_| WeightScaling::PerChannel).unwrap();
    let lowered = lower(&q, true).unwrap();
    let layer = lowered.layers.iter().find(|l| l.name == layer.name).unwrap();
    let LayerKind::Conv { weight_offset, epilogue_offset: Some(epilogue), per_channel: true, .. } = layer.kind else { panic!("{:?}", layer.kind) };
    let Op::Conv(conv) = &q.nodes.iter().find(|n| n.name == layer.name).unwrap().op else { panic!() };
    let s = conv.int8.as_ref().unwrap();
    assert!(s.weight_scales.iter().any(|&w| w != s.weight_scales[0]), "scales differ between channels");
    assert!(on_int8_grid(conv, &s.weight_scales));
    let stored = lowered.blob[weight_offset + ((o * k + r) * k + t) * conv.cin + c] as i8;
    assert_eq!(stored as f32, (conv.weight[((o * conv.cin + c) * k + r) * k + t] / s.weight_scales[o]).round());
    let cout = conv.cout;
    assert_eq!(f32_at(&lowered.blob, epilogue, o), x * s.weight_scales[o] / z);
    assert_eq!(f32_at(&lowered.blob, epilogue, cout + o), conv.bias[o] / z);
    assert_eq!(f32_at(&lowered.blob, epilogue, 2 * cout + o), z / s.output_scale);

    let LayerKind::Conv { accumulator, scale, residual_scale, .. } = lowered.layers[0].kind else { panic!("the stem first") };
    assert_eq!((accumulator, scale, residual_scale), (Accumulator::Fp32, 1.0, 0.0), "the stem sums in fp32 from fp16");
    let pool = net.nodes.iter().find(|n| matches!(n.op, Op::MaxPool { .. })).unwrap();
    let quantized = lowered.layers.iter().find_map(|l| if let LayerKind::MaxPool { int8_output, .. } = l.kind { int8_output } else { None });
    assert_eq!(quantized, Some(ranges[&pool.tensor] / INT8_MAX), "the pool quantises on its calibrated range");
}

#[test]
fn layers_the_legacy_call_runs_are_quantised_per_tensor_and_keep_their_tuning() {
    use super::builder::{lowered_plan, settle_weight_scaling};
    use super::graph::plan::SerializedPlan;
    use super::plan::{ConvRunner, LayerKind};
    let net = build(&model::resnet50(SIZE, 5)).unwrap();
    let calibration = Calibration { model_sha256: "test".into(), images: 2, percentile: 100.0, amax: reference_ranges(&net, 2) };
    let mut q = net.clone();
    quantize(&mut q, &calibration.amax, &|_| WeightScaling::PerChannel).unwrap();
    let mut plan = lowered_plan(&q, super::plan::tests::key(), std::path::Path::new("model.onnx")).unwrap();
    // What tuning might choose: a graph, our 1x1 kernel (where it fits) and the legacy call in turn.
    let serialized = SerializedPlan { cudnn_version: 91400, gpu: "test GPU".into(), json: r#"{"engineId":7}"#.into() };
    let mut chosen = std::collections::HashMap::new();
    for (i, layer) in plan.header.layers.iter_mut().enumerate() {
        let fits = layer.fits_pointwise();
        if let LayerKind::Conv { epilogue_offset: Some(_), runner, algorithm, measured_us, .. } = &mut layer.kind {
            (*runner, *algorithm) = match i % 3 {
                0 => (ConvRunner::Graph(serialized.clone()), -1),
                1 if fits => (ConvRunner::Pointwise, -1),
                _ => (ConvRunner::Legacy, 1),
            };
            *measured_us = i as f32;
            chosen.insert(layer.name.clone(), runner.clone());
        }
    }
    let count = |wanted: fn(&ConvRunner) -> bool| chosen.values().filter(|r| wanted(r)).count();
    let (graphs, pointwise) = (count(|r| matches!(r, ConvRunner::Graph(_))), count(|r| matches!(r, ConvRunner::Pointwise)));
    assert!(graphs > 10 && pointwise > 5 && graphs + pointwise < 42, "{graphs} graphs, {pointwise} 1x1 kernels");
    assert!(settle_weight_scaling(&mut plan, &mut q, &net, Some(&calibration), &mut |_| {}).unwrap());
    for (i, layer) in plan.header.layers.iter().enumerate() {
        if let LayerKind::Conv { epilogue_offset: Some(_), runner, per_channel, measured_us, algorithm, .. } = &layer.kind {
            assert_eq!((runner, *measured_us), (&chosen[&layer.name], i as f32), "{}", layer.name);
            assert_eq!((*per_channel, *algorithm), (*runner != ConvRunner::Legacy, if *runner == ConvRunner::Legacy { 1 } else { -1 }), "{}", layer.name);
        }
    }
    for node in &q.nodes {
        if let Op::Conv(conv) = &node.op
            && let Some(s) = &conv.int8
        {
            let per_channel = s.scaling == WeightScaling::PerChannel;
            assert_eq!(per_channel, chosen[&node.name] != ConvRunner::Legacy, "{}", node.name);
            assert!(per_channel || s.weight_scales.iter().all(|&w| w == s.weight_scales[0]));
            assert!(on_int8_grid(conv, &s.weight_scales), "{}", node.name);
        }
    }
    assert_eq!(plan.blob, lower(&q, true).unwrap().blob, "the plan holds the requantised network's weights");
    assert_eq!(plan.header.blob_sha256, super::plan::sha256_hex(&plan.blob));
    assert!(!settle_weight_scaling(&mut plan, &mut q, &net, Some(&calibration), &mut |_| {}).unwrap(), "settled once");
}

/// The synthetic ResNet50 (fused, fp32) and it quantised with weights scaled per channel.
fn int8_resnet50() -> (Network, Network) {
    let net = build(&model::resnet50(SIZE, 5)).unwrap();
    let mut q = net.clone();
    quantize(&mut q, &reference_ranges(&net, 2), &|_| WeightScaling::PerChannel).unwrap();
    (net, q)
}

#[test]
fn pool_conversions_fuse_into_the_pooling_and_change_nothing_computed() {
    use super::plan::LayerKind;
    let (_, q) = int8_resnet50();
    let quantized_pool = q.nodes.iter().find_map(|n| match n.op {
        Op::Quantize { scale } => Some(scale),
        _ => None,
    });
    let mut fused = q.clone();
    assert_eq!(fuse_pool_conversions(&mut fused), 2, "the pool's Quantize and the classifier's Dequantize");
    assert_eq!(count(&fused, |op| matches!(op, Op::Quantize { .. } | Op::Dequantize)), 0);
    assert_eq!(fused.nodes.len() + 2, q.nodes.len());
    let pool = fused.nodes.iter().position(|n| matches!(n.op, Op::MaxPool { .. })).unwrap();
    assert_eq!(fused.int8_scale(pool + 1), quantized_pool, "the pool writes int8 on the Quantize's scale");
    let average = fused.nodes.iter().find(|n| matches!(n.op, Op::GlobalAveragePool)).unwrap();
    assert!(fused.int8_scale(average.input).is_some(), "the average pooling reads int8");
    let image = calibration_image(0);
    assert_eq!(execute(&fused, &image), execute(&q, &image));

    let lowered = lower(&q, true).unwrap();
    let kinds: Vec<_> = lowered.layers.iter().map(|l| &l.kind).collect();
    assert!(kinds.iter().any(|k| matches!(k, LayerKind::MaxPool { int8_output: Some(s), .. } if Some(*s) == quantized_pool)));
    assert!(kinds.iter().any(|k| matches!(k, LayerKind::GlobalAveragePool { int8_input: Some(_) })));
    assert!(!kinds.iter().any(|k| matches!(k, LayerKind::Quantize { .. } | LayerKind::Dequantize { .. })));
    // The fp32 network has no conversions to fuse.
    let (mut net, _) = int8_resnet50();
    assert_eq!(fuse_pool_conversions(&mut net), 0);
}

#[test]
fn the_stem_writes_the_pools_int8_on_gpus_with_our_kernels_and_computes_the_same() {
    use super::plan::{ConvRunner, LayerKind};
    let (net, q) = int8_resnet50();
    let mut fused = q.clone();
    fuse_pool_conversions(&mut fused);
    let pool = fused.nodes.iter().position(|n| matches!(n.op, Op::MaxPool { .. })).unwrap();
    let pool_scale = fused.int8_scale(pool + 1);
    let mut stem_int8 = fused.clone();
    assert_eq!(fuse_conv_quantization(&mut stem_int8, &|_, _| true), 1, "the stem alone feeds a pool that writes int8");
    assert_eq!(stem_int8.int8_scale(stem_int8.nodes[pool].input), pool_scale, "the stem writes int8 on the pool's scale");
    let image = calibration_image(1);
    assert_eq!(execute(&stem_int8, &image), execute(&fused, &image), "max pooling commutes with the rounding");
    assert_eq!(fuse_conv_quantization(&mut stem_int8, &|_, _| true), 0, "moved once");

    // Lowered for a GPU with our kernels: the space-to-depth stem on its 12 channels (no padding)
    // runs on the stem kernel, and the pool reads int8.
    let lowered = lower(&q, true).unwrap();
    assert_eq!(lowered.input_channels, super::stem::CHANNELS);
    let stem = &lowered.layers[0];
    assert!(matches!(stem.kind, LayerKind::Conv { kernel: 4, runner: ConvRunner::Stem, quantized_output, .. } if quantized_output == pool_scale), "{:?}", stem.kind);
    assert!(super::stem::fits(stem) && super::stem::runs(stem));
    assert!(lowered.layers.iter().any(|l| matches!(l.kind, LayerKind::MaxPool { int8_input: true, int8_output, .. } if int8_output == pool_scale)));
    assert_eq!(lowered.layers.iter().filter(|l| super::stem::fits(l)).count(), 1);
    // Without them, or in fp16, the stem writes fp16 for cuDNN's 32 channels.
    for (network, tensor_cores) in [(&q, false), (&net, true)] {
        let lowered = lower(network, tensor_cores).unwrap();
        assert_eq!(lowered.input_channels, SPACE_TO_DEPTH_CHANNEL_ALIGN);
        assert!(!lowered.layers.iter().any(|l| super::stem::fits(l) || super::stem::runs(l)));
        assert!(!lowered.layers.iter().any(|l| matches!(l.kind, LayerKind::MaxPool { int8_input: true, .. })));
    }
}

#[test]
fn every_int8_layer_of_resnet50_makes_a_graph_cudnn_accepts_in_form() {
    use super::graph::spec::{ConvLayer, conv_scale_bias_residual_relu};
    use super::plan::LayerKind;
    let lowered = lower(&int8_resnet50().1, true).unwrap();
    let (mut graphs, mut with_residual, mut without_relu) = (0, 0, 0);
    for layer in &lowered.layers {
        let LayerKind::Conv { epilogue_offset: Some(_), residual, relu, .. } = layer.kind else { continue };
        let spec = conv_scale_bias_residual_relu(&super::exec::conv_layer(layer, 3)).unwrap_or_else(|e| panic!("{}: {e}", layer.name));
        let bound: Vec<_> = spec.bound_tensors().map(|t| t.uid).collect();
        assert_eq!(bound.contains(&ConvLayer::RESIDUAL), residual.is_some(), "{}", layer.name);
        assert_eq!(bound.contains(&ConvLayer::RATIO), residual.is_some(), "{}: the residual's units need the ratio", layer.name);
        assert_eq!(spec.tensor(ConvLayer::Y).unwrap().dims[0], 3);
        graphs += 1;
        with_residual += usize::from(residual.is_some());
        without_relu += usize::from(!relu);
    }
    // ResNet50: 52 int8 convolutions, 16 blocks end on a residual, 4 projections have no ReLU.
    assert_eq!((graphs, with_residual, without_relu), (52, 16, 4));
}

#[test]
fn our_1x1_kernel_takes_resnet50s_wide_int8_1x1_layers() {
    use super::plan::LayerKind;
    let (net, q) = int8_resnet50();
    let lowered = lower(&q, true).unwrap();
    let taken: Vec<&str> = lowered.layers.iter().filter(|l| l.fits_pointwise()).map(|l| l.name.as_str()).collect();
    // Every int8 1x1 layer but stage 1's reductions to 64 channels (3), which its 128-channel
    // tiles do not divide: the 16 expansions, 4 projections (3 of stride 2) and 13 reductions.
    assert_eq!(taken.len(), 16 + 4 + 13, "{taken:?}");
    assert!(taken.iter().all(|name| !name.starts_with("layer1.") || !name.ends_with("conv1")));
    let fp16 = lower(&net, true).unwrap();
    assert!(!fp16.layers.iter().any(super::plan::PlannedLayer::fits_pointwise), "int8 layers only");
    assert!(lowered.layers.iter().filter(|l| l.fits_pointwise()).all(|l| matches!(l.kind, LayerKind::Conv { kernel: 1, pad: 0, .. })));
}

#[test]
fn a_plan_running_our_kernels_on_layers_they_do_not_take_is_refused_before_any_gpu_work() {
    use super::plan::{ConvRunner, LayerKind};
    let input = InputSpec { batch_size: 2, channels: 3, height: SIZE, width: SIZE, layout: Layout::Nchw, element: ElementType::I8, scale: 1.0 };
    for (wrong, refusal) in [(ConvRunner::Pointwise, "is not one our 1x1 kernel takes"), (ConvRunner::Stem, "and our stem kernel do not match")] {
        let mut plan = super::builder::lowered_plan(&int8_resnet50().1, super::plan::tests::key(), std::path::Path::new("model.onnx")).unwrap();
        let layer = plan.header.layers.iter_mut().find(|l| matches!(l.kind, LayerKind::Conv { kernel: 3, epilogue_offset: Some(_), .. })).unwrap();
        let LayerKind::Conv { runner, .. } = &mut layer.kind else { unreachable!() };
        *runner = wrong;
        let name = layer.name.clone();
        let e = super::exec::DeviceModel::load(0, &plan.header, &plan.blob, input).err().expect("refused").to_string();
        assert!(e.contains(&format!("layer {name} {refusal}")) && e.ends_with("rebuild it"), "{e}");
    }
    // The stem kernel's own layer, left to cuDNN, is refused as well: only our kernel writes int8 from fp16.
    let mut plan = super::builder::lowered_plan(&int8_resnet50().1, super::plan::tests::key(), std::path::Path::new("model.onnx")).unwrap();
    let LayerKind::Conv { runner, .. } = &mut plan.header.layers[0].kind else { panic!("the stem first") };
    *runner = ConvRunner::Legacy;
    let e = super::exec::DeviceModel::load(0, &plan.header, &plan.blob, input).err().expect("refused").to_string();
    assert!(e.contains("and our stem kernel do not match"), "{e}");
}
