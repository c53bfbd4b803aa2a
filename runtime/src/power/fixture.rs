//! A generated power session for the tests (power.md §6, §11): what the power-dev client leaves
//! under OUTDIR/<session>/, with consistent uuids, session names, phases, PTD messages and real
//! SHA-1s, so that each rule can be broken by one edit. Never submittable: its meter is made up.

use super::session::{CLIENT_JSON, PTD_LOGS, RANGING_DIR, SERVER_JSON, SPL, TESTING_DIR};
use super::sources::sha1_hex;
use crate::compliance::testlogs::detail_log;
use crate::layout::{DETAIL_LOG, SUMMARY_LOG};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const CLIENT_UUID: &str = "7d7a5a4e-2a4f-4d43-9d5e-1f0c3c7e8a11";
const SERVER_UUID: &str = "0b9e3c52-6a1d-4f7e-8c2b-5d4e3f2a1b00";
const GO_REPLY: &str = "Starting untimed measurement, maximum 500000 samples at 1000ms with 0 rampup samples";
pub const SESSION: &str = "2026-11-28_19-00-00_resnet50";
/// 11-28-2026 19:00:00.000 UTC in seconds.
const T0: f64 = 1_795_892_400.0;

/// What the generated session measured.
pub struct Spec {
    pub scenario: &'static str,
    pub ranging_watts: f64,
    pub testing_watts: f64,
    /// LoadGen's window of each mode: 60 s, ranging from T0+20 s, testing from T0+120 s.
    pub queries: u64,
    /// The server's clock ahead of the client's, in seconds.
    pub server_skew: f64,
    pub ptd_version: &'static str,
    /// A PTD log line (after the time stamp) 30 s into the testing load.
    pub testing_log_line: Option<&'static str>,
    /// Identify answered by the PTD stand-in (its serial number, [`super::standin::SERIAL`]).
    pub standin: bool,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec { scenario: "Offline", ranging_watts: 100.0, testing_watts: 98.0, queries: 2400, server_skew: 0.1, ptd_version: "1.11.1", testing_log_line: None, standin: false }
    }
}

/// `MM-DD-YYYY HH:MM:SS.mmm` of T0 + `secs`.
pub fn stamp(secs: f64) -> String {
    let ms = ((T0 + secs) * 1000.0).round() as i64;
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // 2026-11-28 is day 20785 since the epoch; the fixture stays within that day.
    assert_eq!(days, 20785, "the fixture's times stay on 11-28-2026");
    format!("11-28-2026 {:02}:{:02}:{:02}.{:03}", rest / 3_600_000, rest / 60_000 % 60, rest / 1000 % 60, rest % 1000)
}

fn spl(mode: &str, from: f64, watts: f64) -> String {
    // 1 Hz readings from 10 s before LoadGen's window to 10 s after; the last digit varies.
    (0..80)
        .map(|i| {
            format!("Time,{},Watts,{:.3},Volts,230.100,Amps,{:.4},PF,0.9800,Mark,{SESSION}_{mode}\n", stamp(from + f64::from(i)), watts + f64::from(i % 5) * 0.1, watts / 230.1)
        })
        .collect()
}

