//! `run_audit_harness`: for each selected config and compliance test, check the reference runs
//! exist, run the audit through [`harness::run_all`] (audit settings by explicit path, logs under
//! `<build>/compliance_logs/<TEST>/<timestamp>/...`), verify it natively, retry a failed
//! verification `audit_retries` times (every attempt's logs are kept: each gets its own
//! timestamp directory), and write the last verification to
//! `<build>/compliance/<system_name>/<bench>/<Scenario>/<TEST>/` plus `<TEST>.json` (provenance).

use super::ComplianceError;
use super::reference::{self, RunKey, RunKind};
use super::test01;
use super::{TestDir, Verification, test04, test06, test07, test09};
use crate::benchmarks;
use crate::dataset::SampleSet;
use crate::harness::{self, RunRequest};
use crate::rundir::plan::{Backend, RunPlan, TestMode};
use crate::rundir::report::{Outcome, RunStatus};
use crate::rundir::{ACCURACY_LOG, DETAIL_LOG, SUMMARY_LOG};
use crate::select::Selected;
use crate::submittable::NonSubmittable;
use mlperf_config::{Audit, AuditTest, BenchmarkRound, Round, Scenario, Settings, SystemInfo, render};
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The compliance tests this build verifies.
pub const VERIFIED_TESTS: [AuditTest; 5] = [AuditTest::Test01, AuditTest::Test04, AuditTest::Test06, AuditTest::Test07, AuditTest::Test09];

fn verified_names() -> String {
    VERIFIED_TESTS.map(AuditTest::name).join(", ")
}

/// The resolved `run_audit_harness` command.
pub struct AuditRequest<'a> {
    pub system: &'static SystemInfo,
    pub round: &'static Round,
    pub configs: Vec<Selected>,
    /// `--audit_tests`; None = each benchmark's required tests in the round.
    pub tests: Option<Vec<AuditTest>>,
    pub test_run: bool,
    pub backend: Backend,
    pub overrides: Vec<(String, String)>,
    pub caveats: Vec<NonSubmittable>,
    /// `logs/` (references), `compliance_logs/` (audit runs) and `compliance/` (verified) live here.
    pub build_dir: &'a Path,
    /// Replace an existing verified TEST directory.
    pub force: bool,
}

/// One verified (config, test).
#[derive(Debug, Clone, Serialize)]
pub struct AuditResult {
    pub system_name: String,
    pub bench_dir: String,
    pub scenario: Scenario,
    pub test: AuditTest,
    pub passed: bool,
    /// The numbers of the last attempt.
    pub summary: String,
    pub attempts: Vec<Attempt>,
    pub reference_performance: Option<PathBuf>,
    pub reference_accuracy: Option<PathBuf>,
    /// Why the audit or its references can never be part of a submission (empty = submittable).
    #[serde(serialize_with = "crate::submittable::as_text")]
    pub non_submittable: Vec<NonSubmittable>,
    /// The verified TEST directory.
    pub out_dir: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// The audit run directory.
    pub dir: PathBuf,
    pub run: RunStatus,
    pub passed: bool,
    pub summary: String,
}

/// One (config, test) to audit, with its references.
struct Job {
    selected: Selected,
    bench: &'static BenchmarkRound,
    /// The test's rules in the round (`[audits.TEST0x]`).
    rules: &'static Audit,
    system_name: String,
    bench_dir: String,
    test: AuditTest,
    performance_ref: Option<(PathBuf, RunPlan)>,
    accuracy_ref: Option<(PathBuf, RunPlan)>,
    out_dir: PathBuf,
}

impl Job {
    fn label(&self) -> String {
        format!("{}/{}/{}", self.system_name, self.bench_dir, self.selected.config.scenario)
    }
}

