//! Lowering a graph description to cuDNN's backend calls, through the small [`Backend`] trait: the
//! real backend ([`super::checked::Cudnn`]) makes the calls, a recording one in the tests writes
//! them down, so the exact Create / SetAttribute / Finalize sequence a graph produces is checked
//! in CI without libcudnn. Attribute names and descriptor kinds are cudarc's `sys` enums (plain
//! Rust enums: naming them loads nothing), so the sequence reads as cuDNN's documentation does.

use super::error::GraphError;
use super::spec::{DataType, Operation, OperationGraph, PointwiseMode, Uid};
use cudarc::cudnn::sys;
use std::collections::HashMap;
use std::ffi::c_void;

pub type DescriptorKind = sys::cudnnBackendDescriptorType_t;
pub type Attr = sys::cudnnBackendAttributeName_t;

use sys::cudnnBackendAttributeName_t as A;
use sys::cudnnBackendDescriptorType_t as K;

/// An attribute's value, typed; the real backend maps each variant to cuDNN's attribute type and
/// element count in one place (`checked::Cudnn::set`). `D` is how descriptors are referred to.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue<D> {
    Int64s(Vec<i64>),
    Float(f32),
    Bool(bool),
    DataType(sys::cudnnDataType_t),
    PointwiseMode(sys::cudnnPointwiseMode_t),
    ConvolutionMode(sys::cudnnConvolutionMode_t),
    HeurMode(sys::cudnnBackendHeurMode_t),
    /// Finalized descriptors.
    Descriptors(Vec<D>),
    /// The backend's cuDNN handle.
    Handle,
    /// Device addresses: a variant pack's data pointers and workspace.
    Pointers(Vec<*mut c_void>),
    /// Bytes: a serialised plan.
    Chars(Vec<u8>),
}

/// cuDNN's backend API as lowering uses it: descriptors are created, given attributes, then
/// finalized, and a descriptor may be referred to only once finalized.
pub trait Backend {
    /// An owned descriptor (the real backend destroys it on drop).
    type Descriptor;

    fn create(&mut self, kind: DescriptorKind) -> Result<Self::Descriptor, GraphError>;
    fn set(&mut self, descriptor: &Self::Descriptor, attr: Attr, value: AttrValue<&Self::Descriptor>) -> Result<(), GraphError>;
    fn finalize(&mut self, descriptor: &Self::Descriptor) -> Result<(), GraphError>;
}

/// Creates a descriptor of `kind`, sets `attrs` in order and finalizes it.
pub fn build<'d, B: Backend>(backend: &mut B, kind: DescriptorKind, attrs: Vec<(Attr, AttrValue<&'d B::Descriptor>)>) -> Result<B::Descriptor, GraphError>
where
    B::Descriptor: 'd,
{
    let descriptor = backend.create(kind)?;
    for (attr, value) in attrs {
        backend.set(&descriptor, attr, value)?;
    }
    backend.finalize(&descriptor)?;
    Ok(descriptor)
}

/// A graph's finalized descriptors: tensors, each operation's settings and operation descriptors,
/// and the operation graph last, in creation order. Dropped in reverse, so that no descriptor
/// outlives one it refers to.
pub struct Lowered<D> {
    descriptors: Vec<D>,
}

impl<D> Lowered<D> {
    /// The operation graph.
    pub fn graph(&self) -> &D {
        self.descriptors.last().expect("lowering makes the operation graph last")
    }
}

impl<D> Drop for Lowered<D> {
    fn drop(&mut self) {
        while self.descriptors.pop().is_some() {}
    }
}

pub fn cudnn_data_type(t: DataType) -> sys::cudnnDataType_t {
    match t {
        DataType::Int8 => sys::cudnnDataType_t::CUDNN_DATA_INT8,
        DataType::Int32 => sys::cudnnDataType_t::CUDNN_DATA_INT32,
        DataType::Half => sys::cudnnDataType_t::CUDNN_DATA_HALF,
        DataType::Float => sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
    }
}