/// Writes the session under `root` (created), returns `root`.
pub fn write_session(root: &Path, spec: &Spec) -> PathBuf {
    let mut results = serde_json::Map::new();
    let mut put = |rel: String, text: String| {
        let path = root.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        results.insert(rel, Value::String(sha1_hex(text.as_bytes())));
        std::fs::write(path, text).unwrap();
    };
    let windows = [(RANGING_DIR, "ranging", 20.0, spec.ranging_watts), (TESTING_DIR, "testing", 120.0, spec.testing_watts)];
    for (dir, mode, begin, watts) in windows {
        let scenario = format!("\"{}\"", spec.scenario);
        let (b, e) = (format!("\"{}\"", stamp(begin)), format!("\"{}\"", stamp(begin + 60.0)));
        let queries = spec.queries.to_string();
        let rate = format!("{:.3}", spec.queries as f64 / 60.0);
        put(
            format!("{dir}/{DETAIL_LOG}"),
            detail_log(&[
                ("effective_scenario", &scenario),
                ("result_validity", "\"VALID\""),
                ("result_samples_per_second", &rate),
                ("result_query_count", &queries),
                ("power_begin", &b),
                ("power_end", &e),
            ]),
        );
        put(format!("{dir}/{SUMMARY_LOG}"), format!("Scenario : {}\nResult is : VALID\n", spec.scenario));
        put(format!("{dir}/{SPL}"), spl(mode, begin - 10.0, watts));
    }
    put("power/client.log".into(), "client log\n".into());
    put("power/server.log".into(), "server log\n".into());
    let mut ptd_log = vec![
        "Analyzer 1".to_string(),
        format!("{}: Uncertainty checking for YokogawaWT310 is activated", stamp(1.0)),
        format!("{}: Go with mark '{SESSION}_ranging'", stamp(10.0)),
        format!("{}: Completed test", stamp(90.0)),
        format!("{}: Go with mark '{SESSION}_testing'", stamp(110.0)),
        format!("{}: Completed test", stamp(190.0)),
    ];
    ptd_log.extend(spec.testing_log_line.map(|l| format!("{}: {l}", stamp(150.0))));
    put(format!("power/{PTD_LOGS}"), ptd_log.join("\n") + "\n");
    let (client_results, server_results): (serde_json::Map<_, _>, serde_json::Map<_, _>) =
        results.into_iter().partition(|(k, _)| !k.ends_with(SPL) && !k.ends_with(PTD_LOGS) && k != "power/server.log");
    let phases = |skew: f64| {
        let mode = |begin: f64| json!([[T0 + begin - 20.0 + skew, 1.0], [T0 + begin - 10.0 + skew, 2.0], [T0 + begin + 70.0 + skew, 3.0], [T0 + begin + 80.0 + skew, 4.0]]);
        json!({"ranging": mode(20.0), "testing": mode(120.0)})
    };
    let accepted: Vec<Value> = serde_json::from_str(include_str!("sources_checksums.json")).unwrap();
    let sources = accepted[0].clone();
    let messages = json!([{"cmd": "mlcommons/power client v3", "reply": "mlcommons/power server v3"}, {"cmd": format!("new,resnet50,{CLIENT_UUID}"), "reply": format!("OK {SESSION},{SERVER_UUID}")}]);
    let common = |results: serde_json::Map<String, Value>, skew: f64| json!({"version": "1.0", "timezone": 0, "modules": {}, "sources": sources, "messages": messages, "uuid": {"client": CLIENT_UUID, "server": SERVER_UUID}, "session_name": SESSION, "results": results, "phases": phases(skew)});
    let client = common(client_results, 0.0);
    let mut server = common(server_results, spec.server_skew);
    let identify = match spec.standin {
        true => format!("YokogawaWT310,{},version={}-standin-20261128,not a meter", super::standin::SERIAL, spec.ptd_version),
        false => format!("YokogawaWT310,C2PH13047V,version={}-a5f5cd01-20231005,", spec.ptd_version),
    };
    server["ptd_messages"] = json!([
        {"cmd": "Hello", "reply": "Hello, PTDaemon here!"},
        {"cmd": "Identify", "reply": identify},
        {"cmd": "RR", "reply": "Ranges,1,0,1,0"},
        {"cmd": "SR,V,Auto", "reply": "Range V changed"},
        {"cmd": "SR,A,Auto", "reply": "Range A changed"},
        {"cmd": "SR,A,Auto", "reply": "Range A changed"},
        {"cmd": format!("Go,1000,0,{SESSION}_ranging"), "reply": GO_REPLY},
        {"cmd": "Stop", "reply": "Stopping untimed measurement"},
        {"cmd": "SR,V,230.1", "reply": "Range V changed"},
        {"cmd": "SR,A,0.478", "reply": "Range A changed"},
        {"cmd": format!("Go,1000,0,{SESSION}_testing"), "reply": GO_REPLY},
        {"cmd": "Stop", "reply": "Stopping untimed measurement"},
        // The initial (auto) ranges restored when the session is done.
        {"cmd": "SR,V,Auto", "reply": "Range V changed"},
        {"cmd": "SR,A,Auto", "reply": "Range A changed"},
    ]);
    server["ptd_config"] = json!([{"command": [], "device_type": 49, "interface_flag": "-U", "dc_flag": "", "device_port": "C2PH13047V", "channel": null}]);
    for (name, value) in [(CLIENT_JSON, client), (SERVER_JSON, server)] {
        std::fs::write(root.join("power").join(name), serde_json::to_string_pretty(&value).unwrap()).unwrap();
    }
    std::fs::write(root.join(TESTING_DIR).join("ptd_out.txt"), "Watts 98\n").unwrap();
    root.to_path_buf()
}

/// A performance run directory under `log_dir` whose testing run the session under `session`
/// recorded (its plan, and its detail log byte for byte as the client copied it), with `reasons`
/// in its plan and marker; returns it.
pub fn run_dir_of(log_dir: &Path, session: &Path, reasons: Vec<crate::submittable::NonSubmittable>) -> PathBuf {
    use crate::rundir::plan::{Backend, RunMode, RunPlan};
    let dir = log_dir.join("2026.11.28-19.00.00/CPU-dev_TRT/resnet50/Offline/performance");
    let plan = RunPlan {
        system: "CPU-dev".into(),
        system_name: "CPU-dev_TRT".into(),
        benchmark: "resnet50".into(),
        bench_dir: "resnet50".into(),
        scenario: mlperf_config::Scenario::Offline,
        workload: mlperf_config::Workload::default(),
        round: "v6.1".into(),
        loadgen_version: "6.1".into(),
        loadgen_model: "resnet50".into(),
        mode: RunMode::PerformanceOnly,
        backend: Backend::Config,
        devices: 1,
        total_sample_count: 1024,
        performance_sample_count: 1024,
        min_duration_ms: 600_000,
        token_latencies: false,
        output_limit: None,
        audit_test: None,
        overrides: Vec::new(),
        settings: Default::default(),
        probe_rate: false,
        non_submittable: reasons,
    };
    crate::rundir::plan::prepare_dir(&dir, &plan, "", None).unwrap();
    std::fs::copy(session.join(TESTING_DIR).join(DETAIL_LOG), dir.join(DETAIL_LOG)).unwrap();
    dir
}

/// The session recorded through power-dev's own client and server
/// (`tests/fixtures/power/recorded-resnet50-offline`, PROVENANCE.md there).
pub fn recorded() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/power/recorded-resnet50-offline")
}

/// A copy of the recorded session at `to`.
pub fn copy_recorded(to: &Path) {
    let from = recorded();
    for file in crate::fsutil::walk_files(&from) {
        let dest = to.join(file.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&file, &dest).unwrap();
    }
}

/// A fresh directory for one test.
pub fn tempdir(name: &str) -> PathBuf {
    crate::compliance::testlogs::dir(&format!("power-{name}"))
}
