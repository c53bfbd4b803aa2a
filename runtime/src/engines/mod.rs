//! Engines behind the harness's `Engine` trait.
//!
//! - [`cpu`]: the CPU engine (tract), which runs CPU-only systems and is the accuracy oracle that
//!   GPU engines are compared against.
//! - [`gpu`]: the GPU engine (ONNX -> fused cuDNN plan, run through cudarc), built by
//!   `generate_engines`.
//! - [`synthetic`]: the synthetic ResNet50 workload of the CPU-only system (a seeded model of the
//!   real topology, generated images and the labels the CPU engine gives them); never submittable.

pub mod cpu;
pub mod gpu;
pub mod onnx_writer;
pub mod synthetic;
