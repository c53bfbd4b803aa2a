//! Generated submission files: the committed measurements/ tree is exactly what the compiled tables
//! produce, generation is idempotent, representative files are snapshot-tested, the user.conf values
//! equal NVIDIA's published ones, and every system description passes the checker's field rules.

use crate::{repo_root, scratch_dir};
use mlperf_config::loadgen_conf::{ConfFile, EffectiveSettings};
use mlperf_runtime::fsutil::walk_files;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn generate(out: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_mlperf")).args(["generate_conf_files", "--out"]).arg(out).output().expect("mlperf runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn relative_files(root: &Path) -> BTreeSet<PathBuf> {
    walk_files(root).into_iter().map(|p| p.strip_prefix(root).unwrap().to_path_buf()).collect()
}

/// A short, readable description of how two trees differ.
fn tree_diff(expected: &Path, actual: &Path) -> Option<String> {
    let (want, have) = (relative_files(expected), relative_files(actual));
    let mut report = Vec::new();
    for missing in want.difference(&have).take(10) {
        report.push(format!("missing from measurements/: {}", missing.display()));
    }
    for extra in have.difference(&want).take(10) {
        report.push(format!("in measurements/ but no longer generated: {}", extra.display()));
    }
    for common in want.intersection(&have) {
        let (a, b) = (std::fs::read_to_string(expected.join(common)).unwrap(), std::fs::read_to_string(actual.join(common)).unwrap());
        if a != b {
            let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or_else(|| a.lines().count().min(b.lines().count()));
            report.push(format!(
                "{} differs at line {}:\n  generated: {}\n  committed: {}",
                common.display(),
                line + 1,
                a.lines().nth(line).unwrap_or("<end of file>"),
                b.lines().nth(line).unwrap_or("<end of file>")
            ));
            if report.len() > 20 {
                break;
            }
        }
    }
    (!report.is_empty()).then(|| report.join("\n"))
}

#[test]
fn committed_measurements_equal_the_generated_tree() {
    let out = scratch_dir("generated-tree");
    generate(&out);
    if let Some(diff) = tree_diff(&out, &repo_root().join("measurements")) {
        panic!("measurements/ is out of date with the configs:\n{diff}\n\nRegenerate with `cargo run --release -- generate_conf_files --prune` and commit the diff.");
    }
}

#[test]
fn a_second_run_changes_nothing() {
    let out = scratch_dir("generated-twice");
    let first = generate(&out);
    assert!(!first.contains(": 0 files written"), "{first}");
    let second = generate(&out);
    assert!(second.contains(": 0 files written"), "{second}");
}

#[test]
fn representative_files_per_system() {
    let out = scratch_dir("generated-snapshots");
    generate(&out);
    let results = out.join("v6.1/results");
    let mut systems: Vec<PathBuf> = std::fs::read_dir(&results).unwrap().map(|e| e.unwrap().path()).collect();
    systems.sort();
    assert!(systems.len() >= 8, "every shipped system has v6.1 results: {systems:?}");
    for system in systems {
        // The first benchmark/scenario of each system (alphabetical) stands for the rest.
        let scenario_dir = walk_files(&system).into_iter().find(|p| p.ends_with("user.conf")).unwrap().parent().unwrap().to_path_buf();
        let rel = scenario_dir.strip_prefix(&out).unwrap().display().to_string();
        for file in ["user.conf", "measurements.json", "README.md"] {
            let text = std::fs::read_to_string(scenario_dir.join(file)).unwrap();
            insta::assert_snapshot!(format!("{}__{file}", rel.replace('/', "__")), text);
        }
    }
    let v5 = walk_files(&out.join("v5.1/measurements"));
    let adoc = v5.iter().find(|p| p.ends_with("calibration_process.adoc")).expect("v5.1 layout has calibration docs");
    assert!(std::fs::read_to_string(adoc).unwrap().starts_with("= Calibration"));
    assert!(v5.iter().any(|p| p.file_name().unwrap().to_str().unwrap().ends_with("_Offline.json")), "v5.1 names the measurements file <system>_<Scenario>.json");
}

/// NVIDIA's published target_qps / target_latency for the same system, benchmark and scenario.
/// (results dir, LoadGen model, scenario, key, expected value, source)
const PUBLISHED: &[(&str, &str, &str, &str, f64, &str)] = &[
    (
        "DGX-H100_H100-SXM-80GBx8_RS/resnet/Offline",
        "resnet50",
        "Offline",
        "target_qps",
        720000.0,
        "inference_results_v4.0 closed/NVIDIA/results/DGX-H100_H100-SXM-80GBx8_TRT/resnet50/Offline/performance/run_1/mlperf_log_summary.txt (target_qps 720000)",
    ),
    (
        "DGX-H100_H100-SXM-80GBx8_RS/resnet/Server",
        "resnet50",
        "Server",
        "target_qps",
        584000.0,
        "inference_results_v4.0 closed/NVIDIA/results/DGX-H100_H100-SXM-80GBx8_TRT/resnet50/Server/performance/run_1/mlperf_log_summary.txt (target 584000)",
    ),
    ("DGX-H100_H100-SXM-80GBx8_RS/resnet/Server", "resnet50", "Server", "target_latency", 15.0, "same summary: target latency 15 ms"),
    (
        "H200-SXM-141GBx8_RS/resnet/Server",
        "resnet50",
        "Server",
        "target_qps",
        632000.0,
        "inference_results_v4.1 closed/NVIDIA/measurements/H200-SXM-141GBx8_TRT/resnet50/Server/user.conf (*.Server.target_qps = 632000)",
    ),
    (
        "H200-SXM-141GBx8_RS/resnet/Offline",
        "resnet50",
        "Offline",
        "target_qps",
        750000.0,
        "inference_results_v5.0 configs/resnet50/Offline/__init__.py: H200-SXM-141GBx8 offline_expected_qps = 750000",
    ),
    (
        "DGX-H100_H100-SXM-80GBx8_RS/bert-99/Offline",
        "bert",
        "Offline",
        "target_qps",
        75200.0,
        "xxd-mlpinf configs/DGX-H100_H100-SXM-80GBx8/Offline/bert.py: offline_expected_qps 75200 (= 9400 x 8, consistent with the v4.0 summary)",
    ),
];

#[test]
fn user_conf_values_equal_nvidia_published_ones() {
    let out = scratch_dir("generated-published");
    generate(&out);
    for (dir, model, scenario, key, expected, source) in PUBLISHED {
        let scenario_dir = out.join("v6.1/results").join(dir);
        let user = ConfFile::parse(&std::fs::read_to_string(scenario_dir.join("user.conf")).unwrap_or_else(|_| panic!("{dir}/user.conf ({source})"))).unwrap();
        let mlperf = ConfFile::parse(&std::fs::read_to_string(scenario_dir.join("mlperf.conf")).unwrap()).unwrap();
        let effective = EffectiveSettings::from_files(&mlperf, &user, model, scenario);
        let got = match (*scenario, *key) {
            ("Offline", "target_qps") => effective.offline_expected_qps,
            ("Server", "target_qps") => effective.server_target_qps,
            ("Server", "target_latency") => effective.server_target_latency_ns as f64 / 1e6,
            other => unreachable!("{other:?}"),
        };
        assert_eq!(got, *expected, "{dir} {key}: expected NVIDIA's value from {source}");
    }
}

#[test]
fn generated_system_descriptions_pass_the_checker_field_rules() {
    use mlperf_config::system::{MEANINGFUL_FIELDS, REQUIRED_FIELDS, STATUSES, SYSTEM_TYPES};
    let out = scratch_dir("generated-systems");
    generate(&out);
    let rounds = crate::shipped_rounds();
    let development: Vec<String> = walk_files(&repo_root().join("systems"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter_map(|p| {
            let identity: toml::Table = std::fs::read_to_string(&p).unwrap().parse().unwrap();
            (identity.get("development").and_then(|v| v.as_bool()) == Some(true)).then(|| identity["id"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(development, ["CPU-dev"]);
    for round in &rounds {
        for path in walk_files(&out.join(round.id.as_ref()).join("systems")) {
            let desc: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let name = path.file_stem().unwrap().to_str().unwrap();
            for key in REQUIRED_FIELDS {
                assert!(desc.contains_key(*key), "{name}: missing {key}");
            }
            for key in MEANINGFUL_FIELDS {
                let v = &desc[*key];
                assert!(!(v.is_null() || v.as_str() == Some("") || v.as_u64() == Some(0)), "{name}: empty {key}");
            }
            assert!(STATUSES.contains(&desc["status"].as_str().unwrap().to_lowercase().as_str()), "{name}: status");
            let system_type = desc["system_type"].as_str().unwrap();
            assert!(SYSTEM_TYPES.contains(&system_type), "{name}: system_type");
            // Every benchmark this system has results for must be in the checker's scenario table for
            // its system type (otherwise the checker crashes). Development systems are exempt: they
            // hold every benchmark of a round whatever their type (`development = true`), their runs
            // are never submittable, and staging takes only the runs selected, never the whole tree.
            if development.iter().any(|id| name.strip_prefix(id.as_str()).is_some_and(|rest| rest.starts_with("_RS"))) {
                continue;
            }
            let results_dir = match round.layout {
                mlperf_config::round::Layout::V6 => "results",
                mlperf_config::round::Layout::V5 => "measurements",
            };
            for bench_dir in std::fs::read_dir(out.join(round.id.as_ref()).join(results_dir).join(name)).unwrap() {
                let bench_dir = bench_dir.unwrap().file_name().into_string().unwrap();
                let bench = round
                    .benchmarks
                    .0
                    .iter()
                    .find(|(_, b)| b.checker_models.0.iter().any(|(_, m)| *m == bench_dir))
                    .unwrap_or_else(|| panic!("{bench_dir} is a {} checker model", round.id));
                let key = mlperf_config::round::system_type_key(system_type);
                assert!(bench.1.scenarios.get(key).is_some(), "{name}: {bench_dir} has no scenarios for `{system_type}` in {}", round.id);
            }
        }
    }
    assert_eq!(rounds.len(), 2);
}
