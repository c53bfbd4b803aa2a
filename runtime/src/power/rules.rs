//! Pre-flight power rules: what power-dev's compliance/check.py (= the submission checker's
//! checks/power/power_checker.py) and the checker's power file sets require of a power result,
//! each finding naming the file, the value, the rule and the fix.

use super::session::{CLIENT_JSON, POWER_DIR, POWER_FILES, PTD_LOGS, RANGING_DIR, RUN_FILES, SERVER_JSON, Session, TESTING_DIR, parse_time};
use super::sources::{ACCEPTED_SOURCES, sha1_hex};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// PTDaemon versions and Yokogawa models (with PTD device types) the checker accepts (power_checker.py).
const PTD_VERSIONS: [&str; 1] = ["1.11.1"];
const MODELS: [(&str, u64); 11] = [
    ("YokogawaWT210", 8),
    ("YokogawaWT500", 35),
    ("YokogawaWT500_multichannel", 48),
    ("YokogawaWT310", 49),
    ("YokogawaWT310E", 49),
    ("YokogawaWT330", 52),
    ("YokogawaWT330E", 52),
    ("YokogawaWT330_multichannel", 77),
    ("YokogawaWT210_DC", 508),
    ("YokogawaWT310_DC", 549),
    ("YokogawaWT330_DC", 586),
];
/// Client and server clocks may differ by this much at each phase (TIME_DELTA_TOLERANCE).
const PHASE_TOLERANCE_S: f64 = 0.8;
/// Files the checker's file-set comparison ignores (utils.files_diff plus OPTIONAL_PERF_FILES).
const OPTIONAL: [&str; 4] = ["mlperf_log_accuracy.json", "mlperf_log_trace.json", "results.json", ".gitkeep"];

/// Which rule a finding breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Unreadable,
    FileSet,
    Sources,
    PtdVersion,
    MeterModel,
    PtdReply,
    Uuid,
    SessionName,
    PhaseSkew,
    LoadgenWindow,
    RangingRatio,
    Messages,
    ResultsChecksum,
    PtdLog,
    Uncertainty,
    DeviceType,
    Debug,
}

/// One broken rule.
#[derive(Debug, Clone)]
pub struct Finding {
    pub rule: Rule,
    pub file: PathBuf,
    pub value: String,
    pub fix: &'static str,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}: {:?}: {}; {}", self.file.display(), self.rule, self.value, self.fix)
    }
}

const RERUN: &str = "rerun `mlperf run_harness_power` (a power result cannot be repaired by editing)";

