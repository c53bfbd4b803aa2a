//! The convnet engine's shape and tensor ops, for what YOLO does besides convolutions: max pooling,
//! nearest upsampling, channel splits and residual sums on images; and on *dense* values (f32, the
//! ONNX logical order, batch first) the attention block's and the detection head's Reshape,
//! Transpose, Split, Slice, Concat, MatMul, Softmax, broadcast arithmetic and pointwise
//! convolutions. The importer keeps a value an image while image ops use it and converts where an
//! image meets a shape op (and back where a convolution reads a dense value). Integer tensors that
//! only carry shapes (Constant, Shape, Gather, Identity) are evaluated at import, the shapes being
//! static. Dense values are f32: the head's box arithmetic reaches 640 px, where fp16 steps by 0.5.

use super::import::{Act, BinOp, Importer, OpKind, Operand, TensorOp, ValueShape};
use crate::engines::gpu::GpuError;
use crate::engines::onnx_reader::{attr, attr_int, attr_ints, f32_values, i64_values};
use tract_onnx::pb;

fn network(msg: impl Into<String>) -> GpuError {
    GpuError::Network(msg.into())
}

/// Row-major strides of `dims`.
fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

/// A (possibly negative) ONNX axis of a rank-`rank` tensor.
fn axis(node: &pb::NodeProto, a: i64, rank: usize) -> Result<usize, GpuError> {
    let r = rank as i64;
    if a < -r || a >= r {
        return Err(network(format!("node {}: axis {a} out of range for rank {rank}", node.name)));
    }
    Ok(if a < 0 { (a + r) as usize } else { a as usize })
}

