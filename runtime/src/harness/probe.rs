//! Engines measured without LoadGen, and the rate probe of development runs.
//!
//! LoadGen sizes a performance run from the config's expectation: Offline issues `target_qps x
//! min_duration` samples in one query, SingleStream and MultiStream generate `min_duration /
//! expected latency` queries. An engine faster than the expectation answers them before the
//! minimum duration and the run is INVALID, so a development run on a machine faster than the one
//! its config was tuned on fails for no fault of its own (the CPU-only system's 350 samples/s
//! config ran at 398.7 on a quiet 2-core machine). A `--test_run` of synthetic data, whose rate
//! the command line does not set, therefore measures its engines for [`PROBE`] first and expects
//! [`HEADROOM`] times their speed: asking for more than a machine delivers only lengthens a run,
//! asking for less invalidates it. Submission runs never probe: their configs are the record of
//! what was tuned, and the checker reads them.

use super::batcher::BatcherConfig;
use crate::cpu::CpuClock;
use crate::engines::serving::ServingError;
use crate::engines::{Engine, SampleSource};
use crate::rundir::PROBE as PROBE_LOG;
use mlperf_config::{CompiledConfig, FieldOrigin, Origin, Scenario, Settings};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// How long the probe measures the engines.
pub const PROBE: Duration = Duration::from_secs(3);
/// Offline expects this many times the measured throughput; SingleStream and MultiStream expect
/// latencies this many times shorter than measured.
pub const HEADROOM: f64 = 1.5;
/// Samples per MultiStream query (MLPerf's fixed `multi_stream_samples_per_query`).
const MULTISTREAM_SAMPLES: usize = 8;

/// The config field a probe sets for `scenario` (None: the scenario is not sized by the engine's
/// speed; Server and Interactive issue at the configured rate whatever the engine does).
pub fn rate_field(scenario: Scenario) -> Option<&'static str> {
    match scenario {
        Scenario::Offline => Some("offline_expected_qps"),
        Scenario::SingleStream => Some("single_stream_expected_latency_ns"),
        Scenario::MultiStream => Some("multi_stream_expected_latency_ns"),
        Scenario::Server | Scenario::Interactive => None,
    }
}

/// Why the engines could not be measured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    #[error("{0} runs are not sized by the engine's speed; nothing to probe")]
    NotSized(Scenario),
    /// An engine failed on a batch (its message, as the engine boundary gives it).
    #[error("{0}")]
    Engine(String),
    /// Serving endpoints failed a request of the measurement.
    #[error(transparent)]
    Serving(#[from] ServingError),
    /// The measured rate is not a value the config field takes.
    #[error("{field} = {value}: {reason}")]
    Setting { field: &'static str, value: toml::Value, reason: String },
}

impl From<ProbeError> for crate::Error {
    fn from(e: ProbeError) -> crate::Error {
        match e {
            ProbeError::Serving(serving) => serving.into(),
            _ => crate::Error::Other(e.to_string()),
        }
    }
}

/// An engine's failure as a probe error, whatever text or error type the engine boundary gives.
fn engine_failed(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Engine(e.to_string())
}

/// What the engines did alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    pub samples: usize,
    pub elapsed: Duration,
    /// Process CPU time (every thread) over the measurement.
    pub cpu_us: f64,
}

impl Throughput {
    pub fn samples_per_s(&self) -> f64 {
        self.samples as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Every device's engine with `workers_per_device` concurrent workers, each running whole batches
/// of `loaded` samples back to back for `duration` after one warm-up batch.
pub fn engines_alone(devices: &[Arc<dyn Engine>], source: &dyn SampleSource, loaded: &[usize], config: BatcherConfig, duration: Duration) -> Result<Throughput, ProbeError> {
    let workers: Vec<&dyn Engine> = devices.iter().flat_map(|e| std::iter::repeat_n(e.as_ref(), config.workers_per_device)).collect();
    let batch = |k: usize| -> Vec<usize> { (0..config.batch_size).map(|j| loaded[(k * config.batch_size + j) % loaded.len()]).collect() };
    let stride = workers.len();
    let start_line = Barrier::new(stride + 1);
    let (results, cpu_us) = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter()
            .enumerate()
            .map(|(w, &engine)| {
                let (start_line, batch) = (&start_line, &batch);
                s.spawn(move || -> Result<(usize, Duration), ProbeError> {
                    let mut outputs = Vec::new();
                    let warm_up = engine.infer(&batch(w), source, &mut outputs);
                    // Everyone reaches the line, even after a failure, so no worker waits forever.
                    start_line.wait();
                    warm_up.map_err(engine_failed)?;
                    let start = Instant::now();
                    let (mut done, mut k) = (0, w);
                    while start.elapsed() < duration {
                        outputs.clear();
                        engine.infer(&batch(k), source, &mut outputs).map_err(engine_failed)?;
                        done += config.batch_size;
                        k += stride;
                    }
                    Ok((done, start.elapsed()))
                })
            })
            .collect();
        start_line.wait();
        let cpu = CpuClock::start();
        let results: Vec<Result<(usize, Duration), ProbeError>> = handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect();
        (results, cpu.elapsed_us())
    });
    let results: Vec<(usize, Duration)> = results.into_iter().collect::<Result<_, _>>()?;
    let samples = results.iter().map(|r| r.0).sum();
    let elapsed = results.iter().map(|r| r.1).max().unwrap_or_default();
    Ok(Throughput { samples, elapsed, cpu_us })
}

