//! What we generate means what the config says: render user.conf from arbitrary settings, parse it
//! with LoadGen's semantics on top of the round's mlperf.conf, and compare the effective settings.

use mlperf_config::loadgen_conf::{ConfFile, EffectiveSettings};
use mlperf_config::render::{ConfPurpose, TestRunLimits, user_conf};
use mlperf_config::{CompiledConfig, Origin, Scenario, Settings, Workload};
use proptest::prelude::*;
use std::borrow::Cow;

fn config(scenario: Scenario, settings: Settings) -> CompiledConfig {
    CompiledConfig {
        system: Cow::Borrowed("SYS"),
        benchmark: Cow::Borrowed("resnet50"),
        scenario,
        workload: Workload::default(),
        rounds: Cow::Borrowed(&[]),
        settings,
        provenance: Cow::Borrowed(&[]),
        defined_at: Origin { file: Cow::Borrowed("x"), line: 1, col: 1 },
    }
}

fn settings() -> impl Strategy<Value = (Scenario, Settings)> {
    (
        prop::sample::select(vec![Scenario::Offline, Scenario::Server, Scenario::SingleStream, Scenario::MultiStream]),
        1e-3f64..1e7,
        prop::option::of(0.5f64..1.5),
        1u64..100,            // latency in ms (Server needs whole ms)
        1u64..10_000_000_000, // SS/MS latency in ns
        prop::option::of(1024u64..1_000_000),
        prop::option::of(600_000u64..10_000_000),
    )
        .prop_map(|(scenario, qps, factor, latency_ms, latency_ns, psc, min_duration)| {
            let s = Settings {
                offline_expected_qps: Some(qps),
                server_target_qps: Some(qps),
                server_target_qps_adj_factor: factor,
                server_target_latency_ns: Some(latency_ms * 1_000_000),
                single_stream_expected_latency_ns: Some(latency_ns),
                multi_stream_expected_latency_ns: Some(latency_ns),
                performance_sample_count_override: psc,
                min_duration,
                ..Settings::default()
            };
            (scenario, s)
        })
}

proptest! {
    #[test]
    fn render_then_parse_gives_the_configured_settings((scenario, s) in settings()) {
        let rounds = crate::shipped_rounds();
        let round = &rounds[0];
        let bench = round.benchmark("resnet50").unwrap();
        let mlperf = ConfFile::parse(mlperf_loadgen::mlperf_conf(&round.loadgen.version).unwrap()).unwrap();
        let text = user_conf(&config(scenario, s.clone()), round, bench, ConfPurpose::Submission);
        let user = ConfFile::parse(&text).map_err(|e| TestCaseError::fail(format!("{e:?}\n{text}")))?;
        let e = EffectiveSettings::from_files(&mlperf, &user, "resnet50", scenario.name());
        match scenario {
            Scenario::Offline => prop_assert_eq!(e.offline_expected_qps, s.offline_expected_qps.unwrap()),
            Scenario::Server => {
                prop_assert_eq!(e.server_target_qps, s.server_target_qps.unwrap() * s.server_target_qps_adj_factor.unwrap_or(1.0));
                prop_assert_eq!(e.server_target_latency_ns, s.server_target_latency_ns.unwrap());
            }
            Scenario::SingleStream => {
                let want = s.single_stream_expected_latency_ns.unwrap() as f64;
                prop_assert!((e.single_stream_expected_latency_ns - want).abs() <= want * 1e-12, "{} vs {want}", e.single_stream_expected_latency_ns);
            }
            Scenario::MultiStream => {
                let want = s.multi_stream_expected_latency_ns.unwrap() as f64;
                prop_assert!((e.multi_stream_expected_latency_ns - want).abs() <= want * 1e-12);
            }
            Scenario::Interactive => unreachable!(),
        }
        // Values not in the config keep the round's mlperf.conf values; the seeds are the round's.
        prop_assert_eq!(e.performance_sample_count_override, s.performance_sample_count_override.unwrap_or(bench.performance_sample_count));
        prop_assert_eq!(e.min_duration_ms, s.min_duration.unwrap_or(round.min_duration_ms));
        prop_assert_eq!((e.qsl_rng_seed, e.sample_index_rng_seed, e.schedule_rng_seed), (round.seeds.qsl, round.seeds.sample_index, round.seeds.schedule));
    }
}

#[test]
fn test_run_files_shorten_the_run() {
    let rounds = crate::shipped_rounds();
    let round = &rounds[0];
    let bench = round.benchmark("resnet50").unwrap();
    let s = Settings { offline_expected_qps: Some(100.0), ..Settings::default() };
    let text = user_conf(&config(Scenario::Offline, s.clone()), round, bench, ConfPurpose::TestRun(TestRunLimits::default()));
    let e = EffectiveSettings::from_files(&ConfFile::default(), &ConfFile::parse(&text).unwrap(), "resnet50", "Offline");
    assert_eq!((e.min_duration_ms, e.min_query_count), (60_000, 1));
    assert!(text.contains("not submittable"));
    // An explicit flag beats --test_run's defaults, and user.conf says where the value came from.
    let explicit = TestRunLimits { min_duration_ms: Some(5000), min_query_count: Some(64) };
    let text = user_conf(&config(Scenario::Offline, s), round, bench, ConfPurpose::TestRun(explicit));
    let e = EffectiveSettings::from_files(&ConfFile::default(), &ConfFile::parse(&text).unwrap(), "resnet50", "Offline");
    assert_eq!((e.min_duration_ms, e.min_query_count), (5000, 64));
    assert!(text.contains("# --min_duration (command line, over --test_run)\nresnet50.Offline.min_duration = 5000"), "{text}");
}