impl<'a> Importer<'a> {
    /// Imports `node` if it is one of this module's ops (or a standard op reading a dense value);
    /// `result` is the name its (fused) result goes by, `act` the activation fused into it.
    pub(super) fn tensor_node(&mut self, node: &'a pb::NodeProto, result: &str, act: Act) -> Result<bool, GpuError> {
        let dense_input = |b: &Self| node.input.iter().filter(|n| !n.is_empty()).any(|n| b.ids.get(n.as_str()).is_some_and(|&v| b.net.values[v].dense));
        match node.op_type.as_str() {
            "Constant" => self.constant(node)?,
            "Identity" => {
                let input = &node.input[0];
                if let Some(v) = self.ints.get(input).cloned() {
                    self.ints.insert(node.output[0].clone(), v);
                } else if let Some(t) = self.inits.get(input.as_str()).copied() {
                    self.inits.insert(node.output[0].as_str(), t);
                } else {
                    let v = self.value(input)?;
                    self.ids.insert(node.output[0].clone(), v);
                }
            }
            "Shape" => {
                let dims = self.net.values[self.value(&node.input[0])?].dims();
                // Axis 0 is the batch: 0 in a Reshape target copies it.
                let shape = std::iter::once(0).chain(dims.iter().map(|&d| d as i64)).collect();
                self.ints.insert(node.output[0].clone(), shape);
            }
            "Gather" if self.ints.contains_key(&node.input[0]) => {
                let data = self.ints[&node.input[0]].clone();
                let index = self.int_input(node, 1)?;
                let picked = index.iter().map(|&i| data.get(if i < 0 { (i + data.len() as i64) as usize } else { i as usize }).copied()).collect::<Option<Vec<_>>>();
                let picked = picked.ok_or_else(|| network(format!("node {}: index {index:?} outside {data:?}", node.name)))?;
                self.ints.insert(node.output[0].clone(), picked);
            }
            "MaxPool" => self.max_pool(node, result)?,
            "Resize" => self.resize(node, result)?,
            "Split" => self.split(node)?,
            "Slice" => self.slice(node, result)?,
            "Reshape" => self.reshape(node, result)?,
            "Transpose" => self.transpose(node, result)?,
            "MatMul" => self.matmul(node, result)?,
            "Softmax" => self.softmax(node, result)?,
            "Add" | "Sub" | "Mul" | "Div" if node.input.iter().all(|n| self.ints.contains_key(n) || self.int_init(n)) => self.fold_ints(node)?,
            "Add" | "Sub" | "Mul" | "Div" => self.binary(node, result)?,
            "Sigmoid" | "Relu" if dense_input(self) => {
                let x = self.value(&node.input[0])?;
                let a = if node.op_type == "Sigmoid" { Act::Sigmoid } else { Act::Relu };
                let shape = self.net.values[x].clone();
                self.push_op(&node.name, OpKind::Tensor(TensorOp::Activation(a)), vec![x], shape, result);
            }
            "Concat" => {
                let images = node.input.iter().all(|n| self.ids.get(n.as_str()).is_some_and(|&v| !self.net.values[v].dense));
                let rank = self.input_shape(node)?.dims().len() + 1;
                if images && axis(node, attr_int(node, "axis").unwrap_or(1), rank)? == 1 {
                    return Ok(false);
                }
                self.concat_dense(node, result)?;
            }
            "Conv" if dense_input(self) => {
                let x = self.input_shape(node)?;
                let (dims, _) = self.init(node, 1)?.ok_or_else(|| network(format!("node {}: no weights", node.name)))?;
                let pointwise = dims[2..].iter().all(|&k| k == 1)
                    && attr_int(node, "group").unwrap_or(1) == 1
                    && attr_ints(node, "strides").is_none_or(|s| s.iter().all(|&v| v == 1))
                    && attr_ints(node, "pads").is_none_or(|p| p.iter().all(|&v| v == 0));
                if !pointwise || x.spatial.len() + 1 != dims.len() - 1 {
                    self.as_image(&node.input[0])?;
                    return Ok(false);
                }
                self.pointwise(node, result, act)?;
            }
            "InstanceNormalization" | "ConvTranspose" if dense_input(self) => {
                self.as_image(&node.input[0])?;
                return Ok(false);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The integer tensor at input `index` (an initializer or one evaluated at import).
    fn int_input(&self, node: &pb::NodeProto, index: usize) -> Result<Vec<i64>, GpuError> {
        let name = node.input.get(index).filter(|n| !n.is_empty()).ok_or_else(|| network(format!("node {}: no input {index}", node.name)))?;
        if let Some(v) = self.ints.get(name) {
            return Ok(v.clone());
        }
        let t = self.inits.get(name.as_str()).ok_or_else(|| network(format!("node {}: input {name:?} must be a constant (its shape work is static)", node.name)))?;
        Ok(i64_values(t)?)
    }

    /// Whether `name` is an int64 initializer.
    fn int_init(&self, name: &str) -> bool {
        self.inits.get(name).is_some_and(|t| i64_values(t).is_ok())
    }

    /// Shape arithmetic (the export's index computations): evaluated at import, scalars broadcast.
    fn fold_ints(&mut self, node: &pb::NodeProto) -> Result<(), GpuError> {
        let (a, b) = (self.int_input(node, 0)?, self.int_input(node, 1)?);
        let len = a.len().max(b.len());
        if (a.len() != len && a.len() != 1) || (b.len() != len && b.len() != 1) {
            return Err(network(format!("node {}: integer operands {a:?} and {b:?} do not broadcast", node.name)));
        }
        let at = |v: &[i64], i: usize| v[if v.len() == 1 { 0 } else { i }];
        let folded = (0..len)
            .map(|i| {
                let (x, y) = (at(&a, i), at(&b, i));
                match node.op_type.as_str() {
                    "Add" => Ok(x + y),
                    "Sub" => Ok(x - y),
                    "Mul" => Ok(x * y),
                    _ if y == 0 => Err(network(format!("node {}: integer division by zero", node.name))),
                    _ => Ok(x.div_euclid(y)),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.ints.insert(node.output[0].clone(), folded);
        Ok(())
    }

    fn constant(&mut self, node: &'a pb::NodeProto) -> Result<(), GpuError> {
        let t = attr(node, "value").and_then(|a| a.t.as_ref()).ok_or_else(|| network(format!("node {}: a Constant without a tensor `value`", node.name)))?;
        match i64_values(t) {
            Ok(v) => {
                self.ints.insert(node.output[0].clone(), v);
            }
            Err(_) => {
                self.inits.insert(node.output[0].as_str(), t);
            }
        }
        Ok(())
    }

    /// Value `name` as an image: converted (and known by that name from now on) if dense.
    fn as_image(&mut self, name: &str) -> Result<usize, GpuError> {
        let v = self.value(name)?;
        let shape = &self.net.values[v];
        if !shape.dense {
            return Ok(v);
        }
        if shape.spatial.is_empty() || shape.spatial.len() > 3 {
            return Err(network(format!("value {name:?} of dims {:?} cannot become an image (1 to 3 spatial dims)", shape.dims())));
        }
        let image = ValueShape::new(shape.channels, shape.spatial.clone());
        Ok(self.push_op(&format!("{name}.to_image"), OpKind::Tensor(TensorOp::ToImage), vec![v], image, name))
    }

    /// Value `name` as a dense value (converted, under a name of its own, if an image).
    fn as_dense(&mut self, name: &str) -> Result<usize, GpuError> {
        let v = self.value(name)?;
        let shape = self.net.values[v].clone();
        if shape.dense {
            return Ok(v);
        }
        let alias = format!("{name}.dense");
        if let Some(&d) = self.ids.get(&alias) {
            return Ok(d);
        }
        Ok(self.push_op(&alias, OpKind::Tensor(TensorOp::ToDense), vec![v], ValueShape::dense(&shape.dims()), &alias))
    }

    fn max_pool(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let x = self.as_image(&node.input[0])?;
        let shape = self.net.values[x].clone();
        let kernel: Vec<usize> = attr_ints(node, "kernel_shape").unwrap_or_default().iter().map(|&k| k as usize).collect();
        let g = self.geometry(node, &kernel)?;
        if kernel.len() != shape.spatial.len() || g.dilation.iter().any(|&d| d != 1) || attr_int(node, "ceil_mode").unwrap_or(0) != 0 || node.output.len() > 1 {
            return Err(network(format!("node {}: max pooling without dilation, ceil mode or indices, over every spatial dim", node.name)));
        }
        let spatial = shape.spatial.iter().enumerate().map(|(d, &s)| (s + 2 * g.pad[d] - kernel[d]) / g.stride[d] + 1).collect();
        let out = ValueShape::new(shape.channels, spatial);
        self.push_op(&node.name, OpKind::Tensor(TensorOp::MaxPool { kernel, stride: g.stride, pad: g.pad }), vec![x], out, result);
        Ok(())
    }

    fn resize(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let x = self.as_image(&node.input[0])?;
        let shape = self.net.values[x].clone();
        let mode = attr(node, "mode").map(|a| a.s.as_slice()).unwrap_or(b"nearest");
        let transform = attr(node, "coordinate_transformation_mode").map(|a| a.s.as_slice()).unwrap_or(b"half_pixel");
        let (_, scales) = self.init(node, 2)?.ok_or_else(|| network(format!("node {}: Resize needs constant `scales`", node.name)))?;
        let integral = scales.len() == shape.spatial.len() + 2 && scales[..2] == [1.0, 1.0] && scales[2..].iter().all(|s| s.fract() == 0.0 && *s >= 1.0);
        if mode != b"nearest" || transform != b"asymmetric" || !integral {
            return Err(network(format!("node {}: Resize runs as nearest, asymmetric, integer spatial scales (got scales {scales:?})", node.name)));
        }
        let scale: Vec<usize> = scales[2..].iter().map(|&s| s as usize).collect();
        let out = ValueShape::new(shape.channels, shape.spatial.iter().zip(&scale).map(|(s, k)| s * k).collect());
        self.push_op(&node.name, OpKind::Tensor(TensorOp::Upsample { scale }), vec![x], out, result);
        Ok(())
    }

    /// The part sizes of a Split along `axis` of `len`.
    fn split_sizes(&self, node: &pb::NodeProto, len: usize) -> Result<Vec<usize>, GpuError> {
        let sizes: Vec<usize> = if node.input.get(1).is_some_and(|n| !n.is_empty()) {
            self.int_input(node, 1)?.iter().map(|&s| s as usize).collect()
        } else if let Some(s) = attr_ints(node, "split") {
            s.iter().map(|&s| s as usize).collect()
        } else {
            vec![len / node.output.len(); node.output.len()]
        };
        if sizes.iter().sum::<usize>() != len || sizes.len() != node.output.len() {
            return Err(network(format!("node {}: split sizes {sizes:?} do not cover {len} in {} parts", node.name, node.output.len())));
        }
        Ok(sizes)
    }

    fn split(&mut self, node: &pb::NodeProto) -> Result<(), GpuError> {
        let x = self.value(&node.input[0])?;
        let shape = self.net.values[x].clone();
        let dims = shape.dims();
        let a = axis(node, attr_int(node, "axis").unwrap_or(0), dims.len() + 1)?;
        if a == 0 {
            return Err(network(format!("node {}: splitting the batch axis", node.name)));
        }
        let sizes = self.split_sizes(node, dims[a - 1])?;
        let mut start = 0;
        for (size, out) in sizes.into_iter().zip(&node.output) {
            let name = format!("{}.{start}", node.name);
            if !shape.dense && a == 1 {
                let part = ValueShape::new(size, shape.spatial.clone());
                self.push_op(&name, OpKind::Tensor(TensorOp::ChannelSlice { offset: start }), vec![x], part, out);
            } else {
                let x = self.as_dense(&node.input[0])?;
                self.gather_range(&name, x, a - 1, start, size, out);
            }
            start += size;
        }
        Ok(())
    }

    /// A dense copy of `x`'s entries `start..start + len` along per-sample axis `a`, as `result`.
    fn gather_range(&mut self, name: &str, x: usize, a: usize, start: usize, len: usize, result: &str) -> usize {
        let dims = self.net.values[x].dims();
        let mut out = dims.clone();
        out[a] = len;
        let x_strides = strides(&dims);
        let table = self.table(&out, &x_strides, &strides(&out), start * x_strides[a], 0);
        let op = TensorOp::Copy { tables: vec![table], counts: vec![out.iter().product()], rank: out.len() };
        self.push_op(name, OpKind::Tensor(op), vec![x], ValueShape::dense(&out), result)
    }

    fn slice(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let x = self.as_dense(&node.input[0])?;
        let dims = self.net.values[x].dims();
        let (starts, ends) = (self.int_input(node, 1)?, self.int_input(node, 2)?);
        let axes = if node.input.get(3).is_some_and(|n| !n.is_empty()) { self.int_input(node, 3)? } else { (0..starts.len() as i64).collect() };
        let steps = if node.input.get(4).is_some_and(|n| !n.is_empty()) { self.int_input(node, 4)? } else { vec![1; starts.len()] };
        if axes.len() != 1 || steps != [1] {
            return Err(network(format!("node {}: slices along one axis with step 1 (axes {axes:?}, steps {steps:?})", node.name)));
        }
        let a = axis(node, axes[0], dims.len() + 1)?;
        if a == 0 {
            return Err(network(format!("node {}: slicing the batch axis", node.name)));
        }
        let len = dims[a - 1] as i64;
        let clamp = |v: i64| if v < 0 { (v + len).max(0) } else { v.min(len) } as usize;
        let (start, end) = (clamp(starts[0]), clamp(ends[0]));
        self.gather_range(&node.name, x, a - 1, start, end.saturating_sub(start), result);
        Ok(())
    }

    fn reshape(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let x = self.value(&node.input[0])?;
        let dims = self.net.values[x].dims();
        let target = self.int_input(node, 1)?;
        let full: Vec<usize> = std::iter::once(0).chain(dims.iter().copied()).collect();
        if target.first().is_none_or(|&t| t != 0 && t != 1) {
            return Err(network(format!("node {}: reshape target {target:?} must keep the batch first (0 or 1)", node.name)));
        }
        let total: usize = dims.iter().product();
        let mut out: Vec<usize> = Vec::new();
        let mut unknown = None;
        for (i, &t) in target.iter().enumerate().skip(1) {
            match t {
                0 => out.push(*full.get(i).ok_or_else(|| network(format!("node {}: target {target:?} copies a dim the input lacks", node.name)))?),
                -1 => {
                    unknown = Some(out.len());
                    out.push(1);
                }
                t if t > 0 => out.push(t as usize),
                _ => return Err(network(format!("node {}: reshape target {target:?}", node.name))),
            }
        }
        let known: usize = out.iter().product();
        if let Some(u) = unknown {
            out[u] = total / known.max(1);
        }
        if out.iter().product::<usize>() != total || out.is_empty() {
            return Err(network(format!("node {}: cannot reshape {dims:?} to {target:?}", node.name)));
        }
        if self.net.values[x].dense {
            let table = self.table(&out, &strides(&out), &strides(&out), 0, 0);
            let op = TensorOp::Copy { tables: vec![table], counts: vec![total], rank: out.len() };
            self.push_op(&node.name, OpKind::Tensor(op), vec![x], ValueShape::dense(&out), result);
        } else {
            // The logical order is row-major: the conversion writes the reshaped value directly.
            self.push_op(&node.name, OpKind::Tensor(TensorOp::ToDense), vec![x], ValueShape::dense(&out), result);
        }
        Ok(())
    }

    fn transpose(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let x = self.as_dense(&node.input[0])?;
        let dims = self.net.values[x].dims();
        let perm = attr_ints(node, "perm").unwrap_or_else(|| (0..=dims.len() as i64).rev().collect());
        if perm.len() != dims.len() + 1 || perm[0] != 0 {
            return Err(network(format!("node {}: permutation {perm:?} must keep the batch first", node.name)));
        }
        let perm: Vec<usize> = perm[1..].iter().map(|&p| p as usize - 1).collect();
        let out: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
        let s = strides(&dims);
        let x_strides: Vec<usize> = perm.iter().map(|&p| s[p]).collect();
        let table = self.table(&out, &x_strides, &strides(&out), 0, 0);
        let op = TensorOp::Copy { tables: vec![table], counts: vec![out.iter().product()], rank: out.len() };
        let y = self.push_op(&node.name, OpKind::Tensor(op), vec![x], ValueShape::dense(&out), result);
        let r = perm.len();
        if r >= 2
            && perm.iter().enumerate().all(|(i, &p)| {
                p == if i + 2 == r {
                    r - 1
                } else if i + 1 == r {
                    r - 2
                } else {
                    i
                }
            })
        {
            self.swapped.insert(y, x);
        }
        Ok(())
    }

    fn concat_dense(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let inputs = node.input.iter().map(|n| self.as_dense(n)).collect::<Result<Vec<_>, _>>()?;
        let first = self.net.values[inputs[0]].dims();
        let a = axis(node, attr_int(node, "axis").unwrap_or(1), first.len() + 1)?;
        if a == 0 {
            return Err(network(format!("node {}: concatenating along the batch axis", node.name)));
        }
        let a = a - 1;
        let mut out = first.clone();
        out[a] = 0;
        for &i in &inputs {
            let d = self.net.values[i].dims();
            if d.len() != first.len() || d.iter().enumerate().any(|(k, &v)| k != a && v != first[k]) {
                return Err(network(format!("node {}: inputs of dims {first:?} and {d:?} do not concatenate on axis {}", node.name, a + 1)));
            }
            out[a] += d[a];
        }
        let y_strides = strides(&out);
        let (mut tables, mut counts, mut offset) = (Vec::new(), Vec::new(), 0);
        for &i in &inputs {
            let d = self.net.values[i].dims();
            tables.push(self.table(&d, &strides(&d), &y_strides, 0, offset * y_strides[a]));
            counts.push(d.iter().product());
            offset += d[a];
        }
        self.push_op(&node.name, OpKind::Tensor(TensorOp::Copy { tables, counts, rank: out.len() }), inputs, ValueShape::dense(&out), result);
        Ok(())
    }

    fn matmul(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let (a, b) = (self.as_dense(&node.input[0])?, self.as_dense(&node.input[1])?);
        let (da, db) = (self.net.values[a].dims(), self.net.values[b].dims());
        let r = da.len();
        if r < 2 || db.len() != r || da[..r - 2] != db[..r - 2] || da[r - 1] != db[r - 2] {
            return Err(network(format!("node {}: MatMul of {da:?} and {db:?} (per sample; equal batch dims, no broadcasting)", node.name)));
        }
        let (m, k, n) = (da[r - 2], da[r - 1], db[r - 1]);
        let mut out = da[..r - 2].to_vec();
        out.extend([m, n]);
        // An operand that is a transpose of its last two dims is read from the transpose's source.
        let source = |v: usize| self.swapped.get(&v).map_or((v, false), |&x| (x, true));
        let ((a, a_transposed), (b, b_transposed)) = (source(a), source(b));
        let op = TensorOp::MatMul { batches: da[..r - 2].iter().product(), m, k, n, a_transposed, b_transposed, alpha: 1.0 };
        self.push_op(&node.name, OpKind::Tensor(op), vec![a, b], ValueShape::dense(&out), result);
        Ok(())
    }

    fn softmax(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let x = self.as_dense(&node.input[0])?;
        let dims = self.net.values[x].dims();
        let a = axis(node, attr_int(node, "axis").unwrap_or(-1), dims.len() + 1)?;
        if a == 0 {
            return Err(network(format!("node {}: softmax over the batch axis", node.name)));
        }
        let (outer, len, inner) = (dims[..a - 1].iter().product(), dims[a - 1], dims[a..].iter().product());
        self.push_op(&node.name, OpKind::Tensor(TensorOp::Softmax { outer, len, inner }), vec![x], ValueShape::dense(&dims), result);
        Ok(())
    }

    fn binary(&mut self, node: &pb::NodeProto, result: &str) -> Result<(), GpuError> {
        let op = match node.op_type.as_str() {
            "Add" => BinOp::Add,
            "Sub" => BinOp::Sub,
            "Mul" => BinOp::Mul,
            _ => BinOp::Div,
        };
        let names = [&node.input[0], &node.input[1]];
        // Two images of one shape (residuals): added as images. A dense value meeting an image of
        // its dims becomes an image (the attention's sum feeds a convolution).
        if op == BinOp::Add && self.ids.contains_key(names[0]) && self.ids.contains_key(names[1]) {
            let (x, y) = (self.value(names[0])?, self.value(names[1])?);
            let (sx, sy) = (self.net.values[x].clone(), self.net.values[y].clone());
            if sx.dims() == sy.dims() && (!sx.dense || !sy.dense) && (1..=3).contains(&sx.spatial.len()) {
                let (x, y) = (self.as_image(names[0])?, self.as_image(names[1])?);
                let shape = self.net.values[x].clone();
                self.push_op(&node.name, OpKind::Tensor(TensorOp::ImageAdd), vec![x, y], shape, result);
                return Ok(());
            }
        }
        // Full shapes, batch first (0 marks a value's batch), right-aligned for broadcasting.
        let mut inputs = Vec::new();
        let mut operands = Vec::new();
        let mut fulls = Vec::new();
        for name in names {
            if self.ids.contains_key(name) {
                let v = self.as_dense(name)?;
                fulls.push(std::iter::once(0).chain(self.net.values[v].dims()).collect::<Vec<usize>>());
                operands.push(Operand::Input(inputs.len()));
                inputs.push(v);
            } else {
                let t = self.inits.get(name.as_str()).ok_or_else(|| network(format!("node {}: operand {name:?} is neither a value nor a constant", node.name)))?;
                let values = f32_values(t)?;
                fulls.push(t.dims.iter().map(|&d| d as usize).collect());
                operands.push(Operand::Constant(self.blob.push_f32(&values)));
            }
        }
        if inputs.is_empty() {
            return Err(network(format!("node {}: arithmetic on constants only (fold it before export)", node.name)));
        }
        let rank = fulls.iter().map(Vec::len).max().unwrap_or(0);
        let aligned: Vec<Vec<usize>> = fulls.iter().map(|f| std::iter::repeat_n(1, rank - f.len()).chain(f.iter().copied()).collect()).collect();
        let mut out = vec![1usize; rank];
        for (d, o) in out.iter_mut().enumerate() {
            for f in &aligned {
                let v = if f[d] == 0 { 1 } else { f[d] };
                if v != 1 && *o != 1 && v != *o {
                    return Err(network(format!("node {}: shapes {fulls:?} do not broadcast", node.name)));
                }
                *o = (*o).max(v);
            }
        }
        if rank < 2 || aligned.iter().any(|f| f[0] > 1) {
            return Err(network(format!("node {}: shapes {fulls:?}: constants must broadcast over the batch", node.name)));
        }
        let out = out[1..].to_vec();
        let per_sample: Vec<Vec<usize>> = aligned
            .iter()
            .map(|f| {
                let own: Vec<usize> = f[1..].to_vec();
                let s = strides(&own);
                own.iter().zip(&out).zip(s).map(|((&d, &o), s)| if d == 1 && o != 1 { 0 } else { s }).collect()
            })
            .collect();
        let mut table: Vec<i64> = out.iter().map(|&d| d as i64).collect();
        table.extend(per_sample.iter().flatten().map(|&s| s as i64));
        let table = self.push_i64(&table);
        let kind = TensorOp::Binary { op, a: operands[0], b: operands[1], table, rank: out.len() };
        self.push_op(&node.name, OpKind::Tensor(kind), inputs, ValueShape::dense(&out), result);
        Ok(())
    }

    fn pointwise(&mut self, node: &pb::NodeProto, result: &str, act: Act) -> Result<(), GpuError> {
        let x = self.value(&node.input[0])?;
        let dims = self.net.values[x].dims();
        let (wd, w) = self.init(node, 1)?.ok_or_else(|| network(format!("node {}: no weights", node.name)))?;
        let (k, c) = (wd[0], wd[1]);
        if c != dims[0] {
            return Err(network(format!("node {}: weights {wd:?} for {} channels", node.name, dims[0])));
        }
        let weights = self.blob.push_f32(&w);
        let bias = self.init(node, 2)?.map(|(_, b)| self.blob.push_f32(&b));
        let rest = dims[1..].iter().product();
        let mut out = dims.clone();
        out[0] = k;
        let op = TensorOp::Pointwise { weights, bias, k, c, rest, act };
        self.push_op(&node.name, OpKind::Tensor(op), vec![x], ValueShape::dense(&out), result);
        Ok(())
    }

    /// A copy's index table in the blob (see [`TensorOp::Copy`]).
    fn table(&mut self, dims: &[usize], x_strides: &[usize], y_strides: &[usize], x_offset: usize, y_offset: usize) -> usize {
        let values: Vec<i64> = dims.iter().chain(x_strides).chain(y_strides).chain([&x_offset, &y_offset]).map(|&v| v as i64).collect();
        self.push_i64(&values)
    }

    fn push_i64(&mut self, values: &[i64]) -> usize {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.blob.push(&bytes)
    }
}
