//! The walk over a submitter tree (loader.py): the layout, the scenario set of each benchmark,
//! and every rule of each result directory, in the checker's order.

use super::common::{Bench, dir_names, require_files};
use super::entries::{Refusal, Refused};
use super::rules::{accuracy, compliance, files, performance, system};
use super::{Findings, Rule, Tree};
use crate::layout;
use crate::layout::{DETAIL_LOG, ResultKey, SUMMARY_LOG};
use mlperf_config::Scenario;
use mlperf_config::round::system_type_key;
use std::path::Path;

/// Checks one submitter tree; returns the result directories it found.
pub(crate) fn check_tree(tree: &Tree, f: &mut Findings) -> Vec<ResultKey> {
    let layout = &tree.layout;
    f.result = None;
    for (dir, what) in [(layout.systems_dir(), "systems/ (one <system>.json per results/<system>)"), (layout.results_dir(), "results/")] {
        if !dir.is_dir() {
            f.error(Rule::Layout, &dir, format!("missing directory {what}"), "stage the submission with `mlperf stage_results`, which writes the round's layout");
        }
    }
    let src = layout.src_dir();
    if !src.is_dir() || dir_names(&src, false).is_empty() {
        f.error(
            Rule::Layout,
            &src,
            format!("missing or empty {} directory: the checker requires the code of the submission there", src.file_name().and_then(|n| n.to_str()).unwrap_or("src")),
            "put the code (or a README.md pointing at the repository and commit) into it",
        );
    }
    let mut results = Vec::new();
    // Refused entries found in a result's directories are reported with that result.
    let mut reported = vec![false; tree.refused.len()];
    for system_name in dir_names(&layout.results_dir(), true) {
        f.result = None;
        let system_type = system::check(tree, &system_name, f);
        let system_dir = layout.results_dir().join(&system_name);
        for bench_dir in dir_names(&system_dir, true) {
            let bench_path = system_dir.join(&bench_dir);
            let Some(round_bench) = tree.round.benchmarks.0.iter().map(|(_, b)| b).find(|b| b.checker_models.0.iter().any(|(_, m)| *m == bench_dir)) else {
                f.error(
                    Rule::Scenarios,
                    &bench_path,
                    format!("`{bench_dir}` is not a benchmark of round {}", tree.round.id),
                    format!("name the directory by the checker model of the round: {}", checker_models(tree)),
                );
                continue;
            };
            let edge = system_type.as_deref().is_some_and(layout::is_edge);
            let bench = Bench { round: round_bench, checker_model: bench_dir.clone(), edge };
            let scenarios = check_scenario_set(tree, &bench, &bench_path, system_type.as_deref(), f);
            for scenario in scenarios {
                let key = ResultKey::new(system_name.clone(), bench_dir.clone(), scenario);
                f.result = Some(key.clone());
                let dirs = [layout.scenario_dir(&key), layout.measurements_dir(&key), layout.compliance_dir(&key)];
                for (r, done) in tree.refused.iter().zip(reported.iter_mut()).filter(|(r, done)| !**done && dirs.iter().any(|d| r.path.starts_with(d))) {
                    refused_finding(r, f);
                    *done = true;
                }
                if dirs.iter().any(|d| tree.unsafe_at(d) || tree.refused.iter().any(|r| r.why.unsafe_to_read() && r.path.starts_with(d))) {
                    f.error(
                        Rule::Link,
                        &layout.scenario_dir(&key),
                        "its other rules were not run: the result holds a link or special file, and no rule reads through one".into(),
                        "replace the links with the files they point to, then check again",
                    );
                } else {
                    check_result(tree, &bench, &key, f);
                }
                results.push(key);
            }
        }
    }
    f.result = None;
    for (r, _) in tree.refused.iter().zip(&reported).filter(|(_, done)| !**done) {
        refused_finding(r, f);
    }
    results
}

/// The finding for an entry the walk refused.
pub(crate) fn refused_finding(r: &Refused, f: &mut Findings) {
    let (rule, message) = match &r.why {
        Refusal::Name { .. } => {
            let name = r.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            (Rule::FileName, format!("{name:?}: {}", r.why))
        }
        other => (Rule::Link, other.to_string()),
    };
    f.error(rule, &r.path, message, r.why.fix());
}

