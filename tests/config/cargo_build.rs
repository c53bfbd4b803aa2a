//! A real `cargo build` of a copy of this project with one typo in a config: the rustc-style
//! diagnostic must reach the user through cargo, and the build must fail.

use crate::{repo_root, scratch_dir};
use std::path::Path;
use std::process::Command;

fn copy_project(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if [".git", "target", "build"].contains(&name.to_str().unwrap_or("")) {
            continue;
        }
        let target = to.join(&name);
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_project(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn cargo_build_reports_a_config_typo() {
    let copy = scratch_dir("cargo-build-typo");
    copy_project(&repo_root(), &copy);
    let defaults = copy.join("configs/resnet50/defaults.toml");
    let mut text = std::fs::read_to_string(&defaults).expect("shipped resnet50 defaults");
    text.push_str("\n[typo_demo]\nprecison = \"int8\"\n");
    std::fs::write(&defaults, text).unwrap();
    let line = std::fs::read_to_string(&defaults).unwrap().lines().count();

    let output = nested_build(&copy).output().expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the build must fail:\n{stderr}");
    assert!(stderr.contains("error[C0102]: unknown key `precison`"), "{stderr}");
    assert!(stderr.contains(&format!("--> configs/resnet50/defaults.toml:{line}:1")), "{stderr}");
    assert!(stderr.contains("help: did you mean `precision`?"), "{stderr}");
}

/// `cargo build` of the project at `root`, as lean as a build can be: these binaries only parse
/// arguments and refuse, so nothing is optimised and no debug info is written (on a two-core CI
/// machine this build of every dependency is the config tests' longest part). A target dir of its
/// own: the test's own cargo holds the workspace's lock.
fn nested_build(root: &Path) -> Command {
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "--offline", "--quiet"])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", repo_root().join("target/cargo-build-test"))
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_PROFILE_DEV_OPT_LEVEL", "0")
        .env("CARGO_INCREMENTAL", "0");
    build
}

/// Where the test's own build left LoadGen's source packages, so the nested builds need no download.
fn loadgen_sdists() -> Option<std::path::PathBuf> {
    let builds = repo_root().join("target/release/build");
    std::fs::read_dir(builds)
        .ok()?
        .flatten()
        .map(|e| e.path().join("out/sdist"))
        .find(|d| d.join("mlcommons_loadgen-6.0.17.tar.gz").is_file() && d.join("mlcommons_loadgen-5.1.2.tar.gz").is_file())
}

/// Locked builds of the project itself: one locked to a GPU system refuses this machine (which has
/// no such GPU), one locked to the CPU-only system runs here but refuses command-line overrides.
/// Neither touches a model, data or log directory.
#[test]
fn locked_builds_refuse_other_hardware_and_overrides() {
    let run = |feature: &str, args: &[&str]| {
        let mut build = nested_build(&repo_root());
        build.args(["--bin", "mlperf", "--features", feature]);
        if let Some(dir) = loadgen_sdists() {
            build.env("MLPERF_LOADGEN_SDIST_DIR", dir);
        }
        let built = build.output().expect("cargo runs");
        assert!(built.status.success(), "{feature}: {}", String::from_utf8_lossy(&built.stderr));
        let cwd = scratch_dir(&format!("locked-{feature}"));
        let out =
            Command::new(repo_root().join("target/cargo-build-test/debug/mlperf")).args(args).current_dir(&cwd).env("MLPERF_SCRATCH_PATH", cwd.join("scratch")).output().unwrap();
        assert!(!cwd.join("build").exists() && !cwd.join("scratch").exists(), "{feature}: nothing touched");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let job = ["run_harness", "--benchmarks=resnet50", "--scenarios=offline", "--backend=null", "--test_run"];
    let (ok, stderr) = run("system-h200x1", &job);
    assert!(!ok && stderr.contains("this binary is locked to H200-SXM-141GBx1, but this machine does not match it"), "{stderr}");
    let (ok, stderr) = run("system-h200x1", &[&job[..], &["--system_name=CPU-dev"]].concat());
    assert!(!ok && stderr.contains("it cannot run as CPU-dev"), "{stderr}");
    let (ok, stderr) = run("system-cpu", &[&job[..], &["--offline_expected_qps=1"]].concat());
    assert!(!ok && stderr.contains("--offline_expected_qps=1: command-line config overrides are refused by locked builds (this one is locked to CPU-dev)"), "{stderr}");
}
