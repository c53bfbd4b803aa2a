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

/// Issue 37: a link to `/` in a result, a summary linked to /etc/passwd, a link loop, names with a
/// newline or a leading `-`, and a latency changed in the detail log alone are all errors; the
/// check ends at once and reads nothing through a link; the export refuses the same tree and writes
/// nothing, and neither changes the staged tree.
#[test]
fn links_unsafe_names_and_a_faked_detail_log_fail_the_check_and_the_export() {
    let cwd = scratch("check_hostile");
    let root = cwd.join("build/submission");
    copy_fixture(&root);
    let results = root.join("closed/Example/results/CPU-dev_RS/resnet");
    std::os::unix::fs::symlink("/", results.join("SingleStream/root")).unwrap();
    let summary = results.join("Offline/performance/run_1/mlperf_log_summary.txt");
    std::fs::remove_file(&summary).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &summary).unwrap();
    std::os::unix::fs::symlink(&results, results.join("MultiStream/loop")).unwrap();
    std::fs::write(results.join("MultiStream/-rf"), "").unwrap();
    std::fs::write(results.join("MultiStream/new\nline"), "").unwrap();
    let detail = results.join("MultiStream/performance/run_1/mlperf_log_detail.txt");
    let text = std::fs::read_to_string(&detail).unwrap();
    let faked = text
        .replace("\"key\": \"result_99.00_percentile_per_query_latency_ns\", \"value\": 57914147", "\"key\": \"result_99.00_percentile_per_query_latency_ns\", \"value\": 7914147");
    assert_ne!(faked, text);
    std::fs::write(&detail, faked).unwrap();
    let before = tree(&root);

    let started = std::time::Instant::now();
    let out = mlperf(&cwd, &["check_submission"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "took {:?}", started.elapsed());
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(mlperf_runtime::error::exit::CHECK_FAILED), "{text}");
    for expected in [
        "error[link] closed/Example/results/CPU-dev_RS/resnet/SingleStream/root: symbolic link to /",
        "error[link] closed/Example/results/CPU-dev_RS/resnet/Offline/performance/run_1/mlperf_log_summary.txt: symbolic link to /etc/passwd",
        "error[link] closed/Example/results/CPU-dev_RS/resnet/MultiStream/loop: symbolic link to",
        "error[file-name] closed/Example/results/CPU-dev_RS/resnet/MultiStream/-rf: \"-rf\": file name starts with `-`",
        "\"new\\nline\": file name holds a control character",
        "3 result(s), 0 passing",
    ] {
        assert!(text.contains(expected), "{expected:?} not in:\n{text}");
    }
    assert!(!text.contains("root:x:0"), "nothing is read through a link: {text}");

    let out = mlperf(&cwd, &["export_submission"]);
    let errors = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(mlperf_runtime::error::exit::CHECK_FAILED), "{errors}");
    assert!(errors.contains("5 entries a submission may not hold; nothing was exported") && errors.contains("SingleStream/root\": symbolic link to /"), "{errors}");
    assert!(!cwd.join("build/export").exists());
    assert_eq!(tree(&root), before, "the staged tree is unchanged");

    // With the links and names gone, the faked latency is still found: the summary disagrees.
    for link in ["SingleStream/root", "MultiStream/loop", "MultiStream/-rf", "MultiStream/new\nline"] {
        std::fs::remove_file(results.join(link)).unwrap();
    }
    std::fs::remove_file(&summary).unwrap();
    std::fs::copy(Path::new(GOOD).join("closed/Example/results/CPU-dev_RS/resnet/Offline/performance/run_1/mlperf_log_summary.txt"), &summary).unwrap();
    let out = mlperf(&cwd, &["check_submission"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(mlperf_runtime::error::exit::CHECK_FAILED), "{text}");
    assert!(text.contains("error[summary-detail] closed/Example/results/CPU-dev_RS/resnet/MultiStream/performance/run_1/mlperf_log_summary.txt (result_99.00_percentile_per_query_latency_ns): states `99.00 percentile latency (ns) : 57914147`, but the detail log's result_99.00_percentile_per_query_latency_ns is 7914147"), "{text}");
    assert!(text.contains("3 result(s), 2 passing; 1 error(s)"), "{text}");
}

/// Every entry below `root` with its link target or bytes, links not followed.
fn tree(root: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let t = entry.file_type().unwrap();
            let bytes = if t.is_symlink() {
                std::fs::read_link(entry.path()).unwrap().into_os_string().into_encoded_bytes()
            } else if t.is_dir() {
                dirs.push(entry.path());
                continue;
            } else {
                std::fs::read(entry.path()).unwrap()
            };
            out.push((entry.path(), bytes));
        }
    }
    out.sort();
    out
}