fn checker_models(tree: &Tree) -> String {
    let mut names: Vec<&str> = tree.round.benchmarks.0.iter().flat_map(|(_, b)| b.checker_models.0.iter().map(|(_, m)| m.as_ref())).collect();
    names.sort_unstable();
    names.join(", ")
}

/// The scenario directories of a benchmark against the round's table for the system type
/// (closed and network); returns the scenario directories to check.
fn check_scenario_set(tree: &Tree, bench: &Bench, bench_path: &Path, system_type: Option<&str>, f: &mut Findings) -> Vec<Scenario> {
    let mut found = Vec::new();
    for name in dir_names(bench_path, true) {
        match Scenario::parse(&name).filter(|s| s.name() == name) {
            Some(s) => found.push(s),
            None => f.error(
                Rule::Scenarios,
                &bench_path.join(&name),
                format!("`{name}` is not a scenario directory (the checker treats every directory here as one)"),
                "remove it, or rename it to Offline, Server, SingleStream, MultiStream or Interactive",
            ),
        }
    }
    let (Some(system_type), true) = (system_type, tree.is_closed_like()) else { return found };
    let Some(set) = bench.round.scenarios.get(system_type_key(system_type)) else {
        f.error(
            Rule::Scenarios,
            bench_path,
            format!("round {} has no {} scenarios for {} systems (the official checker crashes on this)", tree.round.id, bench.checker_model, system_type),
            format!("set system_type in systems/<system>.json to one the benchmark allows: {}", allowed_system_types(bench)),
        );
        return found;
    };
    let names = |list: &[std::borrow::Cow<'static, str>]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let (required, optional) = (names(&set.required), names(&set.optional));
    for missing in required.iter().filter(|r| !found.iter().any(|s| s.name() == r.as_str())) {
        f.error(
            Rule::Scenarios,
            &bench_path.join(missing),
            format!("{} on a {system_type} system requires the {missing} scenario", bench.checker_model),
            format!("run and stage {missing} (required for {system_type}: {})", required.join(", ")),
        );
    }
    for s in found.iter().filter(|s| !required.iter().chain(&optional).any(|n| n == s.name())) {
        f.error(
            Rule::Scenarios,
            &bench_path.join(s.name()),
            format!("{} on a {system_type} system does not allow the {} scenario", bench.checker_model, s.name()),
            format!("remove it (allowed: {})", required.iter().chain(&optional).cloned().collect::<Vec<_>>().join(", ")),
        );
    }
    let server_like = ["Server", "Interactive"];
    if optional.iter().any(|o| server_like.contains(&o.as_str())) && !found.iter().any(|s| server_like.contains(&s.name())) {
        f.error(
            Rule::Scenarios,
            bench_path,
            format!("{} on a {system_type} system needs one of Server or Interactive", bench.checker_model),
            "run and stage Server or Interactive",
        );
    }
    found
}

fn allowed_system_types(bench: &Bench) -> String {
    bench.round.scenarios.keys().map(|k| if k == "datacenter_edge" { "datacenter,edge" } else { k }).collect::<Vec<_>>().join(", ")
}

/// Every rule of one result directory.
fn check_result(tree: &Tree, bench: &Bench, key: &ResultKey, f: &mut Findings) {
    let layout = &tree.layout;
    let perf_dir = layout.performance_dir(key);
    require_files(&perf_dir, &[SUMMARY_LOG, DETAIL_LOG], "the performance run's logs (LoadGen PerformanceOnly)", f);
    require_files(&layout.accuracy_dir(key), &files::ACCURACY_FILES, "the accuracy run's logs and accuracy.txt", f);
    for path in [layout.user_conf(key), layout.readme(key)] {
        files::require_non_empty(&path, "generated by `mlperf generate_conf_files` and copied by staging", f);
    }
    files::check_measurements(tree, key, f);
    performance::check(tree, bench, key, &perf_dir.join(DETAIL_LOG), f);
    accuracy::check(tree, bench, key, f);
    compliance::check(tree, bench, key, f);
    files::check_hygiene(tree, key, f);
}
