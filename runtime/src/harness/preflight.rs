//! Pre-flight: before a config's serving engine is started and before its first sample runs, each
//! planned run's family checks what the run will read (its dataset, and for an accuracy run what
//! the scorer reads: the tokenizer, the references). A bad file is then an error in seconds, not
//! after a real engine has loaded its weights or every sample has run.

use super::RunRequest;
use crate::benchmarks::{self, WorkloadSpec};
use crate::error::Error;
use crate::rundir::plan::RunMode;
use mlperf_config::{BenchmarkRound, CompiledConfig};

/// Checks every run of `config` that `req` plans, as its family reads it.
pub fn check(req: &RunRequest, config: &CompiledConfig, bench: &BenchmarkRound, system_name: &str, bench_dir: &str) -> Result<(), Error> {
    let family = benchmarks::family(&config.benchmark);
    for (mode, _) in req.test_mode.runs() {
        let plan = super::plan(req, config, bench, system_name, bench_dir, mode);
        family.preflight(&WorkloadSpec::of_plan(&plan), mode == RunMode::AccuracyOnly)?;
    }
    Ok(())
}
