//! `mlperf stage_results` and `mlperf stage_compliance`: the newest VALID runs of the selected
//! configs (from `build/logs`) and their verified audits (from `build/compliance`) into the round's
//! submission layout, with the generated measurement files and system description of exactly the
//! configs that were run.
//!
//! Refused: INVALID or failed runs, runs marked non-submittable (unless `allow_non_submittable`,
//! which stages them loudly and keeps their `NON_SUBMITTABLE.txt` next to the staged logs), failed
//! audit verification, and changing an already staged file without `force`. Every refusal of every
//! config is reported at once and nothing is written.

use super::SubmissionError;
use super::{Content, PlaceReport, Placement, copy_tree, place_all, required_audits};
use crate::fsutil::{DirLock, FsError};
use crate::generate;
use crate::layout::{ACCURACY_LOG, ACCURACY_TXT, DETAIL_LOG, Division, ResultKey, SUMMARY_LOG, SubmissionLayout};
use crate::power::session::{POWER_DIR, POWER_FILES, RANGING_DIR, RUN_FILES, SESSION_IN_RUN_DIR, TESTING_DIR};
use crate::rundir::plan::{RunMode, RunPlan, read_plan};
use crate::rundir::report::{Outcome, Unusable};
// A run directory's own record of what it was and why it can never be part of a submission:
// staging keeps them next to the staged logs; export leaves them out.
use crate::rundir::{NON_SUBMITTABLE, RUN_PLAN, USER_CONF};
use crate::select::Selected;
use crate::signals::ChildExit;
use crate::submittable::NonSubmittable;
use mlperf_config::render;
use mlperf_config::round::system_type_key;
use mlperf_config::{CompiledConfig, Round, Tables};
use std::path::{Path, PathBuf};

/// Why a staging command wrote nothing. The refusals of every config come at once, one
/// user-facing line each (the run directory and the command that fixes it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    #[error("this build carries no mlperf.conf of LoadGen {0}")]
    NoMlperfConf(String),
    #[error("nothing staged:\n{}", .0.join("\n"))]
    Refused(Vec<String>),
    /// Another writer holds the output directory.
    #[error(transparent)]
    Locked(#[from] FsError),
    #[error(transparent)]
    Place(#[from] SubmissionError),
}

impl From<StageError> for crate::Error {
    fn from(e: StageError) -> crate::Error {
        match e {
            StageError::NoMlperfConf(_) => crate::Error::Config(e.to_string()),
            StageError::Place(e) => e.into(),
            _ => crate::Error::Other(e.to_string()),
        }
    }
}

/// What the staging commands work on.
pub struct StageRequest<'a> {
    pub tables: &'static Tables,
    pub round: &'static Round,
    pub configs: Vec<Selected>,
    /// Default: the system description's `submitter`.
    pub submitter: Option<String>,
    /// The submission root (`build/submission`).
    pub out: &'a Path,
    /// Where the runs are (`build/logs`).
    pub logs: &'a Path,
    /// Where verified audits are (`build/compliance`).
    pub compliance: &'a Path,
    pub allow_non_submittable: bool,
    /// Stage an accuracy run that scored below the round's target (loudly).
    pub allow_below_target: bool,
    pub force: bool,
}

/// What a staging command did, for the user.
#[derive(Debug, Default)]
pub struct StageReport {
    /// One line per staged result or audit.
    pub staged: Vec<String>,
    /// Things the user must see (non-submittable runs staged, newer runs skipped).
    pub warnings: Vec<String>,
    pub files: PlaceReport,
}

/// Where one config's result goes.
struct Target {
    tree: SubmissionLayout,
    key: ResultKey,
}

