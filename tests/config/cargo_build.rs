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

    // A target dir of its own: the test's own cargo holds the workspace's lock.
    let output = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--quiet"])
        .current_dir(&copy)
        .env("CARGO_TARGET_DIR", repo_root().join("target/cargo-build-test"))
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the build must fail:\n{stderr}");
    assert!(stderr.contains("error[C0102]: unknown key `precison`"), "{stderr}");
    assert!(stderr.contains(&format!("--> configs/resnet50/defaults.toml:{line}:1")), "{stderr}");
    assert!(stderr.contains("help: did you mean `precision`?"), "{stderr}");
}
