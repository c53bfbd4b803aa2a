//! The pre-flight against tests/fixtures/submission/good (a tree staged from real LoadGen 6.0.17
//! runs that the official checker accepts; see its README) and one broken copy per rule.

use super::*;
use mlperf_config::Scenario;
use std::sync::atomic::{AtomicUsize, Ordering};

const GOOD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/submission/good");
const ORG: &str = "closed/Example";
const SCENARIO: &str = "closed/Example/results/CPU-dev_RS/resnet";

fn round() -> Round {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rounds/v6.1.toml")).unwrap();
    toml::from_str(&text).unwrap()
}

/// A private copy of the good tree, removed on drop.
struct Copy(PathBuf);

impl Copy {
    fn new() -> Copy {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!("mlperf-check-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        for file in crate::fsutil::walk_files(Path::new(GOOD)) {
            let to = dir.join(file.strip_prefix(GOOD).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&file, &to).unwrap();
        }
        Copy(dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.path(rel), text).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    fn replace(&self, rel: &str, from: &str, to: &str) {
        let text = self.read(rel);
        assert!(text.contains(from), "{rel} does not contain {from:?}");
        self.write(rel, &text.replacen(from, to, 1));
    }

    fn remove(&self, rel: &str) {
        let path = self.path(rel);
        if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) }.unwrap();
    }

    /// Sets the value of `key` in a detail log (every `:::MLLOG` line of that key).
    fn set_log_value(&self, rel: &str, key: &str, value: serde_json::Value) {
        let text = self.read(rel);
        let mut found = false;
        let lines: Vec<String> = text
            .lines()
            .map(|line| {
                let Some(json) = line.strip_prefix(":::MLLOG ") else { return line.to_string() };
                let mut record: serde_json::Value = serde_json::from_str(json).unwrap();
                if record["key"] != key {
                    return line.to_string();
                }
                found = true;
                record["value"] = value.clone();
                format!(":::MLLOG {record}")
            })
            .collect();
        assert!(found, "{rel} has no {key}");
        self.write(rel, &(lines.join("\n") + "\n"));
    }

    /// Appends a LoadGen error record to a detail log.
    fn add_log_error(&self, rel: &str, message: &str) {
        let record = serde_json::json!({"key": "error_runtime", "value": message, "time_ms": 1.0, "namespace": "mlperf::logging", "event_type": "POINT_IN_TIME", "metadata": {"is_error": true, "is_warning": false, "file": "loadgen.cc", "line_no": 1, "pid": 1, "tid": 1}});
        self.write(rel, &format!("{}:::MLLOG {record}\n", self.read(rel)));
    }

    fn edit_system(&self, edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) {
        let rel = format!("{ORG}/systems/CPU-dev_RS.json");
        let mut json: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&self.read(&rel)).unwrap();
        edit(&mut json);
        self.write(&rel, &serde_json::to_string_pretty(&json).unwrap());
    }

    fn check(&self) -> Report {
        check_submission(&CheckRequest { round: &round(), input: &self.0, submitter: None })
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `{SCENARIO}/<rest>` of one scenario.
fn at(scenario: &str, rest: &str) -> String {
    format!("{SCENARIO}/{scenario}/{rest}")
}

/// Asserts an error of `rule` on `path` (relative to the input) whose message contains `text`.
#[track_caller]
fn assert_error(report: &Report, rule: Rule, path: &str, text: &str) {
    let hit = report.errors().any(|f| f.rule == rule && f.path == Path::new(path) && f.message.contains(text));
    assert!(hit, "no {rule} error on {path} containing {text:?}; got:\n{}", report.render());
}

#[test]
fn the_good_tree_passes_every_rule() {
    let report = Copy::new().check();
    assert_eq!(report.error_count(), 0, "{}", report.render());
    assert_eq!(report.warning_count(), 0, "{}", report.render());
    let scenarios: Vec<Scenario> = report.results.iter().map(|k| k.scenario).collect();
    assert_eq!(scenarios, [Scenario::MultiStream, Scenario::Offline, Scenario::SingleStream]);
}

#[test]
fn layout_needs_the_submitter_tree_and_src() {
    let tree = Copy::new();
    tree.remove(&format!("{ORG}/src"));
    assert_error(&tree.check(), Rule::Layout, &format!("{ORG}/src"), "missing or empty src");
    let report = check_submission(&CheckRequest { round: &round(), input: &tree.0, submitter: Some("Nobody") });
    assert_error(&report, Rule::Layout, "", "submitter Nobody");
}

#[test]
fn required_files_must_exist_and_not_be_empty() {
    let tree = Copy::new();
    tree.remove(&at("Offline", "performance/run_1/mlperf_log_summary.txt"));
    tree.write(&at("SingleStream", "user.conf"), "");
    tree.remove(&at("MultiStream", "accuracy/accuracy.txt"));
    let report = tree.check();
    assert_error(&report, Rule::RequiredFile, &at("Offline", "performance/run_1/mlperf_log_summary.txt"), "missing mlperf_log_summary.txt");
    assert_error(&report, Rule::RequiredFile, &at("SingleStream", "user.conf"), "empty file");
    assert_error(&report, Rule::RequiredFile, &at("MultiStream", "accuracy/accuracy.txt"), "missing accuracy.txt");
    assert_eq!(report.passing_results().len(), 0);
}

#[test]
fn scenarios_follow_the_system_type() {
    let tree = Copy::new();
    tree.remove(&format!("{SCENARIO}/MultiStream"));
    std::fs::create_dir_all(tree.path(&format!("{SCENARIO}/notes"))).unwrap();
    let report = tree.check();
    assert_error(&report, Rule::Scenarios, &format!("{SCENARIO}/MultiStream"), "requires the MultiStream scenario");
    assert_error(&report, Rule::Scenarios, &format!("{SCENARIO}/notes"), "not a scenario directory");

    let tree = Copy::new();
    tree.edit_system(|s| {
        s.insert("system_type".into(), "datacenter".into());
    });
    assert_error(&tree.check(), Rule::Scenarios, SCENARIO, "the official checker crashes");

    let tree = Copy::new();
    std::fs::rename(tree.path(SCENARIO), tree.path(&format!("{ORG}/results/CPU-dev_RS/resnet50"))).unwrap();
    assert_error(&tree.check(), Rule::Scenarios, &format!("{ORG}/results/CPU-dev_RS/resnet50"), "not a benchmark of round v6.1");
}

#[test]
fn system_description_fields_and_values() {
    let tree = Copy::new();
    tree.edit_system(|s| {
        s.remove("cooling");
        s.insert("framework".into(), "".into());
        s.insert("host_processors_per_node".into(), 0.into());
        s.insert("status".into(), "beta".into());
        s.insert("submitter".into(), "Someone".into());
        s.insert("is_network".into(), true.into());
    });
    let report = tree.check();
    let system = format!("{ORG}/systems/CPU-dev_RS.json");
    assert_error(&report, Rule::SystemFields, &system, "`cooling` is missing");
    assert_error(&report, Rule::SystemFields, &system, "`framework` must not be empty");
    assert_error(&report, Rule::SystemFields, &system, "`host_processors_per_node` must not be empty");
    assert_error(&report, Rule::SystemValues, &system, "invalid status \"beta\"");
    assert_error(&report, Rule::SystemValues, &system, "the directory says Example");
    assert_error(&report, Rule::SystemValues, &system, "not a string");

    let tree = Copy::new();
    tree.edit_system(|s| {
        s.insert("system_type".into(), "Edge".into());
    });
    assert_error(&tree.check(), Rule::SystemValues, &format!("{ORG}/systems/CPU-dev_RS.json"), "invalid system_type \"Edge\"");
    tree.remove(&format!("{ORG}/systems/CPU-dev_RS.json"));
    assert_error(&tree.check(), Rule::RequiredFile, &format!("{ORG}/systems/CPU-dev_RS.json"), "missing system description");
}

#[test]
fn measurements_json_needs_the_checker_fields() {
    let tree = Copy::new();
    tree.replace(&at("Offline", "measurements.json"), "\"retraining\": \"No\"", "\"retraining\": \"\"");
    assert_error(&tree.check(), Rule::MeasurementsFields, &at("Offline", "measurements.json"), "`retraining` is missing or empty");
}

#[test]
fn detail_logs_must_parse_as_the_checker_parses_them() {
    let tree = Copy::new();
    let log = at("SingleStream", "performance/run_1/mlperf_log_detail.txt");
    tree.write(&log, &format!("starting run\n{}", tree.read(&log)));
    assert_error(&tree.check(), Rule::LogFormat, &log, "first line is not a `:::MLLOG` record");
    tree.write(&log, ":::MLLOG {\"key\": \"sut_name\", \"value\": \n");
    assert_error(&tree.check(), Rule::LogFormat, &log, "unreadable");
}

#[test]
fn seeds_must_be_the_rounds() {
    let tree = Copy::new();
    let log = at("Offline", "performance/run_1/mlperf_log_detail.txt");
    tree.set_log_value(&log, "effective_schedule_rng_seed", 0.into());
    assert_error(&tree.check(), Rule::Seeds, &log, "is 0, round v6.1 requires 16159082839903944936");
}

#[test]
fn runs_must_last_the_minimum_duration() {
    let tree = Copy::new();
    let log = at("MultiStream", "TEST04/performance/run_1/mlperf_log_detail.txt");
    tree.set_log_value(&log, "effective_min_duration_ms", 60000.into());
    assert_error(&tree.check(), Rule::MinDuration, &log, "is 60000 ms, round v6.1 requires at least 600000 ms");
}

#[test]
fn offline_needs_the_minimum_queries_and_samples() {
    let tree = Copy::new();
    let log = at("Offline", "performance/run_1/mlperf_log_detail.txt");
    tree.set_log_value(&log, "effective_samples_per_query", 1000.into());
    tree.set_log_value(&log, "effective_min_query_count", 0.into());
    let report = tree.check();
    assert_error(&report, Rule::MinQueries, &log, "requires at least 24576 samples");
    assert_error(&report, Rule::MinQueries, &log, "is 0, resnet Offline requires at least 1");
}

#[test]
fn performance_sample_count_is_the_rounds_minimum() {
    let tree = Copy::new();
    let log = at("SingleStream", "performance/run_1/mlperf_log_detail.txt");
    tree.set_log_value(&log, "effective_performance_sample_count", 512.into());
    assert_error(&tree.check(), Rule::PerformanceSampleCount, &log, "is 512, resnet requires at least 1024");
}

#[test]
fn early_stopping_must_be_met() {
    let tree = Copy::new();
    let log = at("SingleStream", "TEST01/performance/run_1/mlperf_log_detail.txt");
    tree.set_log_value(&log, "early_stopping_met", false.into());
    assert_error(&tree.check(), Rule::EarlyStopping, &log, "early stopping was not satisfied");
}

#[test]
fn inferred_results_pass_on_edge_systems_only() {
    // MultiStream and Offline inferred from SingleStream by `infer_results`, as the chain script does.
    let tree = Copy::new();
    tree.remove(&at("MultiStream", ""));
    tree.remove(&at("Offline", ""));
    let inferred = crate::submission::infer::infer_results(&tree.0, &round(), None).unwrap();
    assert_eq!(inferred.inferred.len(), 2, "{:?}", inferred.inferred);
    let report = tree.check();
    assert_eq!(report.error_count(), 0, "{}", report.render());
    assert_eq!(report.results.len(), 3);

    tree.edit_system(|s| {
        s.insert("system_type".into(), "datacenter".into());
    });
    assert_error(&tree.check(), Rule::Layout, &at("Offline", "performance/run_1/mlperf_log_detail.txt"), "the log is a SingleStream run, but it sits in the Offline directory");
}

#[test]
fn server_target_latency_within_the_constraint() {
    // A datacenter,edge resnet needs Server; a MultiStream log relabelled as Server stands in.
    let tree = Copy::new();
    tree.edit_system(|s| {
        s.insert("system_type".into(), "datacenter,edge".into());
    });
    let server = format!("{SCENARIO}/Server");
    std::fs::rename(tree.path(&format!("{SCENARIO}/MultiStream")), tree.path(&server)).unwrap();
    std::fs::create_dir_all(tree.path(&format!("{SCENARIO}/MultiStream"))).unwrap();
    let log = format!("{server}/performance/run_1/mlperf_log_detail.txt");
    tree.set_log_value(&log, "effective_scenario", "Server".into());
    tree.set_log_value(&log, "effective_target_latency_ns", 20_000_000.into());
    assert_error(&tree.check(), Rule::Latency, &log, "is 20000000 ns, resnet Server allows at most 15000000 ns");
}

#[test]
fn llm_runs_need_token_latencies() {
    let tree = Copy::new();
    let llm = format!("{ORG}/results/CPU-dev_RS/llama3.1-8b-edge");
    std::fs::rename(tree.path(SCENARIO), tree.path(&llm)).unwrap();
    assert_error(&tree.check(), Rule::TokenLatency, &format!("{llm}/SingleStream/performance/run_1/mlperf_log_detail.txt"), "must record first-token latencies");
}

#[test]
fn invalid_runs_and_performance_log_errors_fail_although_the_checker_is_lenient() {
    let tree = Copy::new();
    let log = at("Offline", "performance/run_1/mlperf_log_detail.txt");
    tree.set_log_value(&log, "result_validity", "INVALID".into());
    tree.set_log_value(&log, "result_min_duration_met", false.into());
    tree.add_log_error(&log, "Ending early: Ran out of generated queries to issue before the minimum query count and test duration were reached.");
    let report = tree.check();
    assert_error(&report, Rule::ResultValid, &log, "not met: min duration");
    assert_error(&report, Rule::PerformanceLogErrors, &log, "Ran out of generated queries");
    assert!(Rule::ResultValid.stricter_than_official() && Rule::PerformanceLogErrors.stricter_than_official());
}

#[test]
fn accuracy_runs_must_be_error_free_and_cover_the_dataset() {
    let tree = Copy::new();
    let log = at("Offline", "accuracy/mlperf_log_detail.txt");
    tree.add_log_error(&log, "something failed");
    tree.set_log_value(&log, "effective_accuracy_sample_count", 500.into());
    let report = tree.check();
    assert_error(&report, Rule::LoadgenErrors, &log, "something failed");
    assert_error(&report, Rule::AccuracySampleCount, &log, "covered 500 samples, resnet requires the whole dataset of 50000");
}

#[test]
fn accuracy_must_match_the_pattern_and_meet_the_target() {
    let tree = Copy::new();
    let txt = at("SingleStream", "accuracy/accuracy.txt");
    let text = tree.read(&txt);
    let (first, rest) = text.split_once(',').unwrap();
    tree.write(&txt, &format!("accuracy=70.000%,{rest}"));
    assert!(first.starts_with("accuracy="), "{first}");
    assert_error(&tree.check(), Rule::AccuracyTarget, &txt, "acc is 70, below the target 75.6953");
    tree.write(&txt, &format!("top1 70.000%,{rest}"));
    assert_error(&tree.check(), Rule::AccuracyTarget, &txt, "no line matches the checker's acc pattern");
}

#[test]
fn accuracy_needs_the_hash_line_and_a_truncated_log() {
    let tree = Copy::new();
    let txt = at("MultiStream", "accuracy/accuracy.txt");
    let text = tree.read(&txt);
    tree.write(&txt, &text.lines().filter(|l| !l.starts_with("hash=")).collect::<Vec<_>>().join("\n"));
    let log = at("MultiStream", "accuracy/mlperf_log_accuracy.json");
    tree.write(&log, &"x".repeat(20_000));
    let report = tree.check();
    assert_error(&report, Rule::AccuracyHash, &txt, "no `hash=<sha256>` line");
    assert_error(&report, Rule::AccuracyLogSize, &log, "20000 bytes");
}

#[test]
fn compliance_directories_and_files() {
    let tree = Copy::new();
    tree.remove(&at("Offline", "TEST04"));
    tree.remove(&at("SingleStream", "TEST01/verify_performance.txt"));
    tree.write(&at("MultiStream", "TEST01/performance/run_1/notes.txt"), "x");
    let report = tree.check();
    assert_error(&report, Rule::ComplianceFiles, &at("Offline", "TEST04"), "missing TEST04: round v6.1 requires it for resnet");
    assert_error(&report, Rule::ComplianceFiles, &at("SingleStream", "TEST01/verify_performance.txt"), "missing verify_performance.txt of TEST01");
    assert_error(&report, Rule::ComplianceFiles, &at("MultiStream", "TEST01/performance/run_1/notes.txt"), "unexpected file");
}

#[test]
fn compliance_verify_files_must_pass() {
    let tree = Copy::new();
    tree.replace(&at("Offline", "TEST04/verify_performance.txt"), "TEST PASS", "TEST FAIL");
    tree.replace(&at("SingleStream", "TEST01/verify_accuracy.txt"), "TEST PASS", "TEST FAIL");
    let report = tree.check();
    assert_error(&report, Rule::ComplianceVerify, &at("Offline", "TEST04/verify_performance.txt"), "TEST04 did not pass");
    assert_error(&report, Rule::ComplianceVerify, &at("SingleStream", "TEST01/accuracy"), "missing baseline_accuracy.txt");
}

#[test]
fn test01_fallback_compares_baseline_and_compliance_accuracy() {
    let tree = Copy::new();
    tree.replace(&at("SingleStream", "TEST01/verify_accuracy.txt"), "TEST PASS", "TEST FAIL");
    let acc = at("SingleStream", "TEST01/accuracy");
    tree.write(&format!("{acc}/baseline_accuracy.txt"), "accuracy=76.000%, good=100, total=131\n");
    tree.write(&format!("{acc}/compliance_accuracy.txt"), "accuracy=76.500%, good=100, total=131\n");
    assert_eq!(tree.check().error_count(), 0, "{}", tree.check().render());
    tree.write(&format!("{acc}/compliance_accuracy.txt"), "accuracy=80.000%, good=100, total=131\n");
    assert_error(&tree.check(), Rule::ComplianceVerify, &acc, "differ by 5.0000 %, more than the allowed 1 %");
}

#[test]
fn a_power_result_is_checked_by_the_power_rules() {
    let tree = Copy::new();
    let performance = tree.path(&at("Offline", "performance"));
    crate::power::fixture::write_session(&performance, &crate::power::fixture::Spec::default());
    let power = |report: &Report| report.findings.iter().filter(|f| f.rule == Rule::Power).map(|f| f.to_string()).collect::<Vec<_>>();
    let found = power(&tree.check());
    assert!(found.len() == 1 && found[0].contains("ptd_out.txt") && found[0].contains("FileSet"), "{found:?}");
    std::fs::remove_file(performance.join("run_1/ptd_out.txt")).unwrap();
    assert_eq!(power(&tree.check()), Vec::<String>::new());
    std::fs::write(performance.join("ranging/spl.txt"), "edited\n").unwrap();
    assert!(power(&tree.check()).iter().any(|f| f.contains("ResultsChecksum") && f.contains("ranging/spl.txt")));
}

/// A power result inferred as the official preprocess_submission.py infers it: the whole measured
/// directory, power session included; the checker then computes the inferred scenario's power metric
/// from the copy (power_check.py: MultiStream from SingleStream counts 8 samples a query).
#[test]
fn an_inferred_result_carries_the_measured_power_session_and_passes_the_power_rules() {
    use crate::power::fixture::{Spec, write_session};
    use crate::power::metric::power_metric;
    use crate::power::session::{ModeRun, POWER_DIR, RANGING_DIR, SPL, TESTING_DIR};
    let tree = Copy::new();
    tree.remove(&at("MultiStream", ""));
    tree.remove(&at("Offline", ""));
    let measured = tree.path(&at("SingleStream", "performance"));
    write_session(&measured, &Spec { scenario: "SingleStream", ..Spec::default() });
    std::fs::remove_file(measured.join(TESTING_DIR).join("ptd_out.txt")).unwrap();
    assert_eq!(crate::submission::infer::infer_results(&tree.0, &round(), None).unwrap().inferred.len(), 2);
    // (The generated detail logs lack the seeds and settings the other rules want: only power here.)
    let power: Vec<String> = tree.check().findings.iter().filter(|f| f.rule == Rule::Power).map(ToString::to_string).collect();
    assert_eq!(power, Vec::<String>::new());
    let session: Vec<PathBuf> = [POWER_DIR, RANGING_DIR, TESTING_DIR]
        .iter()
        .flat_map(|dir| crate::fsutil::walk_files(&measured.join(dir)))
        .filter(|f| f.starts_with(measured.join(POWER_DIR)) || f.ends_with(SPL))
        .collect();
    assert_eq!(session.len(), 7, "five power files and two spl.txt: {session:?}");
    let single = power_metric(&ModeRun::read(&measured.join(TESTING_DIR)).unwrap(), Scenario::SingleStream, 0.0).unwrap().value().0;
    for (scenario, says) in [("MultiStream", "(energy per query = 8 x the SingleStream session's"), ("Offline", "(average watts = the measured session's")] {
        let inferred = tree.path(&at(scenario, "performance"));
        for file in &session {
            assert_eq!(std::fs::read(inferred.join(file.strip_prefix(&measured).unwrap())).unwrap(), std::fs::read(file).unwrap(), "{scenario}: {}", file.display());
        }
        let readme = tree.read(&at(scenario, "README.md"));
        assert!(readme.contains("Its power result (performance/power, ranging, run_1/spl.txt) is the SingleStream session's") && readme.contains(says), "{readme}");
    }
    let testing = ModeRun::read(&tree.path(&at("MultiStream", "performance/run_1"))).unwrap();
    let multi = power_metric(&testing, Scenario::MultiStream, 0.0).unwrap().value().0;
    assert!((multi - 8.0 * single).abs() < 1e-9, "{multi} vs {single}");
}

#[test]
fn a_power_result_measured_by_the_stand_in_is_a_warning_naming_it() {
    let tree = Copy::new();
    let performance = tree.path(&at("Offline", "performance"));
    crate::power::fixture::write_session(&performance, &crate::power::fixture::Spec { standin: true, ..crate::power::fixture::Spec::default() });
    std::fs::remove_file(performance.join("run_1/ptd_out.txt")).unwrap();
    let report = tree.check();
    // (The generated detail logs lack the seeds and settings the other rules want: only power here.)
    let power: Vec<(Severity, String)> = report.findings.iter().filter(|f| f.rule == Rule::Power).map(|f| (f.severity, f.to_string())).collect();
    assert!(power.len() == 1 && power[0].0 == Severity::Warning && power[0].1.contains("PTDaemon stand-in") && power[0].1.contains("STANDIN0000"), "{power:?}");
}

#[test]
fn trace_logs_are_warnings() {
    let tree = Copy::new();
    tree.write(&at("Offline", "performance/run_1/mlperf_log_trace.json"), "{\"traceEvents\":[]}");
    let report = tree.check();
    assert_eq!(report.error_count(), 0, "{}", report.render());
    assert!(report.findings.iter().any(|f| f.rule == Rule::Hygiene && f.severity == Severity::Warning), "{}", report.render());
}

/// The results with no error, by scenario.
fn passing(report: &Report) -> Vec<Scenario> {
    report.passing_results().iter().map(|k| k.scenario).collect()
}

#[test]
fn a_link_to_the_root_is_refused_at_once_and_never_walked() {
    let tree = Copy::new();
    std::os::unix::fs::symlink("/", tree.path(&at("SingleStream", "root"))).unwrap();
    let started = std::time::Instant::now();
    let report = tree.check();
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "took {:?}", started.elapsed());
    assert_error(&report, Rule::Link, &at("SingleStream", "root"), "symbolic link to /");
    assert_error(&report, Rule::Link, &format!("{SCENARIO}/SingleStream"), "other rules were not run");
    assert_eq!(passing(&report), [Scenario::MultiStream, Scenario::Offline], "{}", report.render());
}