/// Plans every job, failing before any run when a test is unknown, a reference is missing or a
/// verified directory would be overwritten.
fn plan(req: &AuditRequest) -> Result<Vec<Job>, ComplianceError> {
    if let Some(bad) = req.tests.iter().flatten().find(|t| !VERIFIED_TESTS.contains(t)) {
        let known: Vec<&str> = req.round.audits.keys().map(|t| t.name()).collect();
        return Err(ComplianceError::NotVerified { test: *bad, verified: verified_names(), round: req.round.id.to_string(), known: known.join(", ") });
    }
    let (logs, out_root) = (req.build_dir.join("logs"), req.build_dir.join("compliance"));
    let (mut jobs, mut problems) = (Vec::new(), Vec::new());
    for selected in &req.configs {
        let config = selected.config;
        let bench = req.round.benchmark(&config.benchmark).ok_or_else(|| ComplianceError::RoundLacks(format!("round {} has no {}", req.round.id, config.benchmark)))?;
        let system_name = render::system_name(&req.system.id, config.workload);
        let bench_dir = bench.checker_model(config.workload.accuracy).unwrap_or(&config.benchmark).to_string();
        let scenario = config.scenario;
        let required: &[AuditTest] = &bench.compliance;
        let tests: Vec<AuditTest> = match &req.tests {
            Some(tests) => tests.iter().copied().filter(|t| required.contains(t)).collect(),
            None => required.to_vec(),
        };
        if let Some(unverified) = tests.iter().find(|t| !VERIFIED_TESTS.contains(t)) {
            problems.push(format!("{system_name}/{bench_dir}/{scenario} needs {unverified}, which this build cannot verify yet (it verifies {})", verified_names()));
            continue;
        }
        let key = RunKey { system_name: &system_name, bench_dir: &bench_dir, scenario, round: &req.round.id };
        for test in tests {
            let mut find = |kind| {
                let found = reference::newest(&logs, key, kind, req.round);
                if found.is_none() {
                    problems.push(reference::missing(&logs, key, kind, &config.benchmark, test));
                }
                found
            };
            let performance_ref = if matches!(test, AuditTest::Test01 | AuditTest::Test04) { find(RunKind::Performance) } else { None };
            let accuracy_ref = if test == AuditTest::Test01 { find(RunKind::Accuracy) } else { None };
            if let Some((run, _)) = &accuracy_ref {
                // A log that does not read back would fail the audit only after it ran.
                crate::accuracy::log::read_accuracy_log(&run.join(ACCURACY_LOG)).map_err(|source| ComplianceError::CorruptReference { run: run.clone(), source })?;
            }
            let Some(rules) = req.round.audits.get(&test) else {
                problems.push(format!("round {} requires {test} of {} but has no [audits.{test}] rules", req.round.id, config.benchmark));
                continue;
            };
            let out_dir = out_root.join(&system_name).join(&bench_dir).join(scenario.name()).join(test.name());
            if out_dir.exists() && !req.force {
                problems.push(format!("{} already exists; pass --force to verify {test} again and replace it", out_dir.display()));
            }
            jobs.push(Job {
                selected: selected.clone(),
                bench,
                rules,
                system_name: system_name.clone(),
                bench_dir: bench_dir.clone(),
                test,
                performance_ref,
                accuracy_ref,
                out_dir,
            });
        }
    }
    if !problems.is_empty() {
        return Err(ComplianceError::NothingRun(problems));
    }
    if jobs.is_empty() {
        let asked: Vec<&str> = req.tests.iter().flatten().map(|t| t.name()).collect();
        return Err(ComplianceError::NotRequired { tests: asked.join(", "), round: req.round.id.to_string() });
    }
    Ok(jobs)
}

/// Runs and verifies every audit; returns one result per (config, test).
pub fn run_audit_harness(req: &AuditRequest) -> Result<Vec<AuditResult>, crate::Error> {
    let jobs = plan(req)?;
    let mut results = Vec::new();
    for job in &jobs {
        let settings = &job.selected.settings;
        let tries = 1 + settings.audit_retries.unwrap_or(0);
        let mut attempts = Vec::new();
        let mut last: Option<(Verification, Option<TestDir>, RunPlan)> = None;
        for attempt in 1..=tries {
            let stamp = harness::timestamp();
            let timestamp = if attempt == 1 { stamp } else { format!("{stamp}_retry{}", attempt - 1) };
            let outcomes = harness::run_all(&RunRequest {
                system: req.system,
                round: req.round,
                configs: vec![job.selected.clone()],
                test_mode: TestMode::PerformanceOnly,
                test_run: req.test_run,
                audit_test: Some(job.test),
                backend: req.backend,
                overrides: req.overrides.clone(),
                caveats: req.caveats.clone(),
                user_conf: None,
                log_dir: req.build_dir.join("compliance_logs").join(job.test.name()),
                timestamp,
            })
            .into_result()?;
            let Some(outcome) = outcomes.into_iter().next() else {
                return Err(format!("stopped by a signal before {} of {} ran", job.test, job.label()).into());
            };
            if outcome.status == RunStatus::Aborted {
                return Err(format!("stopped during {} of {}; its partial logs are in {}", job.test, job.label(), outcome.dir.display()).into());
            }
            let (verification, dir) = verify(job, settings, &outcome)?;
            tracing::info!("{} {} attempt {attempt} of {tries}: {} ({})", job.test, job.label(), if verification.passed { "PASS" } else { "FAIL" }, verification.summary);
            attempts.push(Attempt { dir: outcome.dir.clone(), run: outcome.status, passed: verification.passed, summary: verification.summary.clone() });
            let passed = verification.passed;
            last = Some((verification, dir, outcome.plan));
            if passed {
                break;
            }
        }
        let (verification, dir, plan) = last.expect("at least one attempt");
        let mut non_submittable = plan.non_submittable.clone();
        for (_, reference) in job.performance_ref.iter().chain(&job.accuracy_ref) {
            for reason in &reference.non_submittable {
                if !non_submittable.contains(reason) {
                    non_submittable.push(reason.clone());
                }
            }
        }
        let result = AuditResult {
            system_name: job.system_name.clone(),
            bench_dir: job.bench_dir.clone(),
            scenario: job.selected.config.scenario,
            test: job.test,
            passed: verification.passed,
            summary: verification.summary,
            attempts,
            reference_performance: job.performance_ref.as_ref().map(|(d, _)| d.clone()),
            reference_accuracy: job.accuracy_ref.as_ref().map(|(d, _)| d.clone()),
            non_submittable,
            out_dir: job.out_dir.clone(),
        };
        // A run that left no logs has nothing to verify, so nothing is written for it.
        if let Some(dir) = dir {
            dir.write(&job.out_dir, req.force)?;
            let json = serde_json::to_string_pretty(&result).expect("results serialize");
            crate::fsutil::write_atomic(&job.out_dir.with_extension("json"), json.as_bytes())?;
        }
        results.push(result);
    }
    Ok(results)
}

