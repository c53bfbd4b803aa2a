//! `mlperf generate_conf_files`: every submission file of every compiled config, for each round's
//! layout, written only when its bytes change (so a second run changes nothing).

use mlperf_config::render::{self, ConfPurpose};
use mlperf_config::round::Layout;
use mlperf_config::{Round, Tables};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Relative path -> contents.
pub type FileSet = BTreeMap<PathBuf, String>;

/// The files of one round. `mlperf_conf` is the text compiled into that round's LoadGen.
pub fn round_files(tables: &Tables, round: &Round, mlperf_conf: &str) -> FileSet {
    let mut files = FileSet::new();
    let base = PathBuf::from(round.id.as_ref());
    for config in tables.configs.iter().filter(|c| c.rounds.iter().any(|r| *r == round.id)) {
        let system = tables.system(&config.system).expect("configs name compiled systems");
        let bench = round.benchmark(&config.benchmark).expect("the config is valid in this round");
        let name = render::system_name(&system.id, config.workload);
        let bench_dir = bench.checker_model(config.workload.accuracy).expect("valid in this round");
        let scenario = config.scenario.name();
        files.insert(base.join("systems").join(format!("{name}.json")), render::system_json(system, config.workload));
        let user_conf = render::user_conf(config, round, bench, ConfPurpose::Submission);
        let readme = render::readme(config, system, round, bench);
        match round.layout {
            Layout::V6 => {
                let dir = base.join("results").join(&name).join(bench_dir).join(scenario);
                files.insert(dir.join("user.conf"), user_conf);
                files.insert(dir.join("measurements.json"), render::measurements_json(config));
                files.insert(dir.join("README.md"), readme);
                files.insert(dir.join("mlperf.conf"), mlperf_conf.to_string());
            }
            Layout::V5 => {
                let dir = base.join("measurements").join(&name).join(bench_dir).join(scenario);
                files.insert(dir.join(format!("{name}_{scenario}.json")), render::measurements_json(config));
                files.insert(dir.join("user.conf"), user_conf);
                files.insert(dir.join("mlperf.conf"), mlperf_conf.to_string());
                files.insert(dir.join("README.md"), readme);
                files.insert(dir.join("calibration_process.adoc"), render::calibration_adoc(config));
            }
        }
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
pub fn write_tree(out: &Path, files: &FileSet, prune: bool) -> Result<WriteReport, String> {
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
                    std::fs::remove_file(&existing).map_err(|e| format!("cannot remove stale {}: {e}", existing.display()))?;
                    report.removed.push(rel);
                } else {
                    report.stale.push(rel);
                }
            }
        }
    }
    Ok(report)
}
