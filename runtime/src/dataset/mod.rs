//! Scratch space, preprocessing and sample libraries.
//!
//! - [`scratch`]: NVIDIA's scratch-space layout (`$MLPERF_SCRATCH_PATH/{data,models,preprocessed_data}`)
//!   and a report of what a benchmark needs, what is present, and how to get what is missing.
//! - [`npy`]: NumPy `.npy` files, the format of every preprocessed tensor.
//! - [`imagenet`]: ImageNet validation JPEGs to ResNet50 input tensors (NVIDIA's `int8_linear` and
//!   friends), with [`cvresize`] reproducing OpenCV's INTER_AREA resize.
//! - [`wordpiece`] and [`squad`]: the BERT tokenizer and SQuAD v1.1 features (`input_ids.npy`,
//!   `segment_ids.npy`, `input_mask.npy` and the metadata the accuracy script needs).
//! - [`hf_tokenizer`]: a model's Hugging Face `tokenizer.json`: the output ids of text-only
//!   serving APIs, and the text of logged answers for the accuracy scorers.
//! - [`llm`]: the LLM benchmarks' official dataset files, read as published (prompt ids and
//!   reference answers).
//! - [`qsl`]: the query sample library LoadGen drives and engines read samples from.

pub mod cvresize;
pub mod hf_tokenizer;
pub mod imagenet;
pub mod llm;
pub mod npy;
pub mod pandas;
pub mod pickle;
pub mod qsl;
pub mod scratch;
pub mod squad;
pub mod wordpiece;