#[test]
fn a_file_linked_out_of_the_tree_or_a_link_loop_fails_its_result() {
    let tree = Copy::new();
    let summary = at("Offline", "performance/run_1/mlperf_log_summary.txt");
    tree.remove(&summary);
    std::os::unix::fs::symlink("/etc/passwd", tree.path(&summary)).unwrap();
    std::os::unix::fs::symlink(tree.path(SCENARIO), tree.path(&at("MultiStream", "loop"))).unwrap();
    // A link at the division or submitter level is refused too, and never entered.
    std::os::unix::fs::symlink("/", tree.path("closed/Elsewhere")).unwrap();
    let report = tree.check();
    assert_error(&report, Rule::Link, &summary, "symbolic link to /etc/passwd");
    assert_error(&report, Rule::Link, &at("MultiStream", "loop"), "symbolic link to");
    assert_error(&report, Rule::Link, "closed/Elsewhere", "symbolic link to /");
    assert_eq!(passing(&report), [Scenario::SingleStream], "{}", report.render());
    assert_eq!(report.results.len(), 3, "{}", report.render());
}

#[test]
fn names_with_a_newline_or_a_leading_dash_are_refused() {
    let tree = Copy::new();
    tree.write(&at("Offline", "-rf"), "x");
    tree.write(&at("SingleStream", "performance/run_1/new\nline.txt"), "x");
    let report = tree.check();
    assert_error(&report, Rule::FileName, &at("Offline", "-rf"), "starts with `-`");
    assert_error(&report, Rule::FileName, &at("SingleStream", "performance/run_1/new\nline.txt"), "\"new\\nline.txt\": file name holds a control character");
    assert_eq!(passing(&report), [Scenario::MultiStream], "{}", report.render());
}