fn cudnn_pointwise_mode(mode: PointwiseMode) -> sys::cudnnPointwiseMode_t {
    use sys::cudnnPointwiseMode_t::*;
    match mode {
        PointwiseMode::Add => CUDNN_POINTWISE_ADD,
        PointwiseMode::Mul => CUDNN_POINTWISE_MUL,
        PointwiseMode::ReluFwd => CUDNN_POINTWISE_RELU_FWD,
        PointwiseMode::GeluFwd => CUDNN_POINTWISE_GELU_FWD,
        PointwiseMode::Identity => CUDNN_POINTWISE_IDENTITY,
        PointwiseMode::SwishFwd => CUDNN_POINTWISE_SWISH_FWD,
    }
}

/// Validates `spec`, then builds its descriptors: every tensor, then per operation its settings
/// descriptor and the operation descriptor, then the operation graph (docs/cudnn-graph-api.md §1).
pub fn lower<B: Backend>(backend: &mut B, spec: &OperationGraph) -> Result<Lowered<B::Descriptor>, GraphError> {
    spec.validate()?;
    // Built in place, so that a failure part way drops what was made in reverse too.
    let mut lowered = Lowered { descriptors: Vec::new() };
    let mut tensor_at = HashMap::new();
    for t in &spec.tensors {
        let tensor = build(
            backend,
            K::CUDNN_BACKEND_TENSOR_DESCRIPTOR,
            vec![
                (A::CUDNN_ATTR_TENSOR_DATA_TYPE, AttrValue::DataType(cudnn_data_type(t.data_type))),
                (A::CUDNN_ATTR_TENSOR_DIMENSIONS, AttrValue::Int64s(t.dims.clone())),
                (A::CUDNN_ATTR_TENSOR_STRIDES, AttrValue::Int64s(t.strides.clone())),
                (A::CUDNN_ATTR_TENSOR_UNIQUE_ID, AttrValue::Int64s(vec![t.uid])),
                (A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, AttrValue::Int64s(vec![t.alignment])),
                (A::CUDNN_ATTR_TENSOR_IS_VIRTUAL, AttrValue::Bool(t.is_virtual)),
            ],
        )?;
        tensor_at.insert(t.uid, lowered.descriptors.len());
        lowered.descriptors.push(tensor);
    }
    let mut operations = Vec::new();
    for op in &spec.operations {
        let made = &lowered.descriptors;
        let tensor = |uid: Uid| AttrValue::Descriptors(vec![&made[tensor_at[&uid]]]);
        let (settings, operation) = lower_operation(backend, op, &tensor)?;
        lowered.descriptors.push(settings);
        operations.push(lowered.descriptors.len());
        lowered.descriptors.push(operation);
    }
    let ops = AttrValue::Descriptors(operations.iter().map(|&i| &lowered.descriptors[i]).collect());
    let graph =
        build(backend, K::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, vec![(A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, AttrValue::Handle), (A::CUDNN_ATTR_OPERATIONGRAPH_OPS, ops)])?;
    lowered.descriptors.push(graph);
    Ok(lowered)
}