fn target(req: &StageRequest, config: &CompiledConfig) -> Result<Target, String> {
    let system = req.tables.system(&config.system).ok_or_else(|| format!("this binary has no system {}", config.system))?;
    let desc: serde_json::Value = serde_json::from_str(&system.description_json).map_err(|e| format!("systems/{}.json: {e}", system.id))?;
    let field = |name: &str| desc[name].as_str().filter(|s| !s.is_empty()).ok_or_else(|| format!("systems/{}.json has no \"{name}\"; fill it in and rebuild", system.id));
    let described = field("submitter")?;
    let submitter = match &req.submitter {
        // The checker requires the submitter directory to equal the description's field (ignoring case).
        Some(name) if !name.eq_ignore_ascii_case(described) => {
            return Err(format!(
                "--submitter {name} differs from \"submitter\": \"{described}\" in systems/{}.json; the checker requires them to match: set the field there and rebuild, or drop --submitter",
                system.id
            ));
        }
        Some(name) => name.clone(),
        None => described.to_string(),
    };
    let division_name = field("division")?;
    let division = Division::parse(division_name).ok_or_else(|| format!("systems/{}.json: division \"{division_name}\" is not closed, open or network", system.id))?;
    let bench = req.round.benchmark(&config.benchmark).ok_or_else(|| format!("round {} has no benchmark {}", req.round.id, config.benchmark))?;
    let bench_dir = bench
        .checker_model(config.workload.accuracy)
        .ok_or_else(|| format!("{} has no {} accuracy target in round {}", config.benchmark, config.workload.accuracy.key(), req.round.id))?;
    Ok(Target {
        tree: SubmissionLayout::new(req.out, division, &submitter, req.round.layout),
        key: ResultKey::new(render::system_name(&system.id, config.workload), bench_dir, config.scenario),
    })
}

/// A run directory with its plan and how it ended.
struct Run {
    dir: PathBuf,
    plan: RunPlan,
    outcome: Outcome,
}

/// Every run of `key` under `logs` (`<timestamp>/<key>` and its `accuracy/`, `performance/`
/// SubmissionRun subdirectories), newest first.
fn runs_of(logs: &Path, key: &ResultKey, round: &Round) -> Vec<Run> {
    let mut stamps: Vec<PathBuf> = std::fs::read_dir(logs).map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()).unwrap_or_default();
    // NVIDIA's timestamps (%Y.%m.%d-%H.%M.%S) sort by time.
    stamps.sort_by(|a, b| b.cmp(a));
    let mut runs = Vec::new();
    for stamp in stamps {
        let base = stamp.join(key.rel());
        for dir in [base.join("performance"), base.join("accuracy"), base] {
            if let Ok(mut plan) = read_plan(&dir) {
                // What the power session recorded counts too, marked in the run or not (a run
                // kept before the mark existed, a marker deleted).
                for reason in power_session(&dir).map(|s| crate::power::standin::caveats(&s)).unwrap_or_default() {
                    if !plan.non_submittable.contains(&reason) {
                        plan.non_submittable.push(reason);
                    }
                }
                let outcome = Outcome::read(&dir, &plan, ChildExit::Code(0), round);
                runs.push(Run { dir, plan, outcome });
            }
        }
    }
    runs
}

fn is_run_of(plan: &RunPlan, config: &CompiledConfig, round: &Round) -> bool {
    plan.system == config.system
        && plan.benchmark == config.benchmark
        && plan.scenario == config.scenario
        && plan.workload == config.workload
        && plan.round == round.id
        && plan.audit_test.is_none()
}

/// Why a run cannot be staged as it is (None: it can). An accuracy run below the target is staged
/// only with `allow_below_target` (the checker then still reports it).
fn unusable(run: &Run, allow_below_target: bool) -> Option<String> {
    match run.outcome.unusable()? {
        Unusable::BelowTarget(_) if allow_below_target => None,
        why @ Unusable::BelowTarget(_) => Some(format!("{why}; pass --allow-below-target to stage it anyway (check_submission still refuses it in the closed division)")),
        why => Some(why.to_string()),
    }
}

/// The newest usable run of `mode`, and notes about newer runs passed over.
fn choose<'r>(runs: &'r [Run], mode: RunMode, label: &str, command: &str, req: &StageRequest) -> Result<(&'r Run, Vec<String>), String> {
    let mut passed_over = Vec::new();
    let mut non_submittable = Vec::new();
    for run in runs.iter().filter(|r| r.plan.mode == mode) {
        if let Some(why) = unusable(run, req.allow_below_target) {
            passed_over.push(format!("{}: {why}", run.dir.display()));
        } else if !run.plan.non_submittable.is_empty() && !req.allow_non_submittable {
            non_submittable.push(run);
        } else {
            let mut notes: Vec<String> = passed_over.into_iter().map(|p| format!("{label}: passed over newer {mode} run {p}")).collect();
            notes.extend(non_submittable.iter().map(|r| format!("{label}: passed over newer non-submittable {mode} run {}", r.dir.display())));
            return Ok((run, notes));
        }
    }
    let mut message = format!("{label}: no usable {mode} run");
    for p in &passed_over {
        message.push_str(&format!("\n  refused {p}"));
    }
    for run in &non_submittable {
        message.push_str(&format!("\n  refused {} (VALID but not submittable):", run.dir.display()));
        for reason in &run.plan.non_submittable {
            message.push_str(&format!("\n    - {reason}"));
        }
    }
    if !non_submittable.is_empty() {
        message.push_str("\n  pass --allow-non-submittable to stage it anyway (the tree then demonstrates the pipeline, not a result)");
    }
    message.push_str(&format!("\n  to get one, run `{command}`"));
    Err(message)
}

