//! The power metric as the submission checker computes it (checks/power_check.py
//! `get_power_metric_check`): from the testing run (`run_1/`) only, the average of the spl.txt
//! readings above 0 W strictly inside LoadGen's power_begin..power_end.

use super::session::ModeRun;
use mlperf_config::Scenario;

/// Why no power metric can be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    #[error("{dir}/spl.txt has no reading above 0 W inside LoadGen's power window; the meter and the run do not overlap (clock skew?): rerun `mlperf run_harness_power`")]
    NoSamples { dir: String },
    #[error("{dir}/mlperf_log_detail.txt has no usable result_query_count; the run did not finish: rerun `mlperf run_harness_power`")]
    NoQueryCount { dir: String },
}

impl From<MetricError> for crate::Error {
    fn from(e: MetricError) -> crate::Error {
        crate::Error::Data(e.to_string())
    }
}

/// The power result of one testing run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PowerMetric {
    /// Offline, Server, Interactive: average system power, and performance per watt.
    Watts { watts: f64, samples_per_second_per_watt: f64 },
    /// SingleStream, MultiStream: energy per query, and queries (of 1 or 8 samples) per joule.
    MillijoulesPerQuery { millijoules: f64, queries_per_joule: f64 },
}

impl PowerMetric {
    /// The value and unit of the power metric (the checker's POWER_UNIT_DICT).
    pub fn value(&self) -> (f64, &'static str) {
        match *self {
            PowerMetric::Watts { watts, .. } => (watts, "Watts"),
            PowerMetric::MillijoulesPerQuery { millijoules, .. } => (millijoules, "millijoules"),
        }
    }

    /// The efficiency figure and its unit.
    pub fn efficiency(&self) -> (f64, &'static str) {
        match *self {
            PowerMetric::Watts { samples_per_second_per_watt, .. } => (samples_per_second_per_watt, "samples/s/W"),
            PowerMetric::MillijoulesPerQuery { queries_per_joule, .. } => (queries_per_joule, "queries/J"),
        }
    }
}

/// The metric of `testing` for a result of `scenario` whose performance metric is `performance`
/// (samples/s or tokens/s for Offline/Server/Interactive; unused for the stream scenarios).
pub fn power_metric(testing: &ModeRun, scenario: Scenario, performance: f64) -> Result<PowerMetric, MetricError> {
    let dir = testing.dir.display().to_string();
    let watts = testing.average_watts().ok_or_else(|| MetricError::NoSamples { dir: dir.clone() })?;
    let samples_per_query = match scenario {
        Scenario::Offline | Scenario::Server | Scenario::Interactive => return Ok(PowerMetric::Watts { watts, samples_per_second_per_watt: performance / watts }),
        Scenario::SingleStream => 1.0,
        Scenario::MultiStream => 8.0,
    };
    let queries = testing.detail.u64("result_query_count").filter(|&q| q > 0).ok_or_else(|| MetricError::NoQueryCount { dir: dir.clone() })? as f64;
    let mut millijoules = watts * testing.window.seconds() * 1000.0 / queries;
    // A MultiStream result inferred from a SingleStream run: each logged query is one sample.
    if scenario == Scenario::MultiStream && testing.detail.str("effective_scenario") == Some(Scenario::SingleStream.name()) {
        millijoules *= samples_per_query;
    }
    Ok(PowerMetric::MillijoulesPerQuery { millijoules, queries_per_joule: samples_per_query * 1000.0 / millijoules })
}
