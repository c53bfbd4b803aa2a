//! Launching [`TensorOp`]s (`tensor.cu`, and kernels.cu's layout conversions and slice copies) on a
//! slot's stream.

use super::exec::{Convnet, Slot, elementwise, vectorised};
use super::import::{Op, Operand, TensorOp, ValueShape};
use crate::engines::gpu::GpuError;
use crate::engines::gpu::device::cu;
use cudarc::driver::{LaunchConfig, PushKernelArg};

/// `tensor.cu`'s COPY_MAX_RANK: the dims of a dense copy's table, read into shared memory.
const COPY_MAX_RANK: usize = 8;

/// Whether a buffer of `values` is indexed in 32 bits (the kernels' `...32` variants: their
/// divisions cost a fraction of the emulated 64-bit ones).
fn fits_i32(values: usize) -> bool {
    values <= i32::MAX as usize
}

/// An image's spatial dims as (depth, height, width), missing leading dims 1.
fn dhw(v: &ValueShape) -> [i32; 3] {
    let mut d = [1i32; 3];
    for (slot, &s) in d[3 - v.spatial.len()..].iter_mut().zip(&v.spatial) {
        *slot = s as i32;
    }
    d
}

/// `values` (1 to 3 per spatial dim) as (depth, height, width) with `fill` for missing leading dims.
fn three(values: &[usize], fill: i32) -> [i32; 3] {
    let mut d = [fill; 3];
    for (slot, &s) in d[3 - values.len()..].iter_mut().zip(values) {
        *slot = s as i32;
    }
    d
}

