//! Every build-time rule has a broken fixture under tests/fixtures/broken/<code>-<what>/: an overlay
//! on tests/fixtures/base. Each must fail (or warn) with its code, rendered like rustc; the rendering
//! is snapshot-tested.

use crate::{copy_tree, repo_root, scratch_dir};
use mlperf_config::compile::{CompileOptions, compile};
use std::path::{Path, PathBuf};

const FIXTURE_FEATURES: [&str; 2] = ["system-testbox1", "system-testbox8"];

/// Builds a project root: the shipped rounds, the fixture base, then the overlay.
fn assemble(overlay: Option<&Path>, name: &str) -> (PathBuf, Vec<String>) {
    let root = scratch_dir(&format!("fixture-{name}"));
    std::fs::create_dir_all(root.join("rounds")).unwrap();
    copy_tree(&repo_root().join("rounds"), &root.join("rounds"));
    copy_tree(&repo_root().join("tests/fixtures/base"), &root);
    let mut enabled = Vec::new();
    if let Some(overlay) = overlay {
        copy_tree(overlay, &root);
        if let Ok(text) = std::fs::read_to_string(overlay.join("features")) {
            enabled = text.lines().map(str::to_string).collect();
        }
    }
    (root, enabled)
}

fn options(root: PathBuf, enabled: Vec<String>) -> CompileOptions {
    CompileOptions { root, declared_features: FIXTURE_FEATURES.map(String::from).to_vec(), enabled_features: enabled, rounds: None }
}

#[test]
fn fixture_base_is_valid() {
    let (root, enabled) = assemble(None, "base");
    let compiled = compile(&options(root, enabled)).unwrap_or_else(|f| panic!("{}", f.render()));
    assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
    assert_eq!(compiled.systems.len(), 2);
    // x8 MaxQ extends the x1 MaxQ and then its own default: last writer wins, provenance says so.
    let maxq = compiled.configs.iter().find(|c| c.system == "TESTBOX-H100x8" && c.workload.section_name() == "maxq").expect("x8 maxq config");
    assert_eq!(maxq.settings.offline_expected_qps, Some(480000.0));
    assert_eq!(maxq.settings.power_limit, Some(300));
    assert_eq!(maxq.settings.batch_size("resnet50"), Some(2048));
    let qps = maxq.origin_of("offline_expected_qps").unwrap();
    assert_eq!(qps.at.file, "configs/resnet50/TESTBOX-H100x8/Offline.toml");
    let overridden: Vec<&str> = qps.overrode.iter().map(|o| o.value.as_ref()).collect();
    // Precedence (C3): x8#maxq, x1#maxq, x8#default, x1#default, ... so, newest first:
    assert_eq!(overridden, ["60000", "720000", "90000"]);
}

#[test]
fn every_rule_has_a_rendered_error() {
    let dir = repo_root().join("tests/fixtures/broken");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    fixtures.sort();
    assert!(fixtures.len() >= 30, "one fixture per rule");
    for fixture in fixtures {
        let name = fixture.file_name().unwrap().to_str().unwrap().to_string();
        let code = name.split('-').next().unwrap();
        let (root, enabled) = assemble(Some(&fixture), &name);
        let rendered = match compile(&options(root, enabled)) {
            Err(failure) => failure.render(),
            Ok(compiled) => {
                assert!(code.starts_with('W'), "{name}: compiled without error");
                compiled.warnings.iter().map(|w| w.render(&compiled.sources)).collect()
            }
        };
        let kind = if code.starts_with('W') { "warning" } else { "error" };
        assert!(rendered.contains(&format!("{kind}[{code}]")), "{name} did not report {code}:\n{rendered}");
        insta::assert_snapshot!(name, rendered);
    }
}
