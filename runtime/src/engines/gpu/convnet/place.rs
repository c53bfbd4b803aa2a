//! Where each image value's rows live: concatenations without copies. A channel concatenation
//! whose inputs' producers can write rows of another width gets them written straight into their
//! slice of its output ("placed"), and a channel slice of a placed value becomes a view of it. The
//! copies that remain are those this cannot remove: an input whose producer or another reader
//! needs packed rows (transposed convolutions, instance norms, grouped convolutions, activations
//! alone, dense values), the network's input and output, a value two concatenations want.
//!
//! Placed values are disjoint slices of their root's rows, and values never share buffers
//! otherwise, so no op overwrites a value another still reads: the only overlaps are views, which
//! nothing writes.

use super::import::{Net, Op, OpKind, Place, TensorOp};

/// Ops that write their image output through a row width and a start channel (2-D ungrouped
/// convolutions through cuDNN's strided graphs, our kernels with row arguments).
fn writes_strided(op: &Op) -> bool {
    match &op.kind {
        OpKind::Conv { geometry, .. } => geometry.is_plain_2d(),
        OpKind::Concat => true,
        OpKind::Tensor(t) => matches!(t, TensorOp::MaxPool { .. } | TensorOp::Upsample { .. } | TensorOp::ChannelSlice { .. } | TensorOp::ImageAdd),
        _ => false,
    }
}

/// Ops that read an image through a row width and a start channel: those that write one, the
/// conversion to dense values and the space-to-depth.
fn reads_strided(op: &Op) -> bool {
    writes_strided(op) || matches!(op.kind, OpKind::Tensor(TensorOp::ToDense | TensorOp::SpaceToDepth { .. }))
}

struct Placer<'a> {
    net: &'a Net,
    producer: Vec<Option<usize>>,
    readers: Vec<Vec<usize>>,
    places: Vec<Place>,
}

impl Placer<'_> {
    fn is_own(&self, v: usize) -> bool {
        self.places[v] == Place::own(v)
    }

    /// Whether `v` may live in another value's rows: an image of whole 8-channel vectors, not the
    /// network's input or output, not placed yet, read only by ops that take a row width.
    fn movable(&self, v: usize) -> bool {
        let shape = &self.net.values[v];
        v != 0
            && !self.net.is_output(v)
            && !shape.dense
            && shape.padded == shape.channels
            && self.is_own(v)
            && self.producer[v].is_some()
            && self.readers[v].iter().all(|&r| reads_strided(&self.net.ops[r]))
    }

    /// Places concatenation `op`'s input `index`, channel `at` of the concatenation (which lies at
    /// `base`), there, or leaves it to be copied there.
    fn place_input(&mut self, op: &Op, index: usize, base: Place, at: usize) {
        let (v, to) = (op.inputs[index], Place { root: base.root, offset: base.offset + at });
        if !self.movable(v) {
            return;
        }
        // A slice of `u` becomes a view when `u` moves so that its slices land where the
        // concatenation wants them: the concatenation's inputs that are slices of `u` must tile
        // all of `u` there (else `u`'s other channels would overlap other inputs).
        if let Some((u, offset)) = self.slice_of(v) {
            let origin = at.checked_sub(offset).filter(|_| offset.is_multiple_of(8));
            if let Some(origin) = origin.filter(|&o| self.movable(u) && self.producer[u].is_some_and(|q| writes_strided(&self.net.ops[q])) && self.tiles(op, u, o)) {
                self.places[u] = Place { root: base.root, offset: base.offset + origin };
            }
        }
        if self.producer[v].is_some_and(|p| writes_strided(&self.net.ops[p])) {
            self.places[v] = to;
        }
    }

    /// The value `v` is a channel slice of, and the slice's first channel.
    fn slice_of(&self, v: usize) -> Option<(usize, usize)> {
        let op = &self.net.ops[self.producer[v]?];
        match op.kind {
            OpKind::Tensor(TensorOp::ChannelSlice { offset }) => Some((op.inputs[0], offset)),
            _ => None,
        }
    }

    /// Whether the inputs of concatenation `op` that are slices of `u`, where `u` starts at channel
    /// `origin` of the concatenation, cover exactly `u`'s channels.
    fn tiles(&self, op: &Op, u: usize, origin: usize) -> bool {
        let (mut covered, mut at) = (0, 0);
        for &v in &op.inputs {
            let channels = self.net.values[v].channels;
            if self.slice_of(v).is_some_and(|(w, offset)| w == u && at == origin + offset) {
                covered += channels;
            }
            at += channels;
        }
        covered == self.net.values[u].channels
    }
}

