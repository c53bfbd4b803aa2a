//! `mlperf infer_results`: results of edge systems inferred from measured ones, as the checker
//! accepts them (performance_check.py `inferred_check` / `get_inferred_result`): only when the
//! system description's `system_type` contains `edge`, and only SingleStream -> MultiStream,
//! SingleStream -> Offline and MultiStream -> Offline. An inferred scenario directory is a copy of
//! the measured one (as the official preprocess_submission.py makes it); the checker sees a log
//! whose scenario differs from the directory and computes the inferred metric from it. A power
//! result is inferred the same way: its session (performance/power, ranging, run_1/spl.txt) is
//! copied too, and the checker's power check computes the inferred scenario's power metric from it
//! (power_check.py: MultiStream from SingleStream counts 8 samples a query). Each inferred
//! result's README.md says so. Measured results are never replaced.
//!
//! Run it after `stage_compliance` (the copies carry the audits) and before `truncate_results`.

use super::{Content, PlaceReport, Placement, SubmissionError, benchmark_for_dir, copy_tree, place_all};
use crate::layout::{ResultKey, SubmissionLayout, is_edge};
use mlperf_config::{Round, Scenario};
use std::collections::BTreeMap;
use std::path::Path;

/// `(from, to)` pairs to infer, in the order of preprocess_submission.py: SingleStream alone gives
/// Offline and MultiStream; SingleStream with one of them gives the missing MultiStream; a
/// MultiStream result gives a missing Offline. Only scenarios in `allowed` are inferred.
pub fn inferences(present: &[Scenario], allowed: &[Scenario]) -> Vec<(Scenario, Scenario)> {
    use Scenario::{MultiStream, Offline, SingleStream};
    let has = |s: Scenario| present.contains(&s);
    let may = |s: Scenario| allowed.contains(&s) && !has(s);
    let mut out = Vec::new();
    if has(SingleStream) {
        if !has(MultiStream) && !has(Offline) {
            out.extend([Offline, MultiStream].into_iter().filter(|s| may(*s)).map(|s| (SingleStream, s)));
        } else if may(MultiStream) {
            out.push((SingleStream, MultiStream));
        }
    }
    if has(MultiStream) && may(Offline) {
        out.push((MultiStream, Offline));
    }
    out
}

/// How the checker computes the inferred metric (get_inferred_result).
fn formula(from: Scenario, to: Scenario) -> &'static str {
    match (from, to) {
        (Scenario::SingleStream, Scenario::Offline) => "samples/s = the SingleStream log's result_qps_without_loadgen_overhead",
        (Scenario::MultiStream, Scenario::Offline) => "samples/s = samples per query x 1000 / mean query latency in ms",
        _ => "latency = 8 x the SingleStream log's early_stopping_latency_ms",
    }
}

/// How the checker computes the inferred power metric (power_check.py get_power_metric_check).
fn power_formula(from: Scenario, to: Scenario) -> &'static str {
    match (from, to) {
        (Scenario::SingleStream, Scenario::MultiStream) => "energy per query = 8 x the SingleStream session's energy per query",
        _ => "average watts = the measured session's, and samples/s per watt from the inferred samples/s",
    }
}

/// The inferred result's README: the measured one's, then what was inferred and how; `power` when
/// the measured result carries a power session, copied with everything else.
fn inferred_readme(measured: &str, from: Scenario, to: Scenario, power: bool) -> String {
    let mut text = format!(
        "{measured}\n## Inferred result\n\nThis {to} result is INFERRED, not measured: every file here is a copy of ../{from}/, and the\nsubmission checker computes the {to} metric from that {from} log ({}).\n",
        formula(from, to)
    );
    if power {
        text += &format!(
            "Its power result (performance/power, ranging, run_1/spl.txt) is the {from} session's, as the\nofficial preprocess_submission.py copies it; the checker runs the power checks on it and computes\nthe {to} power metric from it ({}).\n",
            power_formula(from, to)
        );
    }
    text
}

#[derive(Debug, Default)]
pub struct InferReport {
    /// One line per inferred result.
    pub inferred: Vec<String>,
    /// Systems or results left alone, and why.
    pub notes: Vec<String>,
    pub files: PlaceReport,
}

