//! The shipped configuration compiles, and the locked builds select exactly one system.

use crate::repo_root;
use mlperf_config::compile::{CompileOptions, compile};

fn declared() -> Vec<String> {
    let manifest: toml::Table = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap().parse().unwrap();
    manifest["features"].as_table().unwrap().keys().filter(|k| k.starts_with("system-")).cloned().collect()
}

#[test]
fn shipped_configuration_compiles_for_every_feature() {
    let all = compile(&CompileOptions { root: repo_root(), declared_features: declared(), enabled_features: vec![], rounds: None }).unwrap_or_else(|f| panic!("{}", f.render()));
    assert_eq!(all.rounds[0].id, "v6.1", "the default round comes first");
    assert!(all.systems.len() >= 8);
    for feature in declared() {
        let locked = compile(&CompileOptions { root: repo_root(), declared_features: declared(), enabled_features: vec![feature.clone()], rounds: None })
            .unwrap_or_else(|f| panic!("{feature}: {}", f.render()));
        assert_eq!(locked.systems.len(), 1, "{feature}");
        assert!(locked.configs.iter().all(|c| c.system == locked.systems[0].id));
        assert!(!locked.configs.is_empty(), "{feature} has configs");
    }
}