/// The mean time one engine takes to answer a query of `query` samples, over `duration` after
/// one warm-up query.
fn query_latency(engine: &dyn Engine, source: &dyn SampleSource, loaded: &[usize], query: usize, duration: Duration) -> Result<Duration, ProbeError> {
    let mut outputs = Vec::new();
    let indices = |k: usize| -> Vec<usize> { (0..query).map(|j| loaded[(k * query + j) % loaded.len()]).collect() };
    engine.infer(&indices(0), source, &mut outputs).map_err(engine_failed)?;
    let start = Instant::now();
    let mut queries = 0u32;
    while start.elapsed() < duration {
        outputs.clear();
        engine.infer(&indices(queries as usize + 1), source, &mut outputs).map_err(engine_failed)?;
        queries += 1;
    }
    Ok(start.elapsed() / queries.max(1))
}

/// What the probe measures: the engines of this process, or serving endpoints.
pub trait Measure {
    /// Samples per second with every device (or endpoint slot) busy.
    fn throughput(&self, duration: Duration) -> Result<f64, ProbeError>;
    /// Mean time to answer one query of `query` samples.
    fn query_latency(&self, query: usize, duration: Duration) -> Result<Duration, ProbeError>;
}

/// Engines of this process on loaded samples.
pub struct EngineMeasure<'a> {
    pub devices: &'a [Arc<dyn Engine>],
    pub source: &'a dyn SampleSource,
    pub loaded: &'a [usize],
    pub batcher: BatcherConfig,
}

impl Measure for EngineMeasure<'_> {
    fn throughput(&self, duration: Duration) -> Result<f64, ProbeError> {
        Ok(engines_alone(self.devices, self.source, self.loaded, self.batcher, duration)?.samples_per_s())
    }

    fn query_latency(&self, query: usize, duration: Duration) -> Result<Duration, ProbeError> {
        query_latency(self.devices[0].as_ref(), self.source, self.loaded, query, duration)
    }
}

/// `config` with `settings` in which `field` was measured: user.conf then says that the value came
/// from `probe.txt`, as it says where configured values came from.
pub fn probed_config(config: &CompiledConfig, settings: Settings, field: &'static str) -> CompiledConfig {
    let mut provenance: Vec<FieldOrigin> = config.provenance.iter().filter(|o| o.field != field).cloned().collect();
    let value = settings.get_toml(Settings::index_of(field).expect("a config field")).map(|v| v.to_string()).unwrap_or_default();
    provenance.push(FieldOrigin { field: field.into(), value: value.into(), at: Origin { file: PROBE_LOG.into(), line: 1, col: 1 }, overrode: Default::default() });
    CompiledConfig { settings, provenance: provenance.into(), ..config.clone() }
}

/// Offline's expected rate for engines measured at `rate` samples/s: [`HEADROOM`] times it.
fn offline_value(rate: f64) -> toml::Value {
    toml::Value::Float((rate * HEADROOM * 10.0).round() / 10.0)
}

fn set(field: &'static str, value: toml::Value, settings: &mut Settings) -> Result<(), ProbeError> {
    settings.set_toml(field, &value).map_err(|reason| ProbeError::Setting { field, value: value.clone(), reason })
}

/// Measures with `measure` and sets the scenario's expected rate in `settings` with [`HEADROOM`].
/// Returns a line saying what was measured and set.
pub fn probe(scenario: Scenario, measure: &dyn Measure, settings: &mut Settings) -> Result<String, ProbeError> {
    let field = rate_field(scenario).ok_or(ProbeError::NotSized(scenario))?;
    let (measured, value) = match scenario {
        Scenario::Offline => {
            let rate = measure.throughput(PROBE)?;
            (format!("{rate:.1} samples/s"), offline_value(rate))
        }
        Scenario::SingleStream | Scenario::MultiStream => {
            let query = if scenario == Scenario::SingleStream { 1 } else { MULTISTREAM_SAMPLES };
            let latency = measure.query_latency(query, PROBE)?;
            let expected_ns = ((latency.as_nanos() as f64 / HEADROOM) as i64).max(1);
            (format!("{:.3} ms per query of {query}", latency.as_secs_f64() * 1e3), toml::Value::Integer(expected_ns))
        }
        Scenario::Server | Scenario::Interactive => unreachable!("rate_field has none"),
    };
    set(field, value.clone(), settings)?;
    Ok(format!("rate probe: the engines alone ran {measured} for {} s; {field} = {value} ({HEADROOM}x headroom) instead of the config's", PROBE.as_secs()))
}

