//! The MLPerf configuration compiler: schema, `extends` resolution with provenance, validation,
//! diagnostics and rendering. Used by build.rs (to bake the tables), by the runtime (to read them)
//! and by tests directly.
//!
//! Pipeline: `compile::compile` reads rounds/, systems/ and configs/ -> `raw` span-carrying values ->
//! `resolve` (extends, provenance) -> typed `schema::Settings` checked against `round`, `system` and
//! `benchmark` -> `table` types -> `emit` Rust source for `include!`.

pub mod bake;
pub mod benchmark;
pub mod compile;
pub mod diag;
pub mod emit;
pub mod field;
pub mod loadgen_conf;
pub mod raw;
pub mod render;
pub mod resolve;
pub mod round;
pub mod schema;
pub mod serving;
pub mod system;
pub mod table;
pub mod types;

// Baked tables name their types as `::mlperf_config::<Type>`.
pub use round::{
    AccuracyRequirement, Audit, AuditTest, BenchmarkRound, ComplianceSeeds, Layout, LoadgenPin, OutputTokenBounds, PerModel, Round, ScenarioSet, Seeds, Table, Test07Set,
    TokenLimits,
};
pub use schema::Settings;
pub use serving::check_server_url;
pub use system::{GpuIdentity, HardwareIdentity, SystemInfo};
pub use table::{CompiledConfig, FieldOrigin, Origin, Overridden, Tables};
pub use types::{AccuracyTarget, DataType, DatasetSource, EngineKind, Harness, InputFormat, PowerSetting, Scenario, ServingApi, ServingEngine, Workload};