/// Verifies one audit run; the TEST directory is None when the run left no logs.
fn verify(job: &Job, settings: &Settings, outcome: &Outcome) -> Result<(Verification, Option<TestDir>), ComplianceError> {
    let run = &outcome.dir;
    // A run that failed (crashed, aborted, an engine error) has no complete logs to verify.
    if !run.join(DETAIL_LOG).is_file() || outcome.status == RunStatus::Failed {
        let why = outcome.advice.clone().unwrap_or_else(|| format!("the audit run {} left no logs", run.display()));
        return Ok((Verification::text(false, String::new(), why), None));
    }
    let rules = job.rules;
    let mut dir = TestDir::default();
    let verification = match job.test {
        AuditTest::Test01 => verify_test01(job, settings, run, rules, &mut dir)?,
        AuditTest::Test04 => {
            let (reference, _) = job.performance_ref.as_ref().expect("planned with a reference");
            let tolerance = rules.tolerance_percent.ok_or_else(|| ComplianceError::RoundLacks("the round's TEST04 has no tolerance_percent".into()))?;
            let v = test04::compare_summaries(&reference.join(SUMMARY_LOG), &run.join(SUMMARY_LOG), tolerance);
            dir.text("verify_performance.txt", v.report.clone());
            copy_performance_logs(&mut dir, run);
            v
        }
        AuditTest::Test06 => {
            let dtype = benchmarks::family(&job.selected.config.benchmark).audit().test06_dtype;
            let v = test06::verify(&run.join(ACCURACY_LOG), job.selected.config.scenario, dtype, test06::DEFAULT_EOS_TOKEN_ID)?;
            dir.text("verify_accuracy.txt", v.report.clone());
            dir.copy("accuracy/mlperf_log_accuracy.json", &run.join(ACCURACY_LOG));
            v
        }
        AuditTest::Test09 => {
            let bounds =
                job.bench.test09_output_tokens.ok_or_else(|| ComplianceError::RoundLacks(format!("round has no test09_output_tokens for {}", job.selected.config.benchmark)))?;
            let v = test09::verify(&run.join(ACCURACY_LOG), bounds)?;
            dir.text("verify_output_len.txt", v.report.clone());
            dir.copy("accuracy/mlperf_log_accuracy.json", &run.join(ACCURACY_LOG));
            v
        }
        AuditTest::Test07 => {
            let set = job.bench.test07.ok_or_else(|| ComplianceError::RoundLacks(format!("round has no test07 set for {}", job.selected.config.benchmark)))?;
            let log = run.join(ACCURACY_LOG);
            let scored = benchmarks::family(&job.selected.config.benchmark).score(settings, &log, SampleSet::Test07).map_err(|e| ComplianceError::Score(e.to_string()))?;
            let v = test07::verify(&scored, set.accuracy_threshold);
            dir.text("verify_accuracy.txt", v.report.clone());
            dir.copy("accuracy/mlperf_log_accuracy.json", &log);
            copy_performance_logs(&mut dir, run);
            v
        }
        AuditTest::Test08 => unreachable!("planned only for VERIFIED_TESTS"),
    };
    Ok((verification, Some(dir)))
}

fn copy_performance_logs(dir: &mut TestDir, run: &Path) {
    dir.copy("performance/run_1/mlperf_log_summary.txt", &run.join(SUMMARY_LOG));
    dir.copy("performance/run_1/mlperf_log_detail.txt", &run.join(DETAIL_LOG));
}