impl Slot {
    /// Enqueues tensor op `t` of `op`.
    ///
    /// # Safety
    /// As for the slot's other ops: every value's buffer holds the plan's batch, the weights are the
    /// plan's (its index tables and constants included).
    pub(super) unsafe fn enqueue_tensor(&self, op: &Op, t: &TensorOp) -> Result<(), GpuError> {
        let m: &Convnet = &self.model;
        let k = &m.tensor;
        let (net, n) = (&m.header.net, m.batch());
        let value = |i: usize| &net.values[op.inputs[i]];
        let input = |i: usize| self.ptr(op.inputs[i]).raw();
        let (ys, y) = (&net.values[op.output], self.ptr(op.output).raw());
        let weights = m.weights.ptr();
        let stream = &self.stream;
        let (ni, name) = (n as i32, op.name.as_str());
        // One kernel launch: its name, function, grid and parameters in order and type.
        macro_rules! launch {
            ($what:expr, $f:expr, $cfg:expr, $($arg:expr),* $(,)?) => {{
                let mut l = stream.launch_builder($f);
                $( l.arg($arg); )*
                // SAFETY: the parameters above are the kernel's, in order and type, over buffers
                // sized for the batch (this function's contract).
                cu($what, unsafe { l.launch($cfg) }).map(|_| ()).map_err(|e| GpuError::from(e).in_layer(name))
            }};
        }
        match t {
            TensorOp::ToDense => {
                let xs = value(0);
                let (p, c, row, x) = (xs.positions(), xs.channels, self.row(op.inputs[0]) as i32, input(0));
                let cfg = LaunchConfig { grid_dim: (p.div_ceil(32) as u32, c.div_ceil(32) as u32, n as u32), block_dim: (32, 8, 1), shared_mem_bytes: 0 };
                let (p, c) = (p as i32, c as i32);
                launch!("to dense", &m.to_dense_tiles, cfg, &x, &y, &p, &c, &row)
            }
            TensorOp::ToImage => {
                let (p, c, pad, x) = (ys.positions() as i64, ys.channels as i32, ys.padded as i32, input(0));
                launch!("to image", &m.to_channels_last, elementwise(n * ys.elements()), &x, &y, &p, &c, &pad, &ni)
            }
            TensorOp::MaxPool { kernel, stride, pad } => {
                let (xs, x) = (value(0), input(0));
                let (i, o, kk, s, p) = (dhw(xs), dhw(ys), three(kernel, 1), three(stride, 1), three(pad, 0));
                let (c, x_row, y_row) = (ys.padded as i32, self.row(op.inputs[0]) as i32, self.row(op.output) as i32);
                launch!(
                    "max pool",
                    &k.max_pool,
                    vectorised(n * ys.elements()),
                    &x,
                    &y,
                    &ni,
                    &c,
                    &x_row,
                    &y_row,
                    &i[0],
                    &i[1],
                    &i[2],
                    &o[0],
                    &o[1],
                    &o[2],
                    &kk[0],
                    &kk[1],
                    &kk[2],
                    &s[0],
                    &s[1],
                    &s[2],
                    &p[0],
                    &p[1],
                    &p[2]
                )
            }
            TensorOp::Upsample { scale } => {
                let (xs, x) = (value(0), input(0));
                let (i, f, c) = (dhw(xs), three(scale, 1), ys.padded as i32);
                let (x_row, y_row) = (self.row(op.inputs[0]) as i32, self.row(op.output) as i32);
                launch!("upsample", &k.upsample, vectorised(n * ys.elements()), &x, &y, &ni, &c, &x_row, &y_row, &i[0], &i[1], &i[2], &f[0], &f[1], &f[2])
            }
            TensorOp::SpaceToDepth { pad } => {
                let (xs, x, positions) = (value(0), input(0), n * ys.positions());
                if !fits_i32(n * xs.elements().max(ys.elements())) {
                    return Err(GpuError::Run(format!("a space-to-depth of {n} x {xs:?}: the kernel indexes in 32 bits")).in_layer(name));
                }
                let ([_, h, w], [_, oh, ow], c) = (dhw(xs), dhw(ys), xs.channels as i32);
                let (total, py, px, x_row, y_row) = (positions as i32, pad[0] as i32, pad[1] as i32, self.row(op.inputs[0]) as i32, self.row(op.output) as i32);
                launch!("space to depth", &k.space_to_depth, elementwise(positions), &x, &y, &total, &c, &h, &w, &oh, &ow, &py, &px, &x_row, &y_row)
            }
            // A slice placed where its input's channels already are is a view: nothing to copy.
            TensorOp::ChannelSlice { offset } if net.lies_in(op.output, op.inputs[0], *offset) => Ok(()),
            TensorOp::ChannelSlice { offset } => {
                let x = input(0);
                let (rows, c, x_row, x_offset, y_row) =
                    ((n * ys.positions()) as i64, ys.channels as i32, self.row(op.inputs[0]) as i32, *offset as i32, self.row(op.output) as i32);
                let total = n * ys.positions() * ys.channels;
                let cfg = if (c | x_row | x_offset | y_row) % 8 == 0 { vectorised(total) } else { elementwise(total) };
                launch!("channel slice", &m.copy_slice, cfg, &x, &y, &rows, &c, &x_row, &x_offset, &y_row, &0i32)
            }
            TensorOp::ImageAdd => {
                let (a, b, rows, c) = (input(0), input(1), (n * ys.positions()) as i64, ys.padded as i32);
                let [a_row, b_row, y_row] = [op.inputs[0], op.inputs[1], op.output].map(|v| self.row(v) as i32);
                launch!("image add", &k.image_add, vectorised(n * ys.elements()), &a, &b, &y, &rows, &c, &a_row, &b_row, &y_row)
            }
            TensorOp::Copy { tables, counts, rank } => {
                if *rank > COPY_MAX_RANK {
                    return Err(GpuError::PlanContent(format!("a dense copy of rank {rank}; the kernel takes at most {COPY_MAX_RANK}")).in_layer(name));
                }
                let (rank, y_sample) = (*rank as i32, ys.elements());
                for (j, (&table, &count)) in tables.iter().zip(counts).enumerate() {
                    let (x, x_sample, table) = (input(j), value(j).elements(), weights.offset(table).raw());
                    if fits_i32(n * x_sample.max(y_sample)) {
                        let (count, x_sample, y_sample) = (count as i32, x_sample as i32, y_sample as i32);
                        launch!("copy", &k.strided_copy32, elementwise(n * count as usize), &x, &y, &table, &rank, &count, &x_sample, &y_sample, &ni)?;
                    } else {
                        let (count, x_sample, y_sample) = (count as i64, x_sample as i64, y_sample as i64);
                        launch!("copy", &k.strided_copy, elementwise(n * count as usize), &x, &y, &table, &rank, &count, &x_sample, &y_sample, &ni)?;
                    }
                }
                Ok(())
            }
            TensorOp::Binary { op: b_op, a, b, table, rank } => {
                let operand = |o: &Operand| match *o {
                    Operand::Input(i) => (input(i), value(i).elements() as i64),
                    Operand::Constant(at) => (weights.offset(at).raw(), 0),
                };
                let ((pa, sa), (pb, sb)) = (operand(a), operand(b));
                let (table, rank, count, code) = (weights.offset(*table).raw(), *rank as i32, ys.elements() as i64, b_op.code());
                launch!("binary", &k.binary, elementwise(n * ys.elements()), &pa, &pb, &y, &table, &rank, &count, &sa, &sb, &ni, &code)
            }
            TensorOp::Softmax { outer, len, inner } => {
                let (x, groups, len, inner) = (input(0), (n * outer * inner) as i64, *len as i32, *inner as i64);
                if inner == 1 {
                    // Contiguous rows: a warp per row reads them coalesced.
                    launch!("softmax", &k.softmax_rows, elementwise(32 * groups as usize), &x, &y, &groups, &len)
                } else {
                    launch!("softmax", &k.softmax, elementwise(groups as usize), &x, &y, &groups, &len, &inner)
                }
            }
            TensorOp::MatMul { .. } => Err(GpuError::PlanContent("a product without its cuBLASLt descriptors".into()).in_layer(name)),
            TensorOp::Activation(act) => {
                let (x, count, kind) = (input(0), (n * ys.elements()) as i64, act.code());
                launch!("activation", &k.dense_act, elementwise(count as usize), &x, &y, &count, &kind)
            }
            TensorOp::Pointwise { weights: w_at, bias, k: outs, c, rest, act } => {
                let (x, w, b) = (input(0), weights.offset(*w_at).raw(), bias.map_or(0, |o| weights.offset(o).raw()));
                let (c, outs, rest, kind) = (*c as i32, *outs as i32, *rest as i64, act.code());
                launch!("pointwise", &k.pointwise, elementwise(n * ys.elements()), &x, &y, &w, &b, &c, &outs, &rest, &ni, &kind)
            }
        }
    }
}
