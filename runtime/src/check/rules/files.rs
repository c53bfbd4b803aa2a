//! The files of a result that no log rule reads: required non-empty files, measurements.json
//! (measurements_checks.py) and hygiene (trace logs, power directories).

use crate::check::common::is_truthy;
use crate::check::{Findings, Rule, Tree};
use crate::layout::{ACCURACY_LOG, ACCURACY_TXT, DETAIL_LOG, ResultKey, SUMMARY_LOG, TRACE_LOG};
use std::path::Path;

/// measurements.json fields the checker requires non-empty (`SYSTEM_IMP_REQUIRED_FILES`).
const MEASUREMENTS_FIELDS: [&str; 5] = ["input_data_types", "retraining", "starting_weights_filename", "weight_data_types", "weight_transformations"];

/// The files of `accuracy/` (`REQUIRED_ACC_FILES`).
pub(crate) const ACCURACY_FILES: [&str; 4] = [SUMMARY_LOG, DETAIL_LOG, ACCURACY_TXT, ACCURACY_LOG];

pub(crate) fn require_non_empty(path: &Path, origin: &str, f: &mut Findings) {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => {}
        Ok(_) => f.error(Rule::RequiredFile, path, "empty file (the checker rejects empty required files)".into(), format!("restore it: it is {origin}")),
        Err(_) => f.error(Rule::RequiredFile, path, "missing required file".into(), format!("restore it: it is {origin}")),
    }
}

/// The measurements file: present, JSON, with the checker's non-empty fields.
pub(crate) fn check_measurements(tree: &Tree, key: &ResultKey, f: &mut Findings) {
    let path = tree.layout.measurements_json(key);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) => {
            f.error(
                Rule::RequiredFile,
                &path,
                "missing measurements file".into(),
                "stage it from `mlperf generate_conf_files` output (it describes the configuration that was run)",
            );
            return;
        }
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            f.error(Rule::MeasurementsFields, &path, format!("not valid JSON: {e}"), "regenerate it with `mlperf generate_conf_files`");
            return;
        }
    };
    for field in MEASUREMENTS_FIELDS {
        if !is_truthy(json.get(field)) {
            f.key_error(
                Rule::MeasurementsFields,
                &path,
                field,
                format!("`{field}` is missing or empty; the checker requires a value"),
                format!("set `{field}` (e.g. in the benchmark's config) and regenerate with `mlperf generate_conf_files`"),
            );
        }
    }
}

/// Trace logs (hundreds of MB, never read by the checker), and the power rules where the result
/// measured power (a `performance/power/` directory makes it a power result for the checker).
pub(crate) fn check_hygiene(tree: &Tree, key: &ResultKey, f: &mut Findings) {
    let scenario_dir = tree.layout.scenario_dir(key);
    for file in crate::fsutil::walk_files(&scenario_dir) {
        if file.file_name().and_then(|n| n.to_str()) == Some(TRACE_LOG) {
            f.warning(
                Rule::Hygiene,
                &file,
                "LoadGen trace log in the submission (the checker ignores it; it only makes the tarball large)".into(),
                "delete it, or stage with trace logs excluded",
            );
        }
    }
    let performance = scenario_dir.join("performance");
    if performance.join(crate::power::session::POWER_DIR).is_dir() {
        for finding in crate::power::rules::check(&performance, true) {
            f.error(Rule::Power, &finding.file, format!("{:?}: {}", finding.rule, finding.value), finding.fix);
        }
        // The official checkers pass a stand-in's session (it names a supported meter): say so here.
        for reason in crate::power::standin::caveats(&performance) {
            f.warning(
                Rule::Power,
                &performance.join(crate::power::session::POWER_DIR).join(crate::power::session::SERVER_JSON),
                format!("not submittable: {reason}"),
                "measure with PTDaemon and a supported meter, then rerun `mlperf run_harness_power` and restage",
            );
        }
    }
}
