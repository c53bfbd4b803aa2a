//! Engines: models on devices, behind one small interface ([`io`]). Engines import nothing of the
//! harness, the data layer or the benchmarks; they are given samples and shapes and answer batches.
//! What exists for one benchmark (its model code, import, kernels) lives in its family's folder;
//! here is what several families share.
//!
//! - [`io`]: the boundary types (`Engine`, `Sample`, `SampleSource`, `InputSpec`, `ElementType`,
//!   `Layout`).
//! - [`cpu`]: the CPU engine for image classifiers (tract), which runs CPU-only systems and is the
//!   accuracy oracle that GPU engines are compared against.
//! - [`gpu`]: the GPU layers (cudarc): the device layer, cuDNN and its graph API, our kernels, and
//!   the convolutional-network engine (ONNX -> fused plan) built by `generate_engines`.
//! - [`synthetic`]: the generator kit of the synthetic workloads (seeded weights and images, a
//!   convolutional network of ResNet50's topology, manifests); never submittable.
//! - [`serving`]: serving engines over HTTP (vLLM, SGLang, trtllm-serve, Dynamo, external
//!   endpoints): their dialects, the streaming client, launching, the tokenizer of text APIs, and
//!   the stand-in server.
//! - [`onnx_reader`], [`onnx_writer`]: ONNX protobuf messages for the importers and generators.

pub mod cpu;
pub mod gpu;
pub mod io;
pub mod onnx_reader;
pub mod onnx_writer;
pub mod serving;
pub mod synthetic;

pub use io::{ElementType, Engine, EngineError, InputSpec, Layout, Sample, SampleSource};
