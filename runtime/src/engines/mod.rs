//! Engines: models on devices, behind one small interface ([`io`]). Engines import nothing of the
//! harness or the benchmarks; they are given samples and shapes and answer batches.
//!
//! - [`io`]: the boundary types (`Engine`, `Sample`, `SampleSource`, `InputSpec`, `ElementType`,
//!   `Layout`).
//! - [`cpu`]: the CPU engine (tract), which runs CPU-only systems and is the accuracy oracle that
//!   GPU engines are compared against.
//! - [`cpu_bert`]: the CPU engine for BERT question answering (tract, sequence-length buckets).
//! - [`gpu`]: the GPU engine (ONNX -> fused cuDNN plan, run through cudarc), built by
//!   `generate_engines`.
//! - [`synthetic`]: the synthetic models (BERT: MLPerf's interface at a small size) and the ResNet50 generator (a seeded model of the real topology,
//!   generated images and the labels the CPU engine gives them); never submittable.
//! - [`serving`]: LLM serving engines over HTTP (vLLM, SGLang, trtllm-serve, Dynamo, external
//!   endpoints): their dialects, the streaming client, launching, and the stand-in server.
//! - [`test_doubles`]: a null and a fixed-latency engine, for exercising the harness.

pub mod cpu;
pub mod cpu_bert;
pub mod cpu_unet3d;
pub mod gpu;
pub mod io;
pub mod onnx_reader;
pub mod onnx_writer;
pub mod serving;
pub mod synthetic;
pub mod test_doubles;

pub use io::{ElementType, Engine, InputSpec, Layout, Sample, SampleSource};