/// Every value's place ([`Place`]); concatenations from the last to the first, so that an outer
/// concatenation places an inner one before the inner one places its inputs.
pub fn places(net: &Net) -> Vec<Place> {
    let (producer, readers) = net.uses();
    let mut placer = Placer { net, producer, readers, places: net.own_places() };
    for op in net.ops.iter().rev() {
        if op.kind != OpKind::Concat || net.values[op.output].dense || op.inputs.iter().any(|&v| !net.values[v].channels.is_multiple_of(8)) {
            continue;
        }
        let (base, mut at) = (placer.places[op.output], 0);
        for index in 0..op.inputs.len() {
            placer.place_input(op, index, base, at);
            at += net.values[op.inputs[index]].channels;
        }
    }
    // Slices not placed above: a view of their input where the rows allow.
    for op in &net.ops {
        if let OpKind::Tensor(TensorOp::ChannelSlice { offset }) = op.kind {
            let (u, v) = (op.inputs[0], op.output);
            if offset.is_multiple_of(8) && placer.movable(v) {
                let from = placer.places[u];
                placer.places[v] = Place { root: from.root, offset: from.offset + offset };
            }
        }
    }
    placer.places
}

/// Runs `net`'s schedule as the executor does (a concatenation copies only the inputs not placed
/// in its slice, a slice placed where its channels are copies nothing) over each channel of each
/// buffer, recording which value's channel each holds, and panics where an op reads a channel that
/// no longer holds what it should: the check that placement never lets one value overwrite another
/// still to be read.
#[cfg(test)]
pub fn assert_schedule_keeps_values(net: &Net) {
    use std::collections::HashMap;
    let places = &net.places;
    let width = |v: usize| if net.values[v].dense { 1 } else { net.values[v].channels };
    let (producer, _) = net.uses();
    // The value and channel whose data channel `j` of `v` is (through concatenations and slices).
    let origin = |mut v: usize, mut j: usize| loop {
        match producer[v].map(|p| (&net.ops[p].kind, &net.ops[p])) {
            Some((OpKind::Concat, op)) if !net.values[v].dense => {
                let mut start = 0;
                for &u in &op.inputs {
                    if j < start + width(u) {
                        (v, j) = (u, j - start);
                        break;
                    }
                    start += width(u);
                }
            }
            Some((OpKind::Tensor(TensorOp::ChannelSlice { offset }), op)) => (v, j) = (op.inputs[0], offset + j),
            _ => return (v, j),
        }
    };
    let mut memory: HashMap<(usize, usize), (usize, usize)> = HashMap::new();
    let write = |memory: &mut HashMap<_, _>, v: usize, channels: std::ops::Range<usize>, shift: usize| {
        for j in channels {
            memory.insert((places[v].root, places[v].offset + shift + j), origin(v, shift + j));
        }
    };
    let read = |memory: &HashMap<(usize, usize), (usize, usize)>, v: usize, by: &str| {
        for j in 0..width(v) {
            let held = memory.get(&(places[v].root, places[v].offset + j));
            assert_eq!(held, Some(&origin(v, j)), "{by} reads channel {j} of value {v} ({:?}), which holds another value's data", places[v]);
        }
    };
    write(&mut memory, 0, 0..width(0), 0);
    for op in &net.ops {
        match &op.kind {
            OpKind::Concat if !net.values[op.output].dense => {
                let mut at = 0;
                for &u in &op.inputs {
                    read(&memory, u, &op.name);
                    if !net.lies_in(u, op.output, at) {
                        write(&mut memory, op.output, 0..width(u), at);
                    }
                    at += width(u);
                }
            }
            OpKind::Tensor(TensorOp::ChannelSlice { offset }) if net.lies_in(op.output, op.inputs[0], *offset) => read(&memory, op.inputs[0], &op.name),
            _ => {
                op.inputs.iter().for_each(|&u| read(&memory, u, &op.name));
                write(&mut memory, op.output, 0..width(op.output), 0);
            }
        }
    }
    net.outputs.iter().for_each(|&v| read(&memory, v, "the network's output"));
}