fn verify_test01(job: &Job, settings: &Settings, run: &Path, rules: &Audit, dir: &mut TestDir) -> Result<Verification, ComplianceError> {
    let (perf_ref, _) = job.performance_ref.as_ref().expect("planned with a reference");
    let (acc_ref, _) = job.accuracy_ref.as_ref().expect("planned with a reference");
    let delta = rules.performance_delta_percent.ok_or_else(|| ComplianceError::RoundLacks("the round's TEST01 has no performance_delta_percent".into()))?;
    let performance = test01::compare_performance(&perf_ref.join(DETAIL_LOG), &run.join(DETAIL_LOG), delta);
    let (reference_log, audit_log) = (acc_ref.join(ACCURACY_LOG), run.join(ACCURACY_LOG));
    let dtype = benchmarks::family(&job.selected.config.benchmark).audit().test01_dtype;
    let comparison = test01::compare_accuracy_logs(&reference_log, &audit_log, dtype);
    let accuracy_report = match &comparison {
        Ok(c) => c.report(),
        Err(e) => format!("Verifying accuracy. This might take a while...\nERROR: {e}\nTEST FAIL\n\n"),
    };
    dir.text("verify_accuracy.txt", accuracy_report);
    dir.text("verify_performance.txt", performance.report.clone());
    dir.copy("accuracy/mlperf_log_accuracy.json", &audit_log);
    copy_performance_logs(dir, run);
    let mut summary = String::new();
    let accuracy_passed = match &comparison {
        Ok(c) if c.passed() => {
            let _ = write!(summary, "accuracy {} matched, 0 differ", c.perf_log_qsl_idx_match);
            true
        }
        Ok(c) if c.perf_log_data_mismatch > 0 => {
            let _ = write!(summary, "accuracy {} of {} matched entries differ; ", c.perf_log_data_mismatch, c.perf_log_qsl_idx_match);
            match run_fallback(job, settings, &reference_log, &audit_log, run) {
                Ok(fallback) => {
                    dir.text("accuracy/baseline_accuracy.txt", fallback.baseline.text.clone());
                    dir.text("accuracy/compliance_accuracy.txt", fallback.compliance.text.clone());
                    dir.text("accuracy/accuracy.txt", fallback.compliance.text.clone());
                    let deltas: Vec<String> = fallback.deltas.iter().map(|(m, d, a)| format!("{m} delta {d:.3} % (allowed {a} %)")).collect();
                    let _ = write!(summary, "fallback {}", deltas.join(", "));
                    fallback.passed
                }
                Err(e) => {
                    let _ = write!(summary, "fallback impossible: {e}");
                    false
                }
            }
        }
        Ok(c) => {
            let _ = write!(summary, "accuracy: no sampled entry found in the reference ({} entries logged)", c.perf_log_entries);
            false
        }
        Err(e) => {
            let _ = write!(summary, "accuracy: {e}");
            false
        }
    };
    let _ = write!(summary, "; {}", performance.summary);
    Ok(Verification::text(accuracy_passed && performance.passed, String::new(), summary))
}

fn run_fallback(job: &Job, settings: &Settings, reference_log: &Path, audit_log: &Path, run: &Path) -> Result<test01::Fallback, test01::Test01Error> {
    let family = benchmarks::family(&job.selected.config.benchmark);
    let score = |log: &Path| family.score(settings, log, SampleSet::Performance);
    // The baseline stays with the audit run's logs, where the official script leaves it (its CWD).
    let baseline = run.join("mlperf_log_accuracy_baseline.json");
    test01::write_baseline_log(reference_log, audit_log, &baseline)?;
    let targets: Vec<(String, f64)> =
        job.bench.accuracy.iter().filter(|a| a.checker_model == job.bench_dir).filter_map(|a| Some((a.metric.to_string(), a.delta_percent?))).collect();
    test01::fallback(&baseline, audit_log, &targets, &score)
}

/// The table printed after `run_audit_harness`.
pub fn table(results: &[AuditResult]) -> String {
    let mut out = String::new();
    let width = results.iter().map(|r| r.system_name.len() + r.bench_dir.len() + r.scenario.name().len() + 2).max().unwrap_or(6).max(6);
    let _ = writeln!(out, "{:<width$}  {:<6}  {:<6}  {:>8}  numbers", "config", "test", "result", "attempts");
    for r in results {
        let config = format!("{}/{}/{}", r.system_name, r.bench_dir, r.scenario);
        let _ = writeln!(out, "{config:<width$}  {:<6}  {:<6}  {:>8}  {}", r.test.name(), if r.passed { "PASS" } else { "FAIL" }, r.attempts.len(), r.summary);
    }
    if let Some(flagged) = results.iter().find(|r| !r.non_submittable.is_empty()) {
        let _ = writeln!(out, "Not submittable: {}", flagged.non_submittable.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "));
    }
    if let Some(first) = results.first() {
        let root = first.out_dir.ancestors().nth(4).unwrap_or(&first.out_dir);
        let _ = writeln!(out, "Verified: {}", root.display());
    }
    out
}
