//! `mlperf generate_conf_files`: every submission file of every compiled config, for each round's
//! layout, written only when its bytes change (so a second run changes nothing).

use crate::layout::{ResultKey, SubmissionLayout};
use mlperf_config::render::{self, ConfPurpose};
use mlperf_config::round::Layout;
use mlperf_config::{CompiledConfig, Round, Tables};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Relative path -> contents.
pub type FileSet = BTreeMap<PathBuf, String>;

/// Why the generated files could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateError {
    #[error("this build carries no mlperf.conf of LoadGen {version} (round {round})")]
    NoMlperfConf { version: String, round: String },
    #[error(transparent)]
    Write(#[from] crate::fsutil::FsError),
    #[error("cannot remove stale {}: {source}", .path.display())]
    Remove { path: PathBuf, source: std::io::Error },
}

impl From<GenerateError> for crate::Error {
    fn from(e: GenerateError) -> crate::Error {
        match e {
            GenerateError::NoMlperfConf { .. } => crate::Error::Config(e.to_string()),
            _ => crate::Error::Other(e.to_string()),
        }
    }
}

/// `mlperf generate_conf_files`: the files of `rounds` (each with the mlperf.conf compiled into
/// its LoadGen) written under `out`.
pub fn generate(tables: &Tables, rounds: &[&Round], out: &Path, prune: bool) -> Result<WriteReport, GenerateError> {
    let mut files = FileSet::new();
    for round in rounds {
        let conf = mlperf_loadgen::mlperf_conf(&round.loadgen.version)
            .ok_or_else(|| GenerateError::NoMlperfConf { version: round.loadgen.version.to_string(), round: round.id.to_string() })?;
        files.extend(round_files(tables, round, conf));
    }
    write_tree(out, &files, prune)
}

/// The files of one round. `mlperf_conf` is the text compiled into that round's LoadGen.
pub fn round_files(tables: &Tables, round: &Round, mlperf_conf: &str) -> FileSet {
    let paths = SubmissionLayout::at(PathBuf::from(round.id.as_ref()), round.layout);
    let mut files = FileSet::new();
    for config in tables.configs.iter().filter(|c| c.rounds.contains(&round.id)) {
        files.extend(config_files(tables, round, config, mlperf_conf, &paths));
    }
    files
}

/// The system description and measurement files of one config, at their places in `paths`.
pub fn config_files(tables: &Tables, round: &Round, config: &CompiledConfig, mlperf_conf: &str, paths: &SubmissionLayout) -> FileSet {
    let system = tables.system(&config.system).expect("configs name compiled systems");
    let bench = round.benchmark(&config.benchmark).expect("the config is valid in this round");
    let name = render::system_name(&system.id, config.workload);
    let key = ResultKey::new(&name, bench.checker_model(config.workload.accuracy).expect("valid in this round"), config.scenario);
    let mut files = FileSet::new();
    files.insert(paths.system_json(&name), render::system_json(system, config.workload));
    files.insert(paths.user_conf(&key), render::user_conf(config, round, bench, ConfPurpose::Submission));
    files.insert(paths.measurements_json(&key), render::measurements_json(config));
    files.insert(paths.readme(&key), render::readme(config, system, round, bench));
    files.insert(paths.measurements_dir(&key).join("mlperf.conf"), mlperf_conf.to_string());
    if round.layout == Layout::V5 {
        files.insert(paths.measurements_dir(&key).join("calibration_process.adoc"), render::calibration_adoc(config));
    }
    files
}

/// What a write did.
#[derive(Debug, Default, PartialEq)]
pub struct WriteReport {
    pub written: Vec<PathBuf>,
    pub unchanged: usize,
    /// Files under the written round directories that the tables no longer produce.
    pub stale: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
}

/// Writes `files` under `out` atomically (temp file + rename), skipping identical files; stale
/// files under the same round directories are reported, and deleted only with `prune`.
pub fn write_tree(out: &Path, files: &FileSet, prune: bool) -> Result<WriteReport, GenerateError> {
    let mut report = WriteReport::default();
    for (rel, contents) in files {
        let path = out.join(rel);
        if std::fs::read(&path).is_ok_and(|old| old == contents.as_bytes()) {
            report.unchanged += 1;
            continue;
        }
        crate::fsutil::write_atomic(&path, contents.as_bytes())?;
        report.written.push(rel.clone());
    }
    let roots: std::collections::BTreeSet<_> = files.keys().filter_map(|p| p.components().next()).map(|c| out.join(c.as_os_str())).collect();
    for root in roots {
        for existing in crate::fsutil::walk_files(&root) {
            let rel = existing.strip_prefix(out).expect("under out").to_path_buf();
            if !files.contains_key(&rel) {
                if prune {
                    std::fs::remove_file(&existing).map_err(|source| GenerateError::Remove { path: existing.clone(), source })?;
                    report.removed.push(rel);
                } else {
                    report.stale.push(rel);
                }
            }
        }
    }
    Ok(report)
}
