//! `mlperf`: the compiled MLPerf Inference submission tool. The configuration this binary runs was
//! validated at build time and baked into `TABLES`; the runtime crate does the work.

mod cli;

use clap::Parser;
use mlperf_config::Tables;

mod tables {
    include!(concat!(env!("OUT_DIR"), "/tables.rs"));
}

static TABLES: Tables = Tables { rounds: tables::ROUNDS, systems: tables::SYSTEMS, configs: tables::CONFIGS, locked_system: tables::LOCKED_SYSTEM };

fn main() {
    let (args, overrides) = cli::split_overrides(std::env::args().collect());
    let cli = cli::Cli::parse_from(args);
    if let Err(error) = cli::start_logging(&cli).and_then(|()| cli::run(cli, overrides)) {
        eprintln!("error: {error}");
        // Whatever failed on the way, a command stopped by a signal exits as the shell reports a
        // process killed by it.
        let code = mlperf_runtime::signals::received().map_or_else(|| error.exit_code(), |s| s.exit_code());
        std::process::exit(code);
    }
}
