//! Reading LoadGen's logs: `mlperf_log_detail.txt` (`:::MLLOG {json}` lines, first value per key,
//! as the checker reads them) and `mlperf_log_summary.txt` (`key : value` lines).

use super::RunDirError;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// LoadGen's verdict on a performance run (`result_validity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    Valid,
    Invalid,
}

impl Validity {
    pub const fn name(self) -> &'static str {
        match self {
            Validity::Valid => "VALID",
            Validity::Invalid => "INVALID",
        }
    }
}

/// A parsed detail log.
#[derive(Debug, Clone, Default)]
pub struct DetailLog {
    /// First value of each key.
    pub values: BTreeMap<String, Value>,
    /// `(key, value)` of every line with `metadata.is_error`.
    pub errors: Vec<(String, Value)>,
    pub warnings: Vec<(String, Value)>,
}

impl DetailLog {
    /// Parses the text; a malformed `:::MLLOG` line is an error (the checker aborts on it too).
    pub fn parse(text: &str) -> Result<DetailLog, RunDirError> {
        let mut log = DetailLog::default();
        for (n, line) in text.lines().enumerate() {
            let Some(json) = line.strip_prefix(":::MLLOG ") else { continue };
            let record: Value = serde_json::from_str(json).map_err(|source| RunDirError::LogLine { line: n + 1, source })?;
            let key = record["key"].as_str().unwrap_or_default().to_string();
            let value = record["value"].clone();
            if record["metadata"]["is_error"].as_bool() == Some(true) {
                log.errors.push((key.clone(), value.clone()));
            }
            if record["metadata"]["is_warning"].as_bool() == Some(true) {
                log.warnings.push((key.clone(), value.clone()));
            }
            log.values.entry(key).or_insert(value);
        }
        Ok(log)
    }

    pub fn read(path: &Path) -> Result<DetailLog, RunDirError> {
        let text = std::fs::read_to_string(path).map_err(|source| RunDirError::LogUnreadable { path: path.to_path_buf(), source })?;
        Self::parse(&text)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    pub fn f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(|v| v.as_f64().or_else(|| v.as_str().and_then(|s| s.parse().ok())))
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())))
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    /// An Offline run INVALID because it ended before its minimum duration (LoadGen issued
    /// `target_qps x min_duration` samples, and the engines answered them sooner): the samples per
    /// second it measured.
    pub fn offline_ended_early(&self) -> Option<f64> {
        let early = self.validity() == Some(Validity::Invalid) && self.bool("result_min_duration_met") == Some(false);
        self.f64("result_samples_per_second").filter(|_| early)
    }

    /// `result_validity`, or None when the log has none (an accuracy run, a run that died) or an
    /// unknown value.
    pub fn validity(&self) -> Option<Validity> {
        match self.str("result_validity")? {
            "VALID" => Some(Validity::Valid),
            "INVALID" => Some(Validity::Invalid),
            _ => None,
        }
    }
}

/// `key : value` pairs of a summary file (first occurrence wins).
pub fn parse_summary(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(':') {
            out.entry(k.trim().to_string()).or_insert_with(|| v.trim().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detail_log_keeps_first_values_and_errors() {
        let text = r#":::MLLOG {"key": "result_validity", "value": "VALID", "time_ms": 1, "namespace": "mlperf::logging", "event_type": "POINT_IN_TIME", "metadata": {"is_error": false, "is_warning": false, "file": "f", "line_no": 1, "pid": 1, "tid": 1}}
:::MLLOG {"key": "result_validity", "value": "INVALID", "time_ms": 1, "namespace": "mlperf::logging", "event_type": "POINT_IN_TIME", "metadata": {"is_error": false, "is_warning": false, "file": "f", "line_no": 1, "pid": 1, "tid": 1}}
:::MLLOG {"key": "error_runtime", "value": "Ran out", "time_ms": 1, "namespace": "mlperf::logging", "event_type": "POINT_IN_TIME", "metadata": {"is_error": true, "is_warning": false, "file": "f", "line_no": 1, "pid": 1, "tid": 1}}"#;
        let log = DetailLog::parse(text).unwrap();
        assert_eq!(log.validity(), Some(Validity::Valid));
        assert_eq!(log.errors.len(), 1);
        assert!(DetailLog::parse(":::MLLOG {broken").is_err());
    }

    #[test]
    fn an_offline_run_that_ended_early_gives_its_measured_rate() {
        let line = |key: &str, value: &str| format!(r#":::MLLOG {{"key": "{key}", "value": {value}, "metadata": {{"is_error": false, "is_warning": false}}}}"#);
        let log = |validity: &str, met: &str| {
            let text = [line("result_validity", validity), line("result_min_duration_met", met), line("result_samples_per_second", "363.7")].join("\n");
            DetailLog::parse(&text).unwrap().offline_ended_early()
        };
        assert_eq!(log("\"INVALID\"", "false"), Some(363.7));
        assert_eq!(log("\"INVALID\"", "true"), None, "INVALID for another reason");
        assert_eq!(log("\"VALID\"", "true"), None);
    }
}