/// The command that produces a run of this config.
fn run_command(config: &CompiledConfig, round: &Round, mode: RunMode) -> String {
    format!("mlperf run_harness {} --test_mode={mode} --round={}", render::selection_flags(config), round.id)
}

/// Loud lines for a non-submittable run that is being staged (the `.dangerous()` path).
fn non_submittable_warning(run: &Run) -> Option<String> {
    (!run.plan.non_submittable.is_empty()).then(|| {
        let reasons: String = run.plan.non_submittable.iter().map(|r| format!("\n    - {r}")).collect();
        format!("STAGING A NON-SUBMITTABLE RUN {} (--allow-non-submittable); {NON_SUBMITTABLE} is kept next to its staged logs:{reasons}", run.dir.display())
    })
}

/// The run's logs, and its provenance files, into `dest`.
fn run_files(run: &Run, dest: &Path, logs: &[&str]) -> Vec<Placement> {
    let mut names: Vec<&str> = logs.to_vec();
    names.extend([RUN_PLAN, NON_SUBMITTABLE].into_iter().filter(|n| run.dir.join(n).exists()));
    names.into_iter().map(|n| Placement { dest: dest.join(n), content: Content::Copy(run.dir.join(n)) }).collect()
}

/// The power-dev client's session tree kept in a power run's directory, if the run measured power.
fn power_session(run_dir: &Path) -> Option<PathBuf> {
    Some(run_dir.join(SESSION_IN_RUN_DIR)).filter(|d| d.is_dir())
}

/// A power run's files, byte for byte (client.json and server.json hold their SHA-1s): the
/// session's `run_1/` and `ranging/` logs and `power/` files, exactly the sets the submission
/// checker compares (a symmetric difference: `ptd_out.txt` stays behind), and the run's
/// provenance files beside them in `performance/` (run_1/ may hold nothing else), the marker
/// rendered from `reasons` (the run's, with what the session recorded).
fn power_files(session: &Path, run_1: &Path, reasons: &[NonSubmittable]) -> Result<Vec<Placement>, String> {
    let performance = run_1.parent().expect("run_1 lies in performance/");
    let sets = [
        (TESTING_DIR, run_1.to_path_buf(), &RUN_FILES[..]),
        (RANGING_DIR, performance.join(RANGING_DIR), &RUN_FILES[..]),
        (POWER_DIR, performance.join(POWER_DIR), &POWER_FILES[..]),
    ];
    let mut placements = Vec::new();
    let mut missing = Vec::new();
    for (from, dest, names) in sets {
        for name in names {
            let source = session.join(from).join(name);
            if !source.is_file() {
                missing.push(source.display().to_string());
            }
            placements.push(Placement { dest: dest.join(name), content: Content::Copy(source) });
        }
    }
    if !missing.is_empty() {
        return Err(format!("the power session lacks {}; rerun `mlperf run_harness_power`", missing.join(", ")));
    }
    // A session the power checker would fail is never staged (it cannot be repaired by editing).
    let findings = crate::power::rules::check(session, false);
    if !findings.is_empty() {
        let list: String = findings.iter().map(|f| format!("\n    - {f}")).collect();
        return Err(format!("the power session {} breaks the power rules:{list}", session.display()));
    }
    let run_dir = session.parent().expect("the session lies in its run directory");
    placements.extend([RUN_PLAN].into_iter().filter(|n| run_dir.join(n).exists()).map(|n| Placement { dest: performance.join(n), content: Content::Copy(run_dir.join(n)) }));
    if !reasons.is_empty() {
        placements.push(Placement { dest: performance.join(NON_SUBMITTABLE), content: Content::Text(crate::submittable::render(reasons)) });
    }
    Ok(placements)
}

