//! Integration tests of the configuration compiler (one test binary: builds are slow on 2 cores).

mod cargo_build;
mod docs;
mod errors;
mod generated;
mod resolve;
mod roundtrip;
mod shipped;

use std::path::{Path, PathBuf};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display())) {
        let entry = entry.expect("readable dir entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).expect("create dir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// A fresh scratch directory under the target dir (kept for inspection after a failure).
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = repo_root().join("target").join("test-scratch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The shipped round tables, parsed directly.
pub fn shipped_rounds() -> Vec<mlperf_config::Round> {
    let mut rounds: Vec<mlperf_config::Round> = mlperf_runtime::fsutil::walk_files(&repo_root().join("rounds"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| toml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    rounds.sort_by(|a, b| b.id.cmp(&a.id));
    rounds
}