/// The expected rate of an Offline run going again after a probed one that ended before its
/// minimum duration at `measured` samples/s (`harness::rerun_ended_early` says why):
/// [`HEADROOM`] times the rate the run itself measured. Returns a line saying so.
pub fn rerun(measured: f64, settings: &mut Settings) -> Result<String, ProbeError> {
    let (field, value) = ("offline_expected_qps", offline_value(measured));
    set(field, value.clone(), settings)?;
    Ok(format!("rerun: the probed run measured {measured:.1} samples/s and ended before its minimum duration (kept in short_run/); {field} = {value} ({HEADROOM}x headroom)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::qsl::SampleLibrary;
    use crate::engines::Sample;
    use crate::harness::backends::FixedLatencyEngine;
    use mlperf_loadgen::Qsl;

    struct NoData;
    impl SampleSource for NoData {
        fn sample(&self, _: usize) -> Sample {
            Sample::empty()
        }
    }

    #[test]
    fn the_probe_expects_more_than_the_engines_deliver() {
        // Batches of 8 every 20 ms on one worker: 400 samples/s; one sample in 20 ms.
        let engine: Arc<dyn Engine> = Arc::new(FixedLatencyEngine { latency: Duration::from_millis(20), tokens: false });
        let batcher = BatcherConfig { batch_size: 8, deque_timeout: Duration::ZERO, workers_per_device: 1, use_deque_limit: false, token_latencies: false };
        let mut settings = Settings { offline_expected_qps: Some(350.0), ..Settings::default() };
        let devices = [engine];
        let measure = EngineMeasure { devices: &devices, source: &NoData, loaded: &[0, 1, 2], batcher };
        let line = probe(Scenario::Offline, &measure, &mut settings).unwrap();
        let qps = settings.offline_expected_qps.unwrap();
        assert!((500.0..=610.0).contains(&qps), "1.5 x about 400 samples/s, not {qps}: {line}");
        assert!(line.contains("offline_expected_qps") && line.contains("1.5x headroom"), "{line}");
        let line = rerun(363.7, &mut settings).unwrap();
        assert_eq!(settings.offline_expected_qps, Some(545.6), "1.5 x what the short run measured");
        assert!(line.contains("363.7 samples/s") && line.contains("short_run/"), "{line}");

        probe(Scenario::SingleStream, &measure, &mut settings).unwrap();
        let ns = settings.single_stream_expected_latency_ns.unwrap();
        assert!((10_000_000..=14_000_000).contains(&ns), "20 ms / 1.5, not {ns} ns");
        assert!(probe(Scenario::Server, &measure, &mut settings).unwrap_err().to_string().contains("nothing to probe"));
    }

    /// Counts the samples each call sees; answers like the null engine.
    struct Counting(std::sync::atomic::AtomicUsize);
    impl Engine for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), crate::engines::EngineError> {
            for &i in indices {
                assert_eq!(source.sample(i).len(), 4, "a loaded sample");
            }
            self.0.fetch_add(indices.len(), std::sync::atomic::Ordering::SeqCst);
            FixedLatencyEngine::NULL.infer(indices, source, outputs)
        }
    }

    struct Failing;
    impl Engine for Failing {
        fn name(&self) -> &str {
            "failing"
        }
        fn infer(&self, _: &[usize], _: &dyn SampleSource, _: &mut Vec<Vec<u8>>) -> Result<(), crate::engines::EngineError> {
            Err(crate::engines::EngineError::new(std::io::Error::other("device lost")))
        }
    }

    fn library() -> SampleLibrary {
        let lib = SampleLibrary::generated("test", 100, 16, 4, |i| (i as u32).to_le_bytes().to_vec());
        lib.load_samples(&(0..16).collect::<Vec<_>>());
        lib
    }

    fn config() -> BatcherConfig {
        BatcherConfig { batch_size: 4, deque_timeout: Duration::from_millis(1), workers_per_device: 3, use_deque_limit: false, token_latencies: false }
    }

    #[test]
    fn engines_alone_runs_every_worker_of_every_device_on_whole_batches_of_loaded_samples() {
        let engines: Vec<Arc<Counting>> = (0..2).map(|_| Arc::new(Counting(Default::default()))).collect();
        let devices: Vec<Arc<dyn Engine>> = engines.iter().map(|e| e.clone() as Arc<dyn Engine>).collect();
        let lib = library();
        let loaded: Vec<usize> = (0..16).collect();
        let m = engines_alone(&devices, &lib, &loaded, config(), Duration::from_millis(20)).unwrap();
        assert!(m.samples_per_s() > 0.0 && m.samples.is_multiple_of(4));
        for e in &engines {
            // Each of 3 workers ran its warm-up batch and at least one timed batch.
            let n = e.0.load(std::sync::atomic::Ordering::SeqCst);
            assert!(n >= 3 * 2 * 4 && n % 4 == 0, "{n}");
        }
    }

    #[test]
    fn engines_alone_reports_the_engine_error() {
        let devices: Vec<Arc<dyn Engine>> = vec![Arc::new(Failing)];
        let lib = library();
        let e = engines_alone(&devices, &lib, &(0..16).collect::<Vec<_>>(), config(), Duration::from_millis(20)).unwrap_err();
        assert!(matches!(&e, ProbeError::Engine(m) if m == "device lost"), "{e}");
    }
}
