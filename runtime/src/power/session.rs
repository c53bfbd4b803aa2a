//! Reading one power session: the tree the power-dev client writes under OUTDIR/<session>/
//! (`power/`, `ranging/`, `run_1/`), the PTD samples of each mode (`spl.txt`) and LoadGen's power
//! window (`power_begin`/`power_end`, UTC) from each mode's detail log.

use crate::layout::{DETAIL_LOG, SUMMARY_LOG};
use crate::rundir::logs::DetailLog;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The session's subdirectories and the files the round keeps of them (the submission checker's
/// REQUIRED_POWER_FILES / REQUIRED_PERF_POWER_FILES; `run_1/ptd_out.txt` is written by the client
/// but never staged).
pub const POWER_DIR: &str = "power";
pub const RANGING_DIR: &str = "ranging";
pub const TESTING_DIR: &str = "run_1";
pub const SPL: &str = "spl.txt";
pub const CLIENT_JSON: &str = "client.json";
pub const SERVER_JSON: &str = "server.json";
pub const PTD_LOGS: &str = "ptd_logs.txt";
pub const POWER_FILES: [&str; 5] = [CLIENT_JSON, "client.log", PTD_LOGS, SERVER_JSON, "server.log"];
pub const RUN_FILES: [&str; 3] = [DETAIL_LOG, SUMMARY_LOG, SPL];

/// Where, in a power run's run directory, the client's session tree is kept.
pub const SESSION_IN_RUN_DIR: &str = "power_session";

/// Why a session directory cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    #[error("{path}: cannot read ({source}); the power session is incomplete: rerun `mlperf run_harness_power`")]
    Unreadable { path: PathBuf, source: std::io::Error },
    #[error("{path}: not JSON ({source}); it was edited or truncated after the run: rerun `mlperf run_harness_power`")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path}:{line}: {what} \"{value}\" is not MM-DD-YYYY HH:MM:SS.mmm; the file was edited after the run: rerun `mlperf run_harness_power`")]
    Time { path: PathBuf, line: usize, what: &'static str, value: String },
    #[error("{path}:{line}: watts \"{value}\" is not a number; the file was edited after the run: rerun `mlperf run_harness_power`")]
    Watts { path: PathBuf, line: usize, value: String },
    #[error("{path}: no {key} (LoadGen logs it after each performance test); the workload did not finish: rerun `mlperf run_harness_power`")]
    NoWindow { path: PathBuf, key: &'static str },
    #[error(transparent)]
    Log(#[from] crate::rundir::RunDirError),
}

impl From<SessionError> for crate::Error {
    fn from(e: SessionError) -> crate::Error {
        crate::Error::Data(e.to_string())
    }
}

/// A wall-clock instant in microseconds since the Unix epoch, UTC (both PTD and LoadGen write UTC).
pub type Micros = i64;

/// Parses `MM-DD-YYYY HH:MM:SS.fff` (the format of spl.txt, the PTD log and LoadGen's
/// power_begin/power_end; Python's `%m-%d-%Y %H:%M:%S.%f`, 1 to 6 fraction digits).
pub fn parse_time(text: &str) -> Option<Micros> {
    let (date, time) = text.trim().split_once(' ')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (month, day, year) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.')?;
    let mut t = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (t.next()??, t.next()??, t.next()??);
    if d.next().is_some() || t.next().is_some() || frac.is_empty() || frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let micros: i64 = format!("{frac:0<6}").parse().ok()?;
    Some(((days_from_civil(year, month, day) * 24 + h) * 60 + m) * 60_000_000 + s * 1_000_000 + micros)
}

/// `MM-DD-YYYY HH:MM:SS.mmm` of an instant, UTC (PTDaemon's stamps; the inverse of [`parse_time`]
/// to the millisecond).
pub fn format_time(at: Micros) -> String {
    let (days, micros) = (at.div_euclid(86_400_000_000), at.rem_euclid(86_400_000_000));
    let (year, month, day) = civil_from_days(days);
    let ms = micros / 1000;
    format!("{month:02}-{day:02}-{year:04} {:02}:{:02}:{:02}.{:03}", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
}

/// The date of a day since 1970-01-01 (Howard Hinnant's algorithm, the inverse of
/// [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// One PTD reading of spl.txt.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub at: Micros,
    pub watts: f64,
}

/// The `Time,...` lines of a spl.txt (others are ignored, as the checker does).
pub fn read_samples(path: &Path) -> Result<Vec<Sample>, SessionError> {
    let text = read_text(path)?;
    let mut samples = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if !line.starts_with("Time") {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let stamp = fields.get(1).copied().unwrap_or_default();
        let at = parse_time(stamp).ok_or_else(|| SessionError::Time { path: path.to_path_buf(), line: n + 1, what: "sample time", value: stamp.to_string() })?;
        let value = fields.get(3).copied().unwrap_or_default();
        let watts = value.parse().map_err(|_| SessionError::Watts { path: path.to_path_buf(), line: n + 1, value: value.to_string() })?;
        samples.push(Sample { at, watts });
    }
    Ok(samples)
}

/// LoadGen's power window of one performance test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub begin: Micros,
    pub end: Micros,
}

impl Window {
    pub fn seconds(&self) -> f64 {
        (self.end - self.begin) as f64 / 1e6
    }

    /// Strictly inside, as the checkers compare.
    pub fn holds(&self, at: Micros) -> bool {
        self.begin < at && at < self.end
    }
}

/// One mode (ranging or testing) of a session.
#[derive(Debug, Clone)]
pub struct ModeRun {
    pub dir: PathBuf,
    pub detail: DetailLog,
    pub window: Window,
    pub samples: Vec<Sample>,
}

impl ModeRun {
    pub fn read(dir: &Path) -> Result<ModeRun, SessionError> {
        let detail_path = dir.join(DETAIL_LOG);
        let detail = DetailLog::parse(&read_text(&detail_path)?)?;
        let time = |key: &'static str| {
            let value = detail.str(key).ok_or_else(|| SessionError::NoWindow { path: detail_path.clone(), key })?;
            parse_time(value).ok_or_else(|| SessionError::Time { path: detail_path.clone(), line: line_of(&detail_path, key), what: key, value: value.to_string() })
        };
        let window = Window { begin: time("power_begin")?, end: time("power_end")? };
        let samples = read_samples(&dir.join(SPL))?;
        Ok(ModeRun { dir: dir.to_path_buf(), detail, window, samples })
    }

    /// The average of the readings above 0 W strictly inside LoadGen's window (the checkers'
    /// averaging); None when there are none.
    pub fn average_watts(&self) -> Option<f64> {
        let inside: Vec<f64> = self.samples.iter().filter(|s| self.window.holds(s.at) && s.watts > 0.0).map(|s| s.watts).collect();
        (!inside.is_empty()).then(|| inside.iter().sum::<f64>() / inside.len() as f64)
    }
}

