//! Compiles configs/, systems/ and rounds/ into const tables (OUT_DIR/tables.rs).
//! An invalid configuration fails the build with rustc-style diagnostics naming file, line and key.

use mlperf_config::compile::{CompileOptions, compile};
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml is readable");
    let features: toml::Table = manifest.parse::<toml::Table>().expect("Cargo.toml parses")["features"].as_table().cloned().unwrap_or_default();
    let declared: Vec<String> = features.keys().filter(|f| f.starts_with("system-")).cloned().collect();
    // Cargo exposes enabled features as CARGO_FEATURE_<NAME> with '-' turned into '_'.
    let enabled: Vec<String> = declared.iter().filter(|f| std::env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_"))).is_some()).cloned().collect();
    for dir in ["configs", "systems", "rounds"] {
        println!("cargo::rerun-if-changed={dir}");
    }
    println!("cargo::rerun-if-changed=Cargo.toml");

    let options = CompileOptions { root, declared_features: declared, enabled_features: enabled, rounds: None };
    match compile(&options) {
        Ok(compiled) => {
            for warning in &compiled.warnings {
                for line in warning.render(&compiled.sources).lines() {
                    println!("cargo::warning={line}");
                }
            }
            let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("tables.rs");
            std::fs::write(&out, mlperf_config::emit::emit(&compiled)).expect("OUT_DIR is writable");
        }
        Err(failure) => {
            let report = failure.render();
            eprintln!("{report}");
            for line in report.lines().filter(|l| l.starts_with("error")) {
                println!("cargo::error={line}");
            }
            std::process::exit(1);
        }
    }
}
