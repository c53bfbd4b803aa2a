//! The one typed door for runs that can never be part of a submission (rustls's `.dangerous()`):
//! every reason is a [`NonSubmittable`], collected where the run is planned (the selection, the
//! command line, the harness's plan, a family opening its workload), kept typed in the run's
//! `run_plan.json`, and rendered in one place ([`std::fmt::Display`]) into `NON_SUBMITTABLE.txt`,
//! the result table, the JSON results and the audits' records.

use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::path::PathBuf;

/// Why a run is not submittable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum NonSubmittable {
    /// A config field set on the command line (`--<field>=<value>`, development builds).
    Override { field: String, value: String },
    /// The system was chosen although the hardware does not match it.
    HardwareMismatch { system: String, mismatch: Vec<String> },
    /// LoadGen read the user's user.conf instead of the one rendered from the config.
    UserConf { path: PathBuf },
    /// `--test_run`: a shortened run.
    TestRun { min_duration_ms: u64 },
    /// A test double answered instead of the configured engine (its `Debug` name).
    TestBackend { backend: String },
    /// Generated data and model.
    SyntheticData,
    /// The expected rate was measured by a probe of the engines for this many seconds.
    ProbedRate { seconds: u64 },
    /// A dataset file that is not the published one: what its check found.
    UnofficialData { finding: String },
    /// Power measured by `mlperf ptd_standin` (no meter): its Identify reply, as server.json records it.
    PowerStandIn { identify: String },
}

impl fmt::Display for NonSubmittable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NonSubmittable::Override { field, value } => write!(f, "command-line override --{field}={value}"),
            NonSubmittable::HardwareMismatch { system, mismatch } => write!(f, "system {system} chosen against the hardware: {}", mismatch.join("; ")),
            NonSubmittable::UserConf { path } => write!(f, "user.conf from --user_conf_path {} instead of the config's", path.display()),
            NonSubmittable::TestRun { min_duration_ms } => write!(f, "--test_run: min_duration {min_duration_ms} ms"),
            NonSubmittable::TestBackend { backend } => write!(f, "test backend {backend} instead of the configured engine"),
            NonSubmittable::SyntheticData => f.write_str("synthetic dataset and model (accuracy measures agreement with the reference engine)"),
            NonSubmittable::ProbedRate { seconds } => write!(f, "expected rate measured by a {seconds} s probe of the engines (see probe.txt)"),
            NonSubmittable::UnofficialData { finding } => f.write_str(finding),
            NonSubmittable::PowerStandIn { identify } => write!(f, "power measured by the PTDaemon stand-in, not a meter (Identify: \"{identify}\")"),
        }
    }
}

/// The reasons as their text, one line each: `NON_SUBMITTABLE.txt`.
pub fn render(reasons: &[NonSubmittable]) -> String {
    reasons.iter().map(|r| format!("{r}\n")).collect()
}

/// Serializes reasons as their text (the records people and scripts read), for
/// `#[serde(serialize_with = "...")]`.
pub fn as_text<S: Serializer, R: AsRef<[NonSubmittable]>>(reasons: &R, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(reasons.as_ref().iter().map(ToString::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_reads_as_before_and_survives_the_run_plan() {
        let reasons = vec![
            NonSubmittable::Override { field: "offline_expected_qps".into(), value: "1200".into() },
            NonSubmittable::TestRun { min_duration_ms: 60000 },
            NonSubmittable::TestBackend { backend: "Null".into() },
            NonSubmittable::ProbedRate { seconds: 3 },
        ];
        assert_eq!(
            render(&reasons),
            "command-line override --offline_expected_qps=1200\n--test_run: min_duration 60000 ms\ntest backend Null instead of the configured engine\nexpected rate measured by a 3 s probe of the engines (see probe.txt)\n"
        );
        let json = serde_json::to_string(&reasons).unwrap();
        assert!(json.contains(r#"{"reason":"test_run","min_duration_ms":60000}"#), "{json}");
        assert_eq!(serde_json::from_str::<Vec<NonSubmittable>>(&json).unwrap(), reasons);
    }
}