/// A whole session directory.
#[derive(Debug, Clone)]
pub struct Session {
    pub root: PathBuf,
    pub client: Value,
    pub server: Value,
    pub ranging: ModeRun,
    pub testing: ModeRun,
}

impl Session {
    pub fn read(root: &Path) -> Result<Session, SessionError> {
        let json = |name: &str| {
            let path = root.join(POWER_DIR).join(name);
            serde_json::from_str(&read_text(&path)?).map_err(|source| SessionError::Json { path, source })
        };
        Ok(Session {
            root: root.to_path_buf(),
            client: json(CLIENT_JSON)?,
            server: json(SERVER_JSON)?,
            ranging: ModeRun::read(&root.join(RANGING_DIR))?,
            testing: ModeRun::read(&root.join(TESTING_DIR))?,
        })
    }
}

/// PTDaemon's reply to `Identify` as the power-dev server recorded it in server.json
/// (`<model>,<serial>,version=<version>-<build>,...`; empty when there is none).
pub fn identify_reply(server: &Value) -> &str {
    let messages = server["ptd_messages"].as_array().into_iter().flatten();
    messages.filter(|m| m["cmd"] == "Identify").find_map(|m| m["reply"].as_str()).unwrap_or_default()
}

fn read_text(path: &Path) -> Result<String, SessionError> {
    std::fs::read_to_string(path).map_err(|source| SessionError::Unreadable { path: path.to_path_buf(), source })
}

/// The 1-based line of a detail log holding `key`, for messages (0 when not found).
fn line_of(path: &Path, key: &str) -> usize {
    let needle = format!("\"key\": \"{key}\"");
    std::fs::read_to_string(path).ok().and_then(|t| t.lines().position(|l| l.contains(&needle))).map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_as_utc_with_their_fraction() {
        assert_eq!(parse_time("01-01-1970 00:00:00.000"), Some(0));
        assert_eq!(parse_time("01-02-1970 00:00:01.5"), Some(86_401_500_000));
        // 2026-11-28 19:18:37.123 UTC = 1795893517.123 s (date -u -d @1795893517).
        assert_eq!(parse_time("11-28-2026 19:18:37.123"), Some(1_795_893_517_123_000));
        assert_eq!(parse_time("02-29-2024 12:00:00.000000").map(|t| t / 1_000_000), Some(1_709_208_000));
        for text in ["01-01-1970 00:00:00.000", "11-28-2026 19:18:37.123", "02-29-2024 23:59:59.999", "12-31-1999 00:00:00.001", "03-01-2100 12:00:00.000"] {
            assert_eq!(format_time(parse_time(text).unwrap()), text);
        }
        for bad in ["2026-11-28 19:18:37.123", "11-28-2026 19:18:37", "13-01-2026 00:00:00.000", "11-28-2026 24:00:00.000", "11-28-2026 19:18:37.1234567"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }
}
