//! `mlperf check_submission` through the binary on the committed good fixture (a tree the official
//! checker accepts) and a broken copy of it.

use super::{mlperf, scratch};
use mlperf_runtime::fsutil::walk_files;
use std::path::Path;

const GOOD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/submission/good");

fn copy_fixture(to: &Path) {
    for file in walk_files(Path::new(GOOD)) {
        let target = to.join(file.strip_prefix(GOOD).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&file, &target).unwrap();
    }
}

#[test]
fn check_submission_passes_the_good_tree_and_names_what_breaks_another() {
    let cwd = scratch("check_submission");
    copy_fixture(&cwd.join("build/submission"));
    let out = mlperf(&cwd, &["check_submission"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("3 result(s), 3 passing; 0 error(s), 0 warning(s)"), "{text}");

    std::fs::remove_dir_all(cwd.join("build/submission/closed/Example/results/CPU-dev_RS/resnet/Offline/TEST04")).unwrap();
    let out = mlperf(&cwd, &["check_submission", "--input", "build/submission", "--round", "v6.1", "--submitter", "example"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("error[compliance-files] closed/Example/results/CPU-dev_RS/resnet/Offline/TEST04: missing TEST04"), "{text}");
    assert!(text.contains("fix: run `mlperf run_audit_harness`"), "{text}");

    let out = mlperf(&cwd, &["check_submission", "--inference-repo", "build"]);
    let errors = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success() && errors.contains("no tools/submission/submission_checker/main.py there"), "{errors}");
    assert!(!cwd.join("build/checker_log.txt").exists());
}