#[test]
fn the_summary_must_state_what_the_detail_log_says() {
    let tree = Copy::new();
    // A latency faked in the detail log alone.
    tree.set_log_value(&at("SingleStream", "performance/run_1/mlperf_log_detail.txt"), "result_90.00_percentile_latency_ns", serde_json::json!(1879598));
    // A validity faked in the summary alone.
    tree.replace(&at("MultiStream", "performance/run_1/mlperf_log_summary.txt"), "Result is : VALID", "Result is : INVALID");
    // Another file in the summary's place.
    tree.write(&at("Offline", "performance/run_1/mlperf_log_summary.txt"), "root:x:0:0:root:/root:/bin/bash\n");
    let report = tree.check();
    let summary = |scenario: &str| at(scenario, "performance/run_1/mlperf_log_summary.txt");
    assert_error(
        &report,
        Rule::SummaryMatchesDetail,
        &summary("SingleStream"),
        "states `90.00 percentile latency (ns) : 21879598`, but the detail log's result_90.00_percentile_latency_ns is 1879598",
    );
    assert_error(&report, Rule::SummaryMatchesDetail, &summary("MultiStream"), "states `Result is : INVALID`, but the detail log's result_validity is \"VALID\"");
    assert_error(&report, Rule::SummaryMatchesDetail, &summary("Offline"), "not a LoadGen summary");
    assert!(passing(&report).is_empty(), "{}", report.render());
}

