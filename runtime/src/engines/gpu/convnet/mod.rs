//! The convnet engine: an op-by-op fp16 engine for static-shape convolutional networks imported
//! from ONNX (3D-UNet's 3-D convolutions, instance norms, transposed convolutions and
//! concatenations; 2-D convolutions with groups, SiLU and ReLU for image networks). A shared layer:
//! families (`benchmarks::unet3d::gpu`) run it, it imports none of them.
//!
//! - [`import`]: ONNX to [`import::Net`], channels-last shapes (channels padded to 8), fusions,
//!   weights in the GPU's layout. CPU only, tested in CI.
//! - [`place`]: where each value's rows live: concatenations written in place by their inputs'
//!   producers, channel slices as views.
//! - [`plan`]: the plan's header and key, in the GPU plans' file framing (stale or corrupt plans
//!   refused with the command that rebuilds them).
//! - [`builder`]: algorithms timed on the GPU into the plan.
//! - [`tensor`]: max pooling, upsampling, splits and residual sums on images; Reshape, Transpose,
//!   Split, Slice, Concat, MatMul, Softmax and broadcast arithmetic on dense f32 values (YOLO's
//!   attention and detection head); launched by `tensor_exec` (`tensor.cu`).
//! - [`exec`]: a plan on one GPU, one slot per inference stream: cuDNN convolutions (transposed
//!   ones as backward data), our kernels (`kernels.cu`) for the rest, CUDA graphs.

pub mod builder;
pub mod exec;
pub mod import;
pub mod place;
pub mod plan;
pub mod tensor;
mod tensor_exec;

#[cfg(test)]
mod tests;