/// A power result's `power_settings.md` and `analyzer_table.md`, in its scenario directory.
fn power_documents(session: &Path, system: &mlperf_config::SystemInfo, target: &Target, run: &Run) -> Vec<Placement> {
    use crate::power::documents::{ANALYZER_TABLE, POWER_SETTINGS, analyzer_table, power_settings};
    let dir = target.tree.scenario_dir(&target.key);
    let settings = power_settings(&system.id, &system.hardware, &target.key.system_name, run.plan.workload.power, run.plan.settings.power_limit);
    let mut placements = vec![Placement { dest: dir.join(POWER_SETTINGS), content: Content::Text(settings) }];
    // The session passed the power rules (power_files), so its server.json reads.
    placements.extend(analyzer_table(session).ok().map(|table| Placement { dest: dir.join(ANALYZER_TABLE), content: Content::Text(table) }));
    placements
}

/// The staging target of every selected config, and an error for each config that has none.
fn targets(req: &StageRequest) -> (Vec<(&'static CompiledConfig, Target)>, Vec<String>) {
    let (mut found, mut errors) = (Vec::new(), Vec::new());
    for selected in &req.configs {
        match target(req, selected.config) {
            Ok(t) => found.push((selected.config, t)),
            Err(e) => errors.push(e),
        }
    }
    (found, errors)
}

/// `mlperf stage_results`.
pub fn stage_results(req: &StageRequest) -> Result<StageReport, StageError> {
    let _lock = DirLock::acquire(req.out, "stage_results")?;
    let mlperf_conf = mlperf_loadgen::mlperf_conf(&req.round.loadgen.version).ok_or_else(|| StageError::NoMlperfConf(req.round.loadgen.version.to_string()))?;
    let mut report = StageReport::default();
    let mut placements = Vec::new();
    let (targets, mut errors) = targets(req);
    let staged_benchmarks: Vec<(&str, &str)> = targets.iter().map(|(c, _)| (c.system.as_ref(), c.benchmark.as_ref())).collect();
    for (config, target) in targets {
        let label = target.key.to_string();
        let runs: Vec<Run> = runs_of(req.logs, &target.key, req.round).into_iter().filter(|r| is_run_of(&r.plan, config, req.round)).collect();
        let mut chosen = Vec::new();
        for mode in [RunMode::PerformanceOnly, RunMode::AccuracyOnly] {
            match choose(&runs, mode, &label, &run_command(config, req.round, mode), req) {
                Ok((run, notes)) => {
                    report.warnings.extend(notes);
                    chosen.push(run);
                }
                Err(e) => errors.push(e),
            }
        }
        let [performance, accuracy] = chosen[..] else { continue };
        let mut files = generate::config_files(req.tables, req.round, config, mlperf_conf, &target.tree);
        let system = req.tables.system(&config.system).expect("targets name compiled systems");
        if system.development {
            let benchmarks: Vec<&str> = staged_benchmarks.iter().filter(|(s, _)| *s == config.system.as_ref()).map(|(_, b)| *b).collect();
            let description = target.tree.system_json(&target.key.system_name);
            match development_system_type(req.round, &system.system_type, &benchmarks) {
                Some(system_type) => {
                    let mut value: serde_json::Value = serde_json::from_str(&files[&description]).expect("rendered JSON");
                    value["system_type"] = serde_json::Value::String(system_type.to_string());
                    files.insert(description, mlperf_config::system::canonical_json(&value));
                }
                None => errors.push(format!("{label}: no system type of round {} holds all of {} together; stage them separately", req.round.id, benchmarks.join(", "))),
            }
        }
        let user_conf = target.tree.user_conf(&target.key);
        let ran_with = std::fs::read_to_string(performance.dir.join(USER_CONF)).unwrap_or_default();
        if ran_with != files[&user_conf] {
            if performance.plan.non_submittable.is_empty() {
                errors.push(format!(
                    "{label}: {} differs from the user.conf this binary generates: the config changed after the run; rerun `{}`",
                    performance.dir.join(USER_CONF).display(),
                    run_command(config, req.round, RunMode::PerformanceOnly)
                ));
                continue;
            }
            // A non-submittable run (test run, overrides) ran other settings: stage what it ran.
            files.insert(user_conf, ran_with);
        }
        for run in [performance, accuracy] {
            report.warnings.extend(non_submittable_warning(run));
        }
        if let Some(why @ Unusable::BelowTarget(_)) = accuracy.outcome.unusable() {
            report.warnings.push(format!("STAGING AN ACCURACY RUN BELOW TARGET {} (--allow-below-target): {why}", accuracy.dir.display()));
        }
        placements.extend(files.into_iter().map(|(dest, text)| Placement { dest, content: Content::Text(text) }));
        match power_session(&performance.dir) {
            None => placements.extend(run_files(performance, &target.tree.performance_dir(&target.key), &[SUMMARY_LOG, DETAIL_LOG])),
            Some(session) => match power_files(&session, &target.tree.performance_dir(&target.key), &performance.plan.non_submittable) {
                Ok(files) => {
                    if performance.plan.workload.power != mlperf_config::PowerSetting::MaxQ {
                        report.warnings.push(format!(
                            "{label}: a power result staged under {} (a {} config); power results are named `_MaxQ`: measure the MaxQ config (--power_setting MaxQ)",
                            target.key.system_name,
                            performance.plan.workload.power.name()
                        ));
                    }
                    placements.extend(files);
                    placements.extend(power_documents(&session, system, &target, performance));
                }
                Err(e) => {
                    errors.push(format!("{label}: {e}"));
                    continue;
                }
            },
        }
        if performance.dir.join(ACCURACY_LOG).exists() {
            placements.push(Placement { dest: target.tree.performance_dir(&target.key).join(ACCURACY_LOG), content: Content::Copy(performance.dir.join(ACCURACY_LOG)) });
        }
        placements.extend(run_files(accuracy, &target.tree.accuracy_dir(&target.key), &[SUMMARY_LOG, DETAIL_LOG, ACCURACY_LOG, ACCURACY_TXT]));
        report.staged.push(format!("{label}: performance {} ({}), accuracy {}", performance.dir.display(), metric(&performance.outcome), accuracy.dir.display()));
        let src = target.tree.src_dir();
        if !src.exists() && !placements.iter().any(|p| p.dest.starts_with(&src)) {
            placements.push(Placement { dest: src.join("README.md"), content: Content::Text(src_readme()) });
        }
    }
    if !errors.is_empty() {
        return Err(StageError::Refused(errors));
    }
    report.files = place_all(&placements, req.force, "mlperf stage_results")?;
    Ok(report)
}

/// The system type a development system's staged description names. Its runs are never
/// submittable and it may hold benchmarks of any category (datacenter LLMs on an edge CPU box), so
/// the description names the type whose scenario tables hold every benchmark staged for it: its
/// own when that does, else edge, datacenter, or both; the checkers then read the tree as the
/// round defines that type. None: no type holds them all.
fn development_system_type(round: &Round, described: &str, benchmarks: &[&str]) -> Option<String> {
    let holds_all = |system_type: &str| benchmarks.iter().all(|b| round.benchmark(b).is_some_and(|r| r.scenarios.get(system_type_key(system_type)).is_some()));
    [described, "edge", "datacenter", "datacenter,edge"].into_iter().find(|t| holds_all(t)).map(str::to_string)
}

fn metric(outcome: &Outcome) -> String {
    outcome.metric.as_ref().map_or_else(|| outcome.status.name().to_string(), |(label, value)| format!("{value:.3} {label}"))
}

/// The checker requires the code directory to exist; staging never overwrites one the user filled.
fn src_readme() -> String {
    format!(
        "# Code\n\nThese results were produced by mlperf-rs {} (the `mlperf` binary: LoadGen harness, engines,\naccuracy scripts and submission tools). Put its source tree here before submitting.\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// `non_submittable` reasons recorded in a verified audit's provenance (`<TEST>.json` next to the
/// `<TEST>/` directory), if any.
fn audit_non_submittable(dir: &Path) -> Vec<String> {
    let provenance = dir.with_extension("json");
    std::fs::read_to_string(&provenance)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["non_submittable"].as_array().map(|a| a.iter().filter_map(|r| r.as_str().map(String::from)).collect()))
        .unwrap_or_default()
}

/// `mlperf stage_compliance`.
pub fn stage_compliance(req: &StageRequest) -> Result<StageReport, StageError> {
    let _lock = DirLock::acquire(req.out, "stage_compliance")?;
    let mut report = StageReport::default();
    let mut placements = Vec::new();
    let (targets, mut errors) = targets(req);
    for (config, target) in targets {
        let tests = required_audits(req.round, target.tree.division(), &target.key.bench_dir);
        if tests.is_empty() {
            report.staged.push(format!("{}: no compliance tests needed", target.key));
        }
        for test in tests {
            let dir = req.compliance.join(target.key.rel()).join(test.name());
            let label = format!("{} {test}", target.key);
            if !dir.is_dir() {
                errors.push(format!(
                    "{label}: no verified audit in {}; run `mlperf run_audit_harness {} --round={}`",
                    dir.display(),
                    render::selection_flags(config),
                    req.round.id
                ));
                continue;
            }
            let Some(bench) = req.round.benchmark(&config.benchmark) else {
                errors.push(format!("{label}: round {} has no benchmark {}", req.round.id, config.benchmark));
                continue;
            };
            let problems = crate::check::verify_problems(req.round, bench, &target.key.bench_dir, test, &dir);
            if !problems.is_empty() {
                errors.push(format!("{label}: verification failed: {}; fix the cause and rerun the audit", problems.join("; ")));
                continue;
            }
            let reasons = audit_non_submittable(&dir);
            if !reasons.is_empty() {
                let list: String = reasons.iter().map(|r| format!("\n    - {r}")).collect();
                if !req.allow_non_submittable {
                    errors.push(format!("{label}: the audit in {} ran non-submittable:{list}\n  pass --allow-non-submittable to stage it anyway", dir.display()));
                    continue;
                }
                report.warnings.push(format!("STAGING A NON-SUBMITTABLE AUDIT {} (--allow-non-submittable):{list}", dir.display()));
            }
            placements.extend(copy_tree(&dir, &target.tree.test_dir(&target.key, test)));
            report.staged.push(format!("{label}: {}", dir.display()));
        }
    }
    if !errors.is_empty() {
        return Err(StageError::Refused(errors));
    }
    report.files = place_all(&placements, req.force, "mlperf stage_compliance")?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_power_run_stages_exactly_the_checkers_file_sets_byte_for_byte() {
        let run_dir = crate::power::fixture::tempdir("stage");
        let session = crate::power::fixture::write_session(&run_dir.join(SESSION_IN_RUN_DIR), &crate::power::fixture::Spec::default());
        let reasons = [NonSubmittable::TestRun { min_duration_ms: 60_000 }];
        let out = crate::power::fixture::tempdir("stage-out");
        let run_1 = out.join("performance").join(TESTING_DIR);
        super::super::place_all(&power_files(&session, &run_1, &reasons).unwrap(), false, "test").unwrap();
        assert_eq!(names(&run_1), ["mlperf_log_detail.txt", "mlperf_log_summary.txt", "spl.txt"], "no ptd_out.txt, no provenance");
        assert_eq!(names(&out.join("performance").join(RANGING_DIR)), ["mlperf_log_detail.txt", "mlperf_log_summary.txt", "spl.txt"]);
        assert_eq!(names(&out.join("performance").join(POWER_DIR)), ["client.json", "client.log", "ptd_logs.txt", "server.json", "server.log"]);
        assert_eq!(names(&out.join("performance")), [NON_SUBMITTABLE, "power", "ranging", "run_1"]);
        assert_eq!(std::fs::read_to_string(out.join("performance").join(NON_SUBMITTABLE)).unwrap(), "--test_run: min_duration 60000 ms\n");
        for (from, to) in [
            ("run_1/spl.txt", "performance/run_1/spl.txt"),
            ("power/server.json", "performance/power/server.json"),
            ("ranging/mlperf_log_detail.txt", "performance/ranging/mlperf_log_detail.txt"),
        ] {
            assert_eq!(std::fs::read(session.join(from)).unwrap(), std::fs::read(out.join(to)).unwrap(), "{from}");
        }
        // Staged again: nothing changes; with an edited source, nothing is overwritten without force.
        super::super::place_all(&power_files(&session, &run_1, &reasons).unwrap(), false, "test").unwrap();
        let server = session.join("power/server.json");
        std::fs::write(&server, std::fs::read_to_string(&server).unwrap() + "\n").unwrap();
        assert!(super::super::place_all(&power_files(&session, &run_1, &reasons).unwrap(), false, "test").is_err());
    }

    #[test]
    fn a_power_session_missing_a_file_is_refused_naming_it() {
        let run_dir = crate::power::fixture::tempdir("stage-missing");
        let session = crate::power::fixture::write_session(&run_dir.join(SESSION_IN_RUN_DIR), &crate::power::fixture::Spec::default());
        std::fs::remove_file(session.join("power/server.log")).unwrap();
        let e = power_files(&session, &run_dir.join("out/performance/run_1"), &[]).unwrap_err();
        assert!(e.contains("power/server.log") && e.contains("run_harness_power"), "{e}");
    }

    #[test]
    fn a_power_session_breaking_a_power_rule_is_refused_with_the_finding() {
        let run_dir = crate::power::fixture::tempdir("stage-rules");
        let spec = crate::power::fixture::Spec { testing_watts: 90.0, ..crate::power::fixture::Spec::default() };
        let session = crate::power::fixture::write_session(&run_dir.join(SESSION_IN_RUN_DIR), &spec);
        let e = power_files(&session, &run_dir.join("out/performance/run_1"), &[]).unwrap_err();
        assert!(e.contains("RangingRatio") && e.contains("run_1/spl.txt"), "{e}");
    }

    /// The stand-in's mark in a session (generated, and the one recorded through power-dev) makes
    /// its run non-submittable when staging reads it, marked in the run or not, and the staged
    /// marker says why.
    #[test]
    fn a_stand_in_session_makes_its_run_non_submittable_when_staged() {
        use crate::power::fixture::{Spec, copy_recorded, run_dir_of, tempdir, write_session};
        let round: Round = toml::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rounds/v6.1.toml")).unwrap()).unwrap();
        let key = ResultKey::new("CPU-dev_TRT", "resnet50", mlperf_config::Scenario::Offline);
        let generated = |standin: bool| move |to: &Path| drop(write_session(to, &Spec { standin, ..Spec::default() }));
        type Writer<'w> = &'w dyn Fn(&Path);
        let cases: [(&str, Writer, Option<&str>); 3] = [
            ("meter", &generated(false), None),
            ("standin", &generated(true), Some("YokogawaWT310,STANDIN0000,version=1.11.1-standin-20261128,not a meter")),
            ("recorded", &copy_recorded, Some("YokogawaWT310,STANDIN0000,version=1.11.1-standin-20261128,not a meter")),
        ];
        for (name, write, identify) in cases {
            let logs = tempdir(&format!("stage-mark-{name}"));
            let session = tempdir(&format!("stage-mark-{name}-session"));
            write(&session);
            let run_dir = run_dir_of(&logs, &session, Vec::new());
            write(&run_dir.join(SESSION_IN_RUN_DIR));
            let runs = runs_of(&logs, &key, &round);
            assert_eq!(runs.len(), 1, "{name}");
            let want: Vec<NonSubmittable> = identify.map(|i| NonSubmittable::PowerStandIn { identify: i.into() }).into_iter().collect();
            assert_eq!(runs[0].plan.non_submittable, want, "{name}");
            let out = tempdir(&format!("stage-mark-{name}-out"));
            let placed = power_files(&run_dir.join(SESSION_IN_RUN_DIR), &out.join("performance/run_1"), &runs[0].plan.non_submittable).unwrap();
            super::super::place_all(&placed, false, "test").unwrap();
            let marker = std::fs::read_to_string(out.join("performance").join(NON_SUBMITTABLE)).ok();
            assert_eq!(marker.is_some(), identify.is_some(), "{name}");
            assert!(marker.is_none_or(|m| m.starts_with("power measured by the PTDaemon stand-in, not a meter (Identify: \"YokogawaWT310,STANDIN0000,")), "{name}");
        }
    }

    #[test]
    fn a_development_systems_description_names_the_type_that_holds_what_is_staged() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rounds/v6.1.toml")).unwrap();
        let round: Round = toml::from_str(&text).unwrap();
        assert_eq!(development_system_type(&round, "edge", &["resnet50"]).as_deref(), Some("edge"), "its own type when it holds them");
        assert_eq!(development_system_type(&round, "edge", &["llama2-70b"]).as_deref(), Some("datacenter"));
        assert_eq!(development_system_type(&round, "edge", &["resnet50", "llama2-70b"]).as_deref(), Some("datacenter,edge"));
        assert_eq!(development_system_type(&round, "edge", &["no-such-benchmark"]), None);
    }
}
