//! Command-line surface (NVIDIA's command and flag names), parsed raw by clap and resolved into
//! runtime calls here.

use clap::{Args, Parser, Subcommand};
use mlperf_config::Tables;
use mlperf_runtime::{detect, generate, select, show};

#[derive(Parser, Debug)]
#[command(name = "mlperf", version, about = "Compiled MLPerf Inference submission system")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Which configs a command works on (NVIDIA's RUN_ARGS selection flags).
#[derive(Args, Debug, Default)]
pub struct Selection {
    /// Comma-separated benchmarks (resnet50, bert, llama2-70b, ...); default: all configured.
    #[arg(long)]
    pub benchmarks: Option<String>,
    /// Comma-separated scenarios (offline, server, singlestream, multistream, interactive).
    #[arg(long)]
    pub scenarios: Option<String>,
    /// Legacy workload name: default, high_accuracy, maxq, high_accuracy_maxq, triton, ..., or all.
    #[arg(long = "config_ver")]
    pub config_ver: Option<String>,
    /// 0.99 or 0.999.
    #[arg(long = "accuracy_target")]
    pub accuracy_target: Option<String>,
    /// MaxP or MaxQ.
    #[arg(long = "power_setting")]
    pub power_setting: Option<String>,
    /// custom, triton or hetero.
    #[arg(long = "harness_type")]
    pub harness_type: Option<String>,
    /// Use this system instead of the detected one (development builds only; env SYSTEM_NAME).
    #[arg(long = "system_name")]
    pub system_name: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Detected hardware, the matching system (or the nearest and why not), and the build.
    Info,
    /// The systems this binary holds.
    Systems,
    /// Write user.conf, measurements.json, README.md, mlperf.conf and system descriptions for every
    /// compiled config into measurements/ (or --out), in each round's layout.
    #[command(name = "generate_conf_files", alias = "generate-conf-files")]
    GenerateConfFiles {
        /// Output directory.
        #[arg(long, default_value = "measurements")]
        out: std::path::PathBuf,
        /// Round to generate (v6.1, v5.1) or all.
        #[arg(long, default_value = "all")]
        round: String,
        /// Delete files under the generated round directories that no config produces any more.
        #[arg(long)]
        prune: bool,
    },
    /// Inspect the compiled configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Effective values of the selected configs, with the file:line that set each.
    Show {
        #[command(flatten)]
        selection: Selection,
        /// Also print each field's help, its user.conf key and what each value overrode.
        #[arg(long)]
        explain: bool,
    },
    /// Every config field: type, unit, applicability, LoadGen key.
    Fields,
}

pub fn run(cli: Cli, tables: &'static Tables) -> Result<(), String> {
    match cli.command {
        Command::Info => {
            let hw = detect::detect()?;
            print!("{}", show::info(tables, &hw));
        }
        Command::Systems => print!("{}", show::systems(tables)),
        Command::GenerateConfFiles { out, round, prune } => {
            let rounds: Vec<_> = match round.as_str() {
                "all" => tables.rounds.iter().collect(),
                id => vec![tables.round(id).ok_or_else(|| format!("unknown round {id}; this build has {}", round_ids(tables)))?],
            };
            let mut files = generate::FileSet::new();
            for r in rounds {
                let conf = mlperf_loadgen::mlperf_conf(&r.loadgen.version)
                    .ok_or_else(|| format!("this build carries no mlperf.conf of LoadGen {} (round {})", r.loadgen.version, r.id))?;
                files.extend(generate::round_files(tables, r, conf));
            }
            let report = generate::write_tree(&out, &files, prune)?;
            println!(
                "{}: {} files written, {} unchanged{}",
                out.display(),
                report.written.len(),
                report.unchanged,
                if report.removed.is_empty() { String::new() } else { format!(", {} stale removed", report.removed.len()) }
            );
            if !report.stale.is_empty() {
                eprintln!("warning: {} files no config produces any more (first: {}); rerun with --prune to delete them", report.stale.len(), report.stale[0].display());
            }
        }
        Command::Config { command: ConfigCommand::Fields } => print!("{}", show::fields()),
        Command::Config { command: ConfigCommand::Show { selection, explain } } => {
            let choice = select::choose_system(tables, selection.system_name.as_deref())?;
            let configs = selected_configs(tables, &choice, &selection)?;
            for c in configs {
                println!("{}", show::config(c, explain));
            }
        }
    }
    Ok(())
}

fn round_ids(tables: &Tables) -> String {
    tables.rounds.iter().map(|r| r.id.as_ref()).collect::<Vec<_>>().join(", ")
}

fn selected_configs(
    tables: &'static Tables,
    choice: &select::SystemChoice,
    selection: &Selection,
) -> Result<Vec<&'static mlperf_config::CompiledConfig>, String> {
    let workload = select::WorkloadQuery::from_flags(
        selection.config_ver.as_deref(),
        selection.accuracy_target.as_deref(),
        selection.power_setting.as_deref(),
        selection.harness_type.as_deref(),
    )?;
    select::select_configs(
        tables,
        choice.system,
        &select::split_list(selection.benchmarks.as_deref()),
        &select::split_list(selection.scenarios.as_deref()),
        &workload,
    )
}