#[test]
fn every_rule_has_a_distinct_name() {
    let mut names: Vec<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Rule::ALL.len());
}

#[test]
fn the_rounds_accuracy_patterns_work_as_in_python() {
    let round = round();
    for (metric, pattern) in round.accuracy_patterns.0.iter() {
        common::python_regex(pattern).unwrap_or_else(|e| panic!("{metric}: {e}"));
    }
    let f1 = common::python_regex(round.accuracy_patterns.get("F1").unwrap()).unwrap();
    assert_eq!(common::first_group(&f1, r#"{"exact_match": 83.6, "f1": 90.91}"#), Some("90.91"));
    let acc = common::python_regex(round.accuracy_patterns.get("acc").unwrap()).unwrap();
    assert_eq!(common::first_group(&acc, "accuracy=76.456%, good=38228, total=50000"), Some("76.456"));
    // re.match anchors at the start only.
    assert_eq!(common::first_group(&acc, "top1 accuracy=76.456%"), None);
}

#[test]
fn official_verdicts_are_read_from_the_checker_log() {
    let log = "[2026-11-22 06:56:30,038 main.py:231 INFO] Results /x/closed/Example/results/CPU-dev_RS/resnet/Offline/performance/run_1/mlperf_log_detail.txt 320.1\n\
               ERROR:main:NoResults /x/closed/Example/results/CPU-dev_RS/resnet/SingleStream/performance/run_1/mlperf_log_detail.txt\n\
               ERROR:main:SUMMARY: submission has errors\n";
    let verdict = official::parse(log, Some(1), Path::new("checker_log.txt"), Path::new("checker_summary.csv"));
    assert!(!verdict.accepted);
    assert_eq!(verdict.summary, "submission has errors");
    assert_eq!(verdict.accepted_results, [ResultKey::new("CPU-dev_RS", "resnet", Scenario::Offline)]);
    assert_eq!(verdict.rejected_results, [ResultKey::new("CPU-dev_RS", "resnet", Scenario::SingleStream)]);
    // The pre-flight of the good tree found nothing wrong with SingleStream: a disagreement.
    let report = Copy::new().check();
    let disagreements = official::disagreements(&report, &verdict);
    assert_eq!(disagreements.len(), 1, "{disagreements:?}");
    assert!(disagreements[0].starts_with("CPU-dev_RS/resnet/SingleStream: the official checker rejects it"), "{disagreements:?}");
    let crashed = official::parse("Traceback (most recent call last):\nTypeError: 'NoneType' object is not iterable\n", Some(1), Path::new("l"), Path::new("c"));
    assert!(!crashed.accepted && crashed.summary.contains("TypeError"), "{}", crashed.summary);
}

#[test]
fn a_bad_system_description_fails_every_result_of_the_system() {
    let tree = Copy::new();
    tree.edit_system(|s| {
        s.insert("status".into(), "beta".into());
    });
    let report = tree.check();
    assert!(report.passing_results().is_empty(), "{}", report.render());
    assert_eq!(report.tree_errors().count(), 0);
    let key = ResultKey::new("CPU-dev_RS", "resnet", Scenario::Offline);
    assert_eq!(report.errors_for(&key).count(), 1);
}

#[test]
fn v5_layout_reads_measurements_and_compliance_from_their_own_trees() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rounds/v5.1.toml")).unwrap();
    let v51: Round = toml::from_str(&text).unwrap();
    let tree = Copy::new();
    std::fs::rename(tree.path(&format!("{ORG}/src")), tree.path(&format!("{ORG}/code"))).unwrap();
    for scenario in ["SingleStream", "MultiStream", "Offline"] {
        let measurements = tree.path(&format!("{ORG}/measurements/CPU-dev_RS/resnet/{scenario}"));
        let compliance = tree.path(&format!("{ORG}/compliance/CPU-dev_RS/resnet/{scenario}"));
        std::fs::create_dir_all(&measurements).unwrap();
        std::fs::create_dir_all(&compliance).unwrap();
        for (file, to) in [("user.conf", "user.conf".to_string()), ("README.md", "README.md".to_string()), ("measurements.json", format!("CPU-dev_RS_{scenario}.json"))] {
            std::fs::rename(tree.path(&at(scenario, file)), measurements.join(to)).unwrap();
        }
        for test in ["TEST01", "TEST04"] {
            std::fs::rename(tree.path(&at(scenario, test)), compliance.join(test)).unwrap();
        }
    }
    let report = check_submission(&CheckRequest { round: &v51, input: &tree.0, submitter: None });
    // The logs are LoadGen 6.0.17's, with the v6.1 seeds: 3 seeds x 3 results x (run + TEST01 + TEST04).
    assert!(report.errors().all(|f| f.rule == Rule::Seeds), "{}", report.render());
    assert_eq!(report.error_count(), 27, "{}", report.render());
    assert_error(
        &report,
        Rule::Seeds,
        &format!("{ORG}/compliance/CPU-dev_RS/resnet/Offline/TEST04/performance/run_1/mlperf_log_detail.txt"),
        "round v5.1 requires 18209322760996052031",
    );
    // The same tree against the v6.1 rules misses everything it moved.
    assert_error(&tree.check(), Rule::RequiredFile, &at("Offline", "measurements.json"), "missing measurements file");
}
