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

/// Every LLM of every shipped round carries the reference SUT's output-length limit (rounds/*.toml
/// cite the reference file of each value).
#[test]
fn every_round_llm_has_its_reference_output_limit() {
    use mlperf_config::benchmark;
    let expected = [
        ("llama2-70b", 1024),
        ("mixtral-8x7b", 1024),
        ("llama3.1-405b", 2000),
        ("llama3.1-8b", 128),
        ("llama3.1-8b-edge", 128),
        ("deepseek-r1", 20000),
        ("gpt-oss-120b", 10240),
        ("whisper", 200),
        ("qwen3-vl-235b-a22b", 150),
    ];
    let mut seen = 0;
    for round in crate::shipped_rounds() {
        for (id, br) in round.benchmarks.0.iter() {
            let Some(info) = benchmark::find(id) else { continue };
            if !benchmark::applies(&["llm"], info) {
                assert_eq!(br.max_output_tokens, None, "{} {id} is not an LLM", round.id);
                continue;
            }
            let want = expected.iter().find(|(b, _)| b == id).unwrap_or_else(|| panic!("{} {id}: add its expected limit here", round.id)).1;
            assert_eq!(br.max_output_tokens, Some(want), "{} {id}", round.id);
            assert_eq!(br.max_output_tokens_for(false), Some(want));
            seen += 1;
        }
    }
    assert!(seen >= 11, "v5.1 has six LLMs, v6.1 five: {seen}");
    let v61 = crate::shipped_rounds().into_iter().find(|r| r.id == "v6.1").unwrap();
    let gpt = v61.benchmark("gpt-oss-120b").expect("v6.1 has gpt-oss-120b");
    assert_eq!((gpt.max_output_tokens_for(false), gpt.max_output_tokens_for(true)), (Some(10240), Some(32768)), "gpt-oss-120b: performance vs accuracy limits");
    let edge = v61.benchmark("llama3.1-8b-edge").expect("v6.1 has llama3.1-8b-edge");
    assert_eq!(edge.max_output_tokens_for(true), Some(128));
}

/// The shipped LLM configs name their serving engine: an engine `mlperf` starts fills one node exactly
/// (serving_instances x DP x TP x PP = GPUs per node, NVIDIA's one instance per TP x PP group), external
/// endpoints name their API, and the development system runs the stand-in.
#[test]
fn shipped_llm_configs_name_their_serving_engine() {
    use mlperf_config::{EngineKind, ServingEngine, benchmark};
    let all = compile(&CompileOptions { root: repo_root(), declared_features: declared(), enabled_features: vec![], rounds: None }).unwrap_or_else(|f| panic!("{}", f.render()));
    let mut llm_configs = 0;
    for config in &all.configs {
        let info = benchmark::find(&config.benchmark).unwrap();
        if !benchmark::applies(&["llm"], info) {
            continue;
        }
        llm_configs += 1;
        let s = &config.settings;
        let what = format!("{}/{}/{} [{}]", config.system, config.benchmark, config.scenario, config.workload.section_name());
        assert_eq!(s.engine, Some(EngineKind::Serving), "{what}");
        let system = all.systems.iter().find(|sys| sys.id == config.system).unwrap();
        match s.serving_engine.unwrap_or_else(|| panic!("{what}: no serving_engine")) {
            ServingEngine::StandIn => {
                assert!(system.development, "{what}: the stand-in is for development systems");
                assert_eq!(s.llm_server_urls, None, "{what}");
            }
            ServingEngine::External => {
                assert!(s.serving_api.is_some(), "{what}");
                assert!(s.llm_server_urls.as_ref().is_some_and(|u| !u.is_empty()), "{what}");
            }
            engine => {
                assert!(!system.development, "{what}");
                assert_eq!(s.llm_server_urls, None, "{what}: {} is started by mlperf", engine.name());
                let per_instance = s.data_parallelism.unwrap_or(1) * s.tensor_parallelism.unwrap_or(1) * s.pipeline_parallelism.unwrap_or(1);
                assert_eq!(s.serving_instances.unwrap_or(1) * per_instance, system.hardware.gpus_per_node, "{what}: instances x DP x TP x PP");
            }
        }
    }
    assert!(llm_configs >= 90, "{llm_configs}");
}