/// Every power rule on a `performance/` directory holding `power/`, `ranging/` and `run_1/`;
/// `staged`: also the submission checker's exact file sets.
pub fn check(dir: &Path, staged: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut find = |rule, file: PathBuf, value: String, fix| findings.push(Finding { rule, file, value, fix });
    if staged {
        for (sub, names) in [(TESTING_DIR, &RUN_FILES[..]), (RANGING_DIR, &RUN_FILES[..]), (POWER_DIR, &POWER_FILES[..])] {
            let present: Vec<String> = std::fs::read_dir(dir.join(sub)).map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
            for name in names.iter().filter(|n| !present.iter().any(|p| p == *n)) {
                find(Rule::FileSet, dir.join(sub).join(name), "missing".into(), "restage with `mlperf stage_results` from the power run");
            }
            for name in present.iter().filter(|p| !names.contains(&p.as_str()) && !OPTIONAL.contains(&p.as_str())) {
                find(Rule::FileSet, dir.join(sub).join(name), "not allowed here (the checker compares the exact set)".into(), "remove it");
            }
        }
    }
    let session = match Session::read(dir) {
        Ok(s) => s,
        Err(e) => {
            find(Rule::Unreadable, dir.to_path_buf(), e.to_string(), RERUN);
            return findings;
        }
    };
    let (client_json, server_json) = (dir.join(POWER_DIR).join(CLIENT_JSON), dir.join(POWER_DIR).join(SERVER_JSON));
    let accepted: Vec<Value> = serde_json::from_str(ACCEPTED_SOURCES).expect("the embedded accepted set is JSON");
    for (json, file) in [(&session.client, &client_json), (&session.server, &server_json)] {
        if !accepted.contains(&json["sources"]) {
            find(
                Rule::Sources,
                file.clone(),
                "\"sources\" is not the round's accepted power-dev source set".into(),
                "use an unmodified power-dev checkout of the accepted revision (c4b3ad8) on both hosts and rerun",
            );
        }
    }
    ptd_messages(&session.server, &server_json, &mut find);
    for key in ["client", "server"] {
        let (c, s) = (&session.client["uuid"][key], &session.server["uuid"][key]);
        if c != s || c.as_str().is_none_or(|u| !is_uuid(u)) {
            find(Rule::Uuid, server_json.clone(), format!("uuid.{key} {c} (client.json) vs {s}"), RERUN);
        }
    }
    if session.client["session_name"] != session.server["session_name"] {
        find(Rule::SessionName, server_json.clone(), format!("session_name {} vs {} in client.json", session.server["session_name"], session.client["session_name"]), RERUN);
    }
    for (mode, run) in [("ranging", &session.ranging), ("testing", &session.testing)] {
        let phase = |json: &Value| -> Vec<f64> { json["phases"][mode].as_array().map(|a| a.iter().filter_map(|p| p[0].as_f64()).collect()).unwrap_or_default() };
        let (c, s) = (phase(&session.client), phase(&session.server));
        if c.len() != s.len() || c.len() < 3 {
            find(Rule::PhaseSkew, server_json.clone(), format!("{mode}: {} client phases, {} server phases", c.len(), s.len()), RERUN);
            continue;
        }
        if let Some((i, d)) = c.iter().zip(&s).map(|(a, b)| (a - b).abs()).enumerate().find(|(_, d)| *d > PHASE_TOLERANCE_S) {
            find(
                Rule::PhaseSkew,
                server_json.clone(),
                format!("{mode} phase {}: client and server clocks differ by {:.0} ms (> 800 ms)", i + 1, d * 1000.0),
                "sync both hosts to the same NTP server and rerun",
            );
        }
        let (begin, end) = (run.window.begin as f64 / 1e6, run.window.end as f64 / 1e6);
        let inside = |t: f64| (c[1] < t && t < c[2]) || (c[1] < t - 3600.0 && t - 3600.0 < c[2]);
        if !inside(begin) || !inside(end) {
            find(
                Rule::LoadgenWindow,
                run.dir.join(crate::layout::DETAIL_LOG),
                format!("LoadGen's power_begin..power_end lies outside the client's {mode} workload window"),
                "the workload must write fresh LoadGen logs under the client's input dir during its run; rerun",
            );
        }
    }
    match (session.ranging.average_watts(), session.testing.average_watts()) {
        (Some(r), Some(t)) if ((t / r - 1.0) * 100.0 * 100.0).round() / 100.0 > -5.0 => {}
        (r, t) => find(
            Rule::RangingRatio,
            session.testing.dir.join(super::session::SPL),
            format!("average testing power {t:?} W vs ranging {r:?} W: below 95 %"),
            "run ranging and testing with the same power settings (never change power limits or clocks between them) and rerun",
        ),
    }
    if session.client["messages"] != session.server["messages"] && !same_messages(&session.client["messages"], &session.server["messages"]) {
        find(Rule::Messages, server_json.clone(), "client.json and server.json record different messages".into(), RERUN);
    }
    results(dir, &session, &mut find);
    ptd_log(dir, &session, &mut find);
    for config in session.server["ptd_config"].as_array().into_iter().flatten() {
        let device = config["device_type"].as_u64();
        if !device.is_some_and(|d| MODELS.iter().any(|(_, t)| *t == d)) {
            find(
                Rule::DeviceType,
                server_json.clone(),
                format!("ptd_config device_type {}", config["device_type"]),
                "use a supported Yokogawa meter (device type 0, the dummy, never passes)",
            );
        } else if device == Some(77) && config["channel"].as_str().is_none_or(|c| c.split(',').count() != 2) {
            find(
                Rule::DeviceType,
                server_json.clone(),
                format!("device type 77 with channel {}", config["channel"]),
                "give the multichannel analyzer `channel: a,b` in the server config",
            );
        }
    }
    if session.server.get("debug").is_some_and(|d| d != &Value::Bool(false)) {
        find(Rule::Debug, server_json, "the server ran with MLPP_DEBUG".into(), "unset MLPP_DEBUG on the director and rerun");
    }
    findings
}