/// An operation's settings descriptor (convolution, pointwise or matmul) and the operation
/// descriptor that names it and its tensors.
fn lower_operation<'d, B: Backend>(backend: &mut B, op: &Operation, tensor: &dyn Fn(Uid) -> AttrValue<&'d B::Descriptor>) -> Result<(B::Descriptor, B::Descriptor), GraphError> {
    match op {
        Operation::ConvolutionForward { x, w, y, conv } => {
            let settings = build(
                backend,
                K::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                vec![
                    (A::CUDNN_ATTR_CONVOLUTION_COMP_TYPE, AttrValue::DataType(cudnn_data_type(conv.compute))),
                    (A::CUDNN_ATTR_CONVOLUTION_CONV_MODE, AttrValue::ConvolutionMode(sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION)),
                    (A::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, AttrValue::Int64s(vec![2])),
                    (A::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, AttrValue::Int64s(conv.padding.to_vec())),
                    (A::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, AttrValue::Int64s(conv.padding.to_vec())),
                    (A::CUDNN_ATTR_CONVOLUTION_DILATIONS, AttrValue::Int64s(conv.dilation.to_vec())),
                    (A::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, AttrValue::Int64s(conv.stride.to_vec())),
                ],
            )?;
            let operation = build(
                backend,
                K::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                vec![
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, tensor(*x)),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, tensor(*w)),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, tensor(*y)),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, AttrValue::Descriptors(vec![&settings])),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, AttrValue::Float(1.0)),
                    (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, AttrValue::Float(0.0)),
                ],
            )?;
            Ok((settings, operation))
        }
        Operation::Pointwise { mode, precision, x, b, y } => {
            let settings = build(
                backend,
                K::CUDNN_BACKEND_POINTWISE_DESCRIPTOR,
                vec![
                    (A::CUDNN_ATTR_POINTWISE_MODE, AttrValue::PointwiseMode(cudnn_pointwise_mode(*mode))),
                    (A::CUDNN_ATTR_POINTWISE_MATH_PREC, AttrValue::DataType(cudnn_data_type(*precision))),
                ],
            )?;
            let mut attrs = vec![(A::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, AttrValue::Descriptors(vec![&settings])), (A::CUDNN_ATTR_OPERATION_POINTWISE_XDESC, tensor(*x))];
            attrs.extend(b.map(|b| (A::CUDNN_ATTR_OPERATION_POINTWISE_BDESC, tensor(b))));
            attrs.push((A::CUDNN_ATTR_OPERATION_POINTWISE_YDESC, tensor(*y)));
            let operation = build(backend, K::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, attrs)?;
            Ok((settings, operation))
        }
        Operation::Matmul { a, b, c, compute } => {
            let settings = build(backend, K::CUDNN_BACKEND_MATMUL_DESCRIPTOR, vec![(A::CUDNN_ATTR_MATMUL_COMP_TYPE, AttrValue::DataType(cudnn_data_type(*compute)))])?;
            let operation = build(
                backend,
                K::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
                vec![
                    (A::CUDNN_ATTR_OPERATION_MATMUL_ADESC, tensor(*a)),
                    (A::CUDNN_ATTR_OPERATION_MATMUL_BDESC, tensor(*b)),
                    (A::CUDNN_ATTR_OPERATION_MATMUL_CDESC, tensor(*c)),
                    (A::CUDNN_ATTR_OPERATION_MATMUL_DESC, AttrValue::Descriptors(vec![&settings])),
                ],
            )?;
            Ok((settings, operation))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::{ConvLayer, Gemm, bert_gemm, conv_scale_bias_residual_relu, matmul_bias_gelu, resnet_layer};
    use super::*;
    use std::collections::HashSet;
    use sys::cudnnDataType_t::*;
    use sys::cudnnPointwiseMode_t::*;

    /// A descriptor of the recording backend: its index in creation order.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Id(usize);

    #[derive(Clone, Debug, PartialEq)]
    enum Call {
        Create(DescriptorKind),
        Set(Attr, AttrValue<usize>),
        Finalize,
    }

    /// The test double at the FFI boundary: writes every call down, with the descriptor it is on.
    #[derive(Default)]
    struct Recorder {
        calls: Vec<(usize, Call)>,
        created: usize,
    }

    impl Backend for Recorder {
        type Descriptor = Id;

        fn create(&mut self, kind: DescriptorKind) -> Result<Id, GraphError> {
            self.created += 1;
            self.calls.push((self.created - 1, Call::Create(kind)));
            Ok(Id(self.created - 1))
        }

        fn set(&mut self, d: &Id, attr: Attr, value: AttrValue<&Id>) -> Result<(), GraphError> {
            let value = match value {
                AttrValue::Int64s(v) => AttrValue::Int64s(v),
                AttrValue::Float(v) => AttrValue::Float(v),
                AttrValue::Bool(v) => AttrValue::Bool(v),
                AttrValue::DataType(v) => AttrValue::DataType(v),
                AttrValue::PointwiseMode(v) => AttrValue::PointwiseMode(v),
                AttrValue::ConvolutionMode(v) => AttrValue::ConvolutionMode(v),
                AttrValue::HeurMode(v) => AttrValue::HeurMode(v),
                AttrValue::Descriptors(v) => AttrValue::Descriptors(v.into_iter().map(|d| d.0).collect()),
                AttrValue::Handle => AttrValue::Handle,
                AttrValue::Pointers(v) => AttrValue::Pointers(v),
                AttrValue::Chars(v) => AttrValue::Chars(v),
            };
            self.calls.push((d.0, Call::Set(attr, value)));
            Ok(())
        }

        fn finalize(&mut self, d: &Id) -> Result<(), GraphError> {
            self.calls.push((d.0, Call::Finalize));
            Ok(())
        }
    }

    /// The recorded calls of lowering `spec`, checked for what holds of every graph: each call is on
    /// a created descriptor not yet finalized, each descriptor referred to is finalized, every
    /// descriptor ends finalized, and the tensors' uids are unique.
    fn record(spec: &OperationGraph) -> Recording {
        let mut recorder = Recorder::default();
        let lowered = lower(&mut recorder, spec).unwrap();
        let mut kinds = Vec::new();
        let mut finalized = HashSet::new();
        let mut uids = HashSet::new();
        for (d, call) in &recorder.calls {
            match call {
                Call::Create(kind) => {
                    assert_eq!(*d, kinds.len(), "created in order");
                    kinds.push(*kind);
                }
                Call::Set(attr, value) => {
                    assert!(*d < kinds.len() && !finalized.contains(d), "{attr:?} set on descriptor {d}, which is not open");
                    if let AttrValue::Descriptors(refs) = value {
                        assert!(refs.iter().all(|r| finalized.contains(r)), "{attr:?} of descriptor {d} refers to one of {refs:?} before it is finalized");
                    }
                    if let (A::CUDNN_ATTR_TENSOR_UNIQUE_ID, AttrValue::Int64s(uid)) = (attr, value) {
                        assert!(uids.insert(uid.clone()), "uid {uid:?} given twice");
                    }
                }
                Call::Finalize => assert!(finalized.insert(*d), "descriptor {d} finalized twice"),
            }
        }
        assert_eq!(finalized.len(), kinds.len(), "every descriptor finalized");
        assert_eq!(*lowered.graph(), Id(kinds.len() - 1), "the operation graph is made last");
        assert_eq!(lowered.descriptors.len(), kinds.len(), "every descriptor kept");
        Recording { calls: recorder.calls, kinds }
    }

    struct Recording {
        calls: Vec<(usize, Call)>,
        kinds: Vec<DescriptorKind>,
    }

    impl Recording {
        /// The attributes set on descriptor `d`, in order.
        fn attrs(&self, d: usize) -> Vec<(Attr, AttrValue<usize>)> {
            let sets = self.calls.iter().filter(|(on, _)| *on == d);
            sets.filter_map(|(_, call)| match call {
                Call::Set(attr, value) => Some((*attr, value.clone())),
                _ => None,
            })
            .collect()
        }

        fn get(&self, d: usize, attr: Attr) -> AttrValue<usize> {
            self.attrs(d).into_iter().find(|(a, _)| *a == attr).unwrap_or_else(|| panic!("{attr:?} set on descriptor {d}")).1
        }

        fn single(&self, d: usize, attr: Attr) -> usize {
            let AttrValue::Descriptors(refs) = self.get(d, attr) else { panic!("{attr:?} is a descriptor") };
            assert_eq!(refs.len(), 1, "{attr:?} names one descriptor");
            refs[0]
        }

        fn of_kind(&self, kind: DescriptorKind) -> Vec<usize> {
            (0..self.kinds.len()).filter(|&d| self.kinds[d] == kind).collect()
        }

        /// The tensor descriptor of uid `uid`.
        fn tensor(&self, uid: Uid) -> usize {
            let mut found = self.of_kind(K::CUDNN_BACKEND_TENSOR_DESCRIPTOR).into_iter().filter(|&d| self.get(d, A::CUDNN_ATTR_TENSOR_UNIQUE_ID) == AttrValue::Int64s(vec![uid]));
            found.next().unwrap_or_else(|| panic!("a tensor of uid {uid}"))
        }

        /// The uid of the tensor descriptor `d`.
        fn uid(&self, d: usize) -> Uid {
            let AttrValue::Int64s(uid) = self.get(d, A::CUDNN_ATTR_TENSOR_UNIQUE_ID) else { panic!("a uid") };
            uid[0]
        }

        fn assert_tensor(&self, uid: Uid, data_type: sys::cudnnDataType_t, dims: &[i64], strides: &[i64], is_virtual: bool) {
            let expected = vec![
                (A::CUDNN_ATTR_TENSOR_DATA_TYPE, AttrValue::DataType(data_type)),
                (A::CUDNN_ATTR_TENSOR_DIMENSIONS, AttrValue::Int64s(dims.to_vec())),
                (A::CUDNN_ATTR_TENSOR_STRIDES, AttrValue::Int64s(strides.to_vec())),
                (A::CUDNN_ATTR_TENSOR_UNIQUE_ID, AttrValue::Int64s(vec![uid])),
                (A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, AttrValue::Int64s(vec![16])),
                (A::CUDNN_ATTR_TENSOR_IS_VIRTUAL, AttrValue::Bool(is_virtual)),
            ];
            assert_eq!(self.attrs(self.tensor(uid)), expected, "tensor {uid}");
        }

        /// Each pointwise operation, in graph order: mode, math precision, and the uids of x, b, y.
        fn pointwise(&self) -> Vec<(sys::cudnnPointwiseMode_t, sys::cudnnDataType_t, Uid, Option<Uid>, Uid)> {
            let ops = self.of_kind(K::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
            ops.into_iter()
                .map(|op| {
                    let settings = self.single(op, A::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
                    assert_eq!(self.attrs(settings).len(), 2, "mode and math precision only");
                    let AttrValue::PointwiseMode(mode) = self.get(settings, A::CUDNN_ATTR_POINTWISE_MODE) else { panic!("a mode") };
                    let AttrValue::DataType(precision) = self.get(settings, A::CUDNN_ATTR_POINTWISE_MATH_PREC) else { panic!("a type") };
                    let has_b = self.attrs(op).iter().any(|(a, _)| *a == A::CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
                    let uid = |attr| self.uid(self.single(op, attr));
                    let b = has_b.then(|| uid(A::CUDNN_ATTR_OPERATION_POINTWISE_BDESC));
                    (mode, precision, uid(A::CUDNN_ATTR_OPERATION_POINTWISE_XDESC), b, uid(A::CUDNN_ATTR_OPERATION_POINTWISE_YDESC))
                })
                .collect()
        }

        /// The operation graph's attributes: the handle, then the operations in order.
        fn assert_graph(&self, operations: Vec<usize>) {
            let graph = self.kinds.len() - 1;
            assert_eq!(self.kinds[graph], K::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
            let expected = vec![(A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, AttrValue::Handle), (A::CUDNN_ATTR_OPERATIONGRAPH_OPS, AttrValue::Descriptors(operations))];
            assert_eq!(self.attrs(graph), expected);
        }
    }

    #[test]
    fn conv_scale_bias_residual_relu_lowers_as_support_surface_90_wants() {
        let layer = resnet_layer();
        let r = record(&conv_scale_bias_residual_relu(&layer).unwrap());
        let (n, c, h, w, k) = (64, 64, 56, 56, 64);
        r.assert_tensor(ConvLayer::X, CUDNN_DATA_INT8, &[n, c, h, w], &[h * w * c, 1, w * c, c], false);
        r.assert_tensor(ConvLayer::W, CUDNN_DATA_INT8, &[k, c, 3, 3], &[c * 9, 1, 3 * c, c], false);
        for uid in [ConvLayer::SCALE, ConvLayer::BIAS] {
            r.assert_tensor(uid, CUDNN_DATA_FLOAT, &[1, k, 1, 1], &[k, 1, k, k], false);
        }
        let out = [h * w * k, 1, w * k, k];
        r.assert_tensor(ConvLayer::RESIDUAL, CUDNN_DATA_INT8, &[n, k, h, w], &out, false);
        r.assert_tensor(ConvLayer::Y, CUDNN_DATA_INT8, &[n, k, h, w], &out, false);
        for uid in 101..=104 {
            r.assert_tensor(uid, CUDNN_DATA_FLOAT, &[n, k, h, w], &out, true);
        }

        let [conv_op] = r.of_kind(K::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR)[..] else { panic!("one convolution") };
        let conv = r.single(conv_op, A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC);
        let expected = vec![
            (A::CUDNN_ATTR_CONVOLUTION_COMP_TYPE, AttrValue::DataType(CUDNN_DATA_INT32)),
            (A::CUDNN_ATTR_CONVOLUTION_CONV_MODE, AttrValue::ConvolutionMode(sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION)),
            (A::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, AttrValue::Int64s(vec![2])),
            (A::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, AttrValue::Int64s(vec![1, 1])),
            (A::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, AttrValue::Int64s(vec![1, 1])),
            (A::CUDNN_ATTR_CONVOLUTION_DILATIONS, AttrValue::Int64s(vec![1, 1])),
            (A::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, AttrValue::Int64s(vec![1, 1])),
        ];
        assert_eq!(r.attrs(conv), expected);
        let expected = vec![
            (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, AttrValue::Descriptors(vec![r.tensor(ConvLayer::X)])),
            (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, AttrValue::Descriptors(vec![r.tensor(ConvLayer::W)])),
            (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, AttrValue::Descriptors(vec![r.tensor(101)])),
            (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, AttrValue::Descriptors(vec![conv])),
            (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, AttrValue::Float(1.0)),
            (A::CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, AttrValue::Float(0.0)),
        ];
        assert_eq!(r.attrs(conv_op), expected);

        // y first in every pointwise operation, the broadcast tensors second, the int8 output last.
        let float = CUDNN_DATA_FLOAT;
        let expected = vec![
            (CUDNN_POINTWISE_MUL, float, 101, Some(ConvLayer::SCALE), 102),
            (CUDNN_POINTWISE_ADD, float, 102, Some(ConvLayer::BIAS), 103),
            (CUDNN_POINTWISE_ADD, float, 103, Some(ConvLayer::RESIDUAL), 104),
            (CUDNN_POINTWISE_RELU_FWD, float, 104, None, ConvLayer::Y),
        ];
        assert_eq!(r.pointwise(), expected);
        r.assert_graph([vec![conv_op], r.of_kind(K::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)].concat());
    }

    #[test]
    fn matmul_bias_gelu_lowers_as_the_fusion_wants() {
        let Gemm { m, k, n } = bert_gemm();
        let r = record(&matmul_bias_gelu(&bert_gemm()).unwrap());
        r.assert_tensor(Gemm::A, CUDNN_DATA_HALF, &[1, m, k], &[m * k, k, 1], false);
        r.assert_tensor(Gemm::WEIGHTS, CUDNN_DATA_HALF, &[1, k, n], &[k * n, n, 1], false);
        r.assert_tensor(Gemm::BIAS, CUDNN_DATA_HALF, &[1, 1, n], &[n, n, 1], false);
        r.assert_tensor(101, CUDNN_DATA_FLOAT, &[1, m, n], &[m * n, n, 1], true);
        r.assert_tensor(102, CUDNN_DATA_FLOAT, &[1, m, n], &[m * n, n, 1], true);
        r.assert_tensor(Gemm::OUT, CUDNN_DATA_HALF, &[1, m, n], &[m * n, n, 1], false);

        let [matmul_op] = r.of_kind(K::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)[..] else { panic!("one matmul") };
        let matmul = r.single(matmul_op, A::CUDNN_ATTR_OPERATION_MATMUL_DESC);
        assert_eq!(r.attrs(matmul), vec![(A::CUDNN_ATTR_MATMUL_COMP_TYPE, AttrValue::DataType(CUDNN_DATA_FLOAT))]);
        let expected = vec![
            (A::CUDNN_ATTR_OPERATION_MATMUL_ADESC, AttrValue::Descriptors(vec![r.tensor(Gemm::A)])),
            (A::CUDNN_ATTR_OPERATION_MATMUL_BDESC, AttrValue::Descriptors(vec![r.tensor(Gemm::WEIGHTS)])),
            (A::CUDNN_ATTR_OPERATION_MATMUL_CDESC, AttrValue::Descriptors(vec![r.tensor(101)])),
            (A::CUDNN_ATTR_OPERATION_MATMUL_DESC, AttrValue::Descriptors(vec![matmul])),
        ];
        assert_eq!(r.attrs(matmul_op), expected);
        let float = CUDNN_DATA_FLOAT;
        assert_eq!(r.pointwise(), vec![(CUDNN_POINTWISE_ADD, float, 101, Some(Gemm::BIAS), 102), (CUDNN_POINTWISE_GELU_FWD, float, 102, None, Gemm::OUT)]);
        r.assert_graph([vec![matmul_op], r.of_kind(K::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)].concat());
    }

    #[test]
    fn an_invalid_graph_makes_no_call() {
        let mut spec = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        spec.tensors.iter_mut().find(|t| t.uid == 103).unwrap().is_virtual = false;
        let mut recorder = Recorder::default();
        let err = lower(&mut recorder, &spec).err().expect("refused");
        assert!(matches!(err, GraphError::Spec(_)), "{err}");
        assert!(recorder.calls.is_empty());
    }
}