/// Infers what the round allows for every staged edge system under `root`.
pub fn infer_results(root: &Path, round: &Round, submitter: Option<&str>) -> Result<InferReport, SubmissionError> {
    let _lock = crate::fsutil::DirLock::acquire(root, "infer_results")?;
    let mut report = InferReport::default();
    let mut placements = Vec::new();
    for tree in SubmissionLayout::submitters(root, round.layout, submitter) {
        let mut by_benchmark: BTreeMap<(String, String), Vec<Scenario>> = BTreeMap::new();
        for key in tree.results() {
            by_benchmark.entry((key.system_name.clone(), key.bench_dir.clone())).or_default().push(key.scenario);
        }
        for ((system, bench_dir), present) in by_benchmark {
            let desc_path = tree.system_json(&system);
            let text = std::fs::read_to_string(&desc_path).map_err(SubmissionError::read(&desc_path, "; stage the results with `mlperf stage_results`"))?;
            let desc: serde_json::Value = serde_json::from_str(&text).map_err(|e| SubmissionError::NotJson { path: desc_path.clone(), source: e })?;
            let system_type = desc["system_type"].as_str().unwrap_or_default();
            if !is_edge(system_type) {
                report.notes.push(format!("{system}/{bench_dir}: system_type \"{system_type}\" is not edge; the checker accepts inferred results only for edge systems"));
                continue;
            }
            let Some(bench) = benchmark_for_dir(round, &bench_dir) else {
                report.notes.push(format!("{system}/{bench_dir}: not a benchmark of round {}", round.id));
                continue;
            };
            for (from, to) in inferences(&present, &bench.allowed_scenarios(system_type)) {
                let (src, dst) = (ResultKey::new(&system, &bench_dir, from), ResultKey::new(&system, &bench_dir, to));
                placements.extend(inferred_files(&tree, &src, &dst)?);
                report.inferred.push(format!("{dst}: INFERRED from {src} ({})", formula(from, to)));
            }
        }
    }
    report.files = place_all(&placements, false, "mlperf infer_results")?;
    Ok(report)
}

/// The copies that make `dst` an inferred result of `src` (scenario, measurements and compliance
/// directories; in the v5 layout the measurements json is renamed for the new scenario).
fn inferred_files(tree: &SubmissionLayout, src: &ResultKey, dst: &ResultKey) -> Result<Vec<Placement>, SubmissionError> {
    let mut files = copy_tree(&tree.scenario_dir(src), &tree.scenario_dir(dst));
    for (from_dir, to_dir) in [(tree.measurements_dir(src), tree.measurements_dir(dst)), (tree.compliance_dir(src), tree.compliance_dir(dst))] {
        if from_dir != tree.scenario_dir(src) {
            files.extend(copy_tree(&from_dir, &to_dir));
        }
    }
    let measurements_json = tree.measurements_dir(dst).join(tree.measurements_json(src).file_name().expect("a file"));
    for file in &mut files {
        if file.dest == measurements_json {
            file.dest = tree.measurements_json(dst);
        }
    }
    let readme = tree.readme(src);
    let measured = std::fs::read_to_string(&readme).map_err(SubmissionError::read(&readme, ""))?;
    files.retain(|f| f.dest != tree.readme(dst));
    let power = tree.performance_dir(src).with_file_name(crate::power::session::POWER_DIR).is_dir();
    files.push(Placement { dest: tree.readme(dst), content: Content::Text(inferred_readme(&measured, src.scenario, dst.scenario, power)) });
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Scenario::{MultiStream as MS, Offline as Off, Server, SingleStream as SS};

    #[test]
    fn inferences_follow_the_official_preprocessing() {
        let edge = [SS, MS, Off];
        assert_eq!(inferences(&[SS], &edge), vec![(SS, Off), (SS, MS)]);
        assert_eq!(inferences(&[SS, Off], &edge), vec![(SS, MS)]);
        assert_eq!(inferences(&[SS, MS], &edge), vec![(MS, Off)]);
        assert_eq!(inferences(&[MS], &edge), vec![(MS, Off)]);
        assert_eq!(inferences(&[SS, MS, Off], &edge), vec![]);
        // Only what the round allows for the system type, and never Server.
        assert_eq!(inferences(&[SS], &[SS, Off, Server]), vec![(SS, Off)]);
        assert_eq!(inferences(&[Off], &edge), vec![]);
    }
}
