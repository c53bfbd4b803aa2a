//! The linears through cuBLASLt (`engines::gpu::cublaslt`): `y = x W^T + b`, optionally GELU, on
//! fp16 row-major activations `[tokens, width]` with fp32 accumulation, the bias and GELU fused
//! into the product's epilogue; or, for int8 plans, `acc = x W^T` of int8 operands into int32
//! (cuBLASLt's IMMA path: A transposed, B not, K contiguous in both, dimensions multiples of 4),
//! which our epilogue kernel (`dequantize` in `kernels.cu`) scales, biases and activates.
//! Descriptors are made once per linear, and layouts and the chosen algorithm once per (shape,
//! token count).

use crate::engines::gpu::cublaslt::{Desc, Handle, Layout};
use crate::engines::gpu::device::{DevicePtr, Result};
use cudarc::cublaslt::sys;
use std::collections::HashMap;

pub use crate::engines::gpu::cublaslt::{require_cublaslt, version};

/// What the product's epilogue adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    Bias,
    /// Bias, then cuBLASLt's GELU (the tanh form).
    GeluBias,
}

/// What a product computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Product {
    /// fp16 operands and output, fp32 accumulation, cuBLASLt's epilogue.
    Fp16(Epilogue),
    /// int8 operands, int32 accumulation and output, no epilogue.
    Int8,
}

impl Product {
    /// Operand, output and compute types, and the scale type (alpha and beta).
    fn types(self) -> (sys::cudaDataType_t, sys::cudaDataType_t, sys::cublasComputeType_t, sys::cudaDataType_t) {
        use sys::cudaDataType_t::{CUDA_R_8I, CUDA_R_16F, CUDA_R_32F, CUDA_R_32I};
        match self {
            Product::Fp16(_) => (CUDA_R_16F, CUDA_R_16F, sys::cublasComputeType_t::CUBLAS_COMPUTE_32F, CUDA_R_32F),
            Product::Int8 => (CUDA_R_8I, CUDA_R_32I, sys::cublasComputeType_t::CUBLAS_COMPUTE_32I, CUDA_R_32I),
        }
    }
}

/// One linear's product description: weight `[outputs, inputs]` (fp16, or int8), what it computes.
pub struct Linear {
    desc: Desc,
    weight: DevicePtr,
    pub outputs: usize,
    pub inputs: usize,
    product: Product,
}

impl Linear {
    /// # Safety
    /// `weight` must hold `outputs * inputs` fp16 values and `bias` `outputs`, for as long as the
    /// linear is run.
    pub unsafe fn new(weight: DevicePtr, bias: DevicePtr, outputs: usize, inputs: usize, epilogue: Epilogue) -> Result<Linear> {
        let linear = Linear::described(weight, outputs, inputs, Product::Fp16(epilogue))?;
        let kind = match epilogue {
            Epilogue::Bias => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
            Epilogue::GeluBias => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
        };
        linear.desc.set(sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE, &kind)?;
        linear.desc.set(sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias.raw())?;
        Ok(linear)
    }

    /// An int8 linear: `[outputs, inputs]` int8 weight, int32 output, no epilogue. Shapes
    /// cuBLASLt's int8 path cannot take (not multiples of 4) fail when first run, naming them.
    ///
    /// # Safety
    /// `weight` must hold `outputs * inputs` int8 values for as long as the linear is run.
    pub unsafe fn int8(weight: DevicePtr, outputs: usize, inputs: usize) -> Result<Linear> {
        Linear::described(weight, outputs, inputs, Product::Int8)
    }

    /// The descriptor with A transposed (the weight's rows are its outputs).
    fn described(weight: DevicePtr, outputs: usize, inputs: usize, product: Product) -> Result<Linear> {
        let (_, _, compute, scale) = product.types();
        Ok(Linear { desc: Desc::new(compute, scale, true, false)?, weight, outputs, inputs, product })
    }
}

/// Layouts and algorithm of one product shape at one token count.
struct Prepared {
    a: Layout,
    b: Layout,
    c: Layout,
    algo: sys::cublasLtMatmulAlgo_t,
}

/// A cuBLASLt handle with its workspace and what it has prepared, for one stream's use.
pub struct Matmuls {
    // Declared first: dropped before the handle they were prepared with.
    prepared: HashMap<(usize, usize, Product, usize), Prepared>,
    handle: Handle,
}

impl Matmuls {
    pub fn new(workspace_bytes: usize) -> Result<Matmuls> {
        Ok(Matmuls { prepared: HashMap::new(), handle: Handle::new(workspace_bytes)? })
    }

    /// The layouts and algorithm of `linear` at `tokens`, made on first use.
    fn prepare<'a>(prepared: &'a mut HashMap<(usize, usize, Product, usize), Prepared>, handle: &Handle, linear: &Linear, tokens: usize) -> Result<&'a Prepared> {
        let key = (linear.outputs, linear.inputs, linear.product, tokens);
        if let std::collections::hash_map::Entry::Vacant(slot) = prepared.entry(key) {
            // Column-major views of the row-major operands: W^T is `inputs x outputs`
            // (transposed by the descriptor), x is `inputs x tokens`, y is `outputs x tokens`.
            let (operands, output, _, _) = linear.product.types();
            let a = Layout::new(operands, linear.inputs, linear.outputs)?;
            let b = Layout::new(operands, linear.inputs, tokens)?;
            let c = Layout::new(output, linear.outputs, tokens)?;
            let algo = handle.algorithm(&linear.desc, &a, &b, &c, || format!("{} x {} -> {} over {tokens} tokens", linear.inputs, linear.outputs, linear.outputs))?;
            slot.insert(Prepared { a, b, c, algo });
        }
        Ok(&prepared[&key])
    }

    /// Enqueues `y = epilogue(x W^T + b)` (fp16) or `y = x W^T` (int8 into int32) for `tokens`
    /// rows on `stream`.
    ///
    /// # Safety
    /// `x` must hold `tokens * inputs` values of the operand type and `y` `tokens * outputs` of
    /// the output type, until the stream has run the product; `stream` must belong to the current
    /// context.
    pub unsafe fn run(&mut self, linear: &Linear, x: DevicePtr, y: DevicePtr, tokens: usize, stream: cudarc::driver::sys::CUstream) -> Result<()> {
        let p = Self::prepare(&mut self.prepared, &self.handle, linear, tokens)?;
        // One in the scale type: f32 and i32 share their bit patterns' size.
        let alpha: u32 = match linear.product {
            Product::Fp16(_) => 1.0f32.to_bits(),
            Product::Int8 => 1,
        };
        // SAFETY: the operands hold what the layouts describe (the caller's contract and
        // `Linear::new`'s); alpha holds the descriptor's scale type's bits; the algorithm was
        // chosen for these layouts.
        unsafe { self.handle.enqueue(&linear.desc, &alpha, (linear.weight, &p.a), (x, &p.b), (y, &p.c), &p.algo, stream) }
    }
}