fn is_uuid(text: &str) -> bool {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit())
}

/// Messages equal but for the replies to `time` (each host read its own clock).
fn same_messages(a: &Value, b: &Value) -> bool {
    match (a.as_array(), b.as_array()) {
        (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x["cmd"] == y["cmd"] && (x["cmd"] == "time" || x["reply"] == y["reply"])),
        _ => false,
    }
}

fn ptd_messages(server: &Value, file: &Path, find: &mut impl FnMut(Rule, PathBuf, String, &'static str)) {
    let messages: Vec<(&str, &str)> =
        server["ptd_messages"].as_array().into_iter().flatten().map(|m| (m["cmd"].as_str().unwrap_or_default(), m["reply"].as_str().unwrap_or_default())).collect();
    let identify = super::session::identify_reply(server);
    let model = identify.split(',').next().unwrap_or_default();
    let version = identify.split_once("version=").and_then(|(_, v)| v.split_once('-')).map_or("", |(v, _)| v);
    if !PTD_VERSIONS.contains(&version) {
        find(Rule::PtdVersion, file.to_path_buf(), format!("PTDaemon version \"{version}\" (Identify: \"{identify}\")"), "use PTDaemon 1.11.1 on the director");
    }
    if !MODELS.iter().any(|(m, _)| *m == model) {
        find(Rule::MeterModel, file.to_path_buf(), format!("power meter \"{model}\""), "measure with a supported Yokogawa meter");
    }
    // The meter's initial ranges (the RR reply, third message) set again when the session is done.
    let ranges: Vec<&str> = messages.get(2).map_or("", |(_, r)| *r).split(',').collect();
    let initial = |i: usize| match (ranges.get(i), ranges.get(i + 1).and_then(|r| r.parse::<f64>().ok())) {
        (Some(&"0"), Some(range)) if range > 0.0 => ranges[i + 1].to_string(),
        _ => "Auto".to_string(),
    };
    let nth = |prefix: &str, n: usize| messages.iter().filter(|(c, _)| c.starts_with(prefix)).nth(n - 1).map(|(c, _)| *c);
    let (amps, volts) = (format!("SR,A,{}", initial(1)), format!("SR,V,{}", initial(3)));
    if (nth("SR,A", 3) != Some(amps.as_str()) && nth("SR,A", 4) != Some(amps.as_str())) || nth("SR,V", 3) != Some(volts.as_str()) {
        find(
            Rule::PtdReply,
            file.to_path_buf(),
            format!("the meter's initial ranges ({amps}, {volts}) were not restored"),
            "let the power-dev server end the session (`done`) normally; rerun",
        );
    }
    let mut stops = 0;
    for (cmd, reply) in &messages {
        let expected = match *cmd {
            c if c.starts_with("SR,A") => "Range A changed",
            c if c.starts_with("SR,V") => "Range V changed",
            c if c.starts_with("Go,1000,") => "Starting untimed measurement, maximum 500000 samples at 1000ms with 0 rampup samples",
            "Stop" => {
                stops += 1;
                // The third Stop comes when nothing is measured.
                if stops == 3 { "Error: no measurement to stop" } else { "Stopping untimed measurement" }
            }
            _ => continue,
        };
        if reply != &expected {
            find(Rule::PtdReply, file.to_path_buf(), format!("PTD replied \"{reply}\" to \"{cmd}\", not \"{expected}\""), "check the meter's connection and range settings; rerun");
        }
    }
}

/// The SHA-1s the client and server recorded of the nine result files (client.json and server.json
/// are not hashed) against the files.
fn results(dir: &Path, session: &Session, find: &mut impl FnMut(Rule, PathBuf, String, &'static str)) {
    let hashed = POWER_FILES.iter().filter(|n| ![CLIENT_JSON, SERVER_JSON].contains(n)).map(|n| format!("{POWER_DIR}/{n}"));
    let runs = [RANGING_DIR, TESTING_DIR].into_iter().flat_map(|d| RUN_FILES.iter().map(move |n| format!("{d}/{n}")));
    for rel in hashed.chain(runs) {
        let recorded = [&session.client, &session.server].iter().filter_map(|j| j["results"][&rel].as_str()).collect::<Vec<_>>();
        let actual = std::fs::read(dir.join(&rel)).ok().map(|b| sha1_hex(&b));
        let agree = !recorded.is_empty() && recorded.iter().all(|r| Some(*r) == actual.as_deref());
        if !agree {
            find(
                Rule::ResultsChecksum,
                dir.join(&rel),
                format!("SHA-1 {} vs {recorded:?} recorded in client.json/server.json", actual.as_deref().unwrap_or("(no file)")),
                "stage the session's files byte for byte (never edit or re-encode them); if they were edited, rerun",
            );
        }
    }
}

/// The PTD log: uncertainty checking active before ranging, no ERROR outside ranging, no
/// uncertainty above 1 % during the testing load.
fn ptd_log(dir: &Path, session: &Session, find: &mut impl FnMut(Rule, PathBuf, String, &'static str)) {
    let file = dir.join(POWER_DIR).join(PTD_LOGS);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let timed: Vec<(i64, &str)> = text.lines().filter_map(|l| Some((parse_time(l.get(..23)?)?, l.get(23..)?.trim()))).collect();
    let mark = format!(": Go with mark '{}_ranging'", session.server["session_name"].as_str().unwrap_or_default());
    let start = timed.iter().position(|(_, m)| *m == mark);
    let Some((start, stop)) = start.and_then(|s| timed[s..].iter().find(|(_, m)| *m == ": Completed test").map(|(t, _)| (timed[s].0, *t))) else {
        find(Rule::PtdLog, file, format!("no \"{mark}\" followed by \": Completed test\""), RERUN);
        return;
    };
    if !timed.iter().any(|(t, m)| *t < start && m.contains("Uncertainty checking for Yokogawa") && m.ends_with("is activated")) {
        find(
            Rule::PtdLog,
            file.clone(),
            "no \"Uncertainty checking for Yokogawa... is activated\" before ranging".into(),
            "use PTDaemon 1.11.1 with a supported meter (uncertainty checking on)",
        );
    }
    // The rule's 800 ms margin at each end of the load. The checker adds the constant to seconds
    // (800 s), which lets a run shorter than 1600 s through: the pre-flight holds to the rule.
    let (load_begin, load_end) = (session.testing.window.begin + 800_000, session.testing.window.end - 800_000);
    for (t, msg) in &timed {
        if let Some(error) = msg.split_once("ERROR:").map(|(_, e)| e.trim()) {
            if error != "USB." && !(start < *t && *t < stop) {
                find(Rule::PtdLog, file.clone(), format!("\"{msg}\" outside ranging"), "fix the meter or its connection and rerun");
            }
        } else if let Some(warning) = msg.split_once("WARNING:").map(|(_, w)| w.trim())
            && load_begin < *t
            && *t < load_end
            && warning.starts_with("Uncertainty ")
            && warning.contains("which is above 1.00% limit")
        {
            find(
                Rule::Uncertainty,
                file.clone(),
                format!("\"{msg}\" during testing"),
                "the load's current is too low for the meter's range: measure a larger load or use a more sensitive meter/range",
            );
        }
    }
}
