//! LLM serving engines over HTTP: the harness is a client, never an engine. [`api`] knows each
//! engine's dialect, [`client`] streams requests over many endpoints, [`launch`] starts and stops
//! engines from a config, [`stand_in`] plays an engine in tests and benches, [`measure`] drives
//! endpoints without LoadGen (the rate probe and `mlperf bench llm`).

pub mod api;
pub mod client;
#[cfg(test)]
mod contract_tests;
mod error;
pub mod launch;
pub mod measure;
pub mod stand_in;
pub mod tokenizer;

pub use error::ServingError;
