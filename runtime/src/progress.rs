//! Progress of long work (LoadGen runs, ImageNet preprocessing, engine building, calibration,
//! accuracy scoring): a bar when stderr is a terminal (indicatif), otherwise a plain log line
//! every `--progress_interval` (30 s by default), so a run under `nohup`, `tee` or a batch
//! scheduler still says how far it is.
//!
//! Each line reads `<label>: <done> of <expected> <unit>, <elapsed> s[ of <minimum> s], <rate>/s`:
//! the expected count where it is known (an accuracy run's set, images to preprocess), the
//! minimum duration where one applies (performance runs). A phase that counts nothing
//! ([`Progress::phase`]) reads `<label>: <elapsed> s`.

use crate::logging;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Every bar on the terminal, stacked (a phase and the work inside it show together). The first
/// use registers [`suspend`] with the logger, so log lines clear the bars instead of tearing them.
static BARS: LazyLock<MultiProgress> = LazyLock::new(|| {
    logging::guard_stderr(suspend);
    MultiProgress::with_draw_target(ProgressDrawTarget::stderr())
});

/// Runs `write` with the bars cleared and draws them again after it.
fn suspend(write: &mut dyn FnMut()) {
    BARS.suspend(write)
}

/// What is being counted.
#[derive(Debug, Clone)]
pub struct Work {
    pub label: String,
    /// What one count is ("samples", "images"); None for a phase shown by its time alone.
    pub unit: Option<&'static str>,
    /// How many there will be, where known.
    pub expected: Option<u64>,
    /// How long it must last at least (a performance run's `min_duration`).
    pub min_duration: Option<Duration>,
}

/// A running display of `completed`; it stops (and says where it ended) when dropped.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Shows `completed` against `work`: a bar on a terminal, log lines otherwise.
    pub fn start(work: Work, completed: Arc<AtomicU64>) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let interval = logging::options().progress_interval;
        let terminal = std::io::stderr().is_terminal();
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                let bar = terminal.then(|| bar(&work));
                let mut last_line = start;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(200));
                    let done = completed.load(Ordering::Relaxed);
                    match &bar {
                        Some(bar) => {
                            bar.set_position(done);
                            bar.set_message(timing(&work, start.elapsed(), done));
                        }
                        None if last_line.elapsed() >= interval => {
                            last_line = Instant::now();
                            tracing::info!("{}", line(&work, done, start.elapsed()));
                        }
                        None => {}
                    }
                }
                if let Some(bar) = bar {
                    bar.finish_and_clear();
                }
                tracing::debug!("{}", line(&work, completed.load(Ordering::Relaxed), start.elapsed()));
            })
        };
        Progress { stop, thread: Some(thread) }
    }

    /// Shows how long a phase that counts nothing has taken (an engine build, a calibration,
    /// accuracy scoring), until dropped.
    pub fn phase(label: impl Into<String>) -> Progress {
        let work = Work { label: label.into(), unit: None, expected: None, min_duration: None };
        Progress::start(work, Arc::new(AtomicU64::new(0)))
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn bar(work: &Work) -> ProgressBar {
    let bar = BARS.add(work.expected.map_or_else(ProgressBar::no_length, ProgressBar::new));
    let template = match (work.unit, work.expected) {
        (None, _) => "{prefix}: {msg} {spinner}".to_string(),
        (Some(unit), Some(_)) => format!("{{prefix}}: {{pos}}/{{len}} {unit} {{msg}}"),
        (Some(unit), None) => format!("{{prefix}}: {{pos}} {unit} {{msg}}"),
    };
    bar.set_style(ProgressStyle::with_template(&template).expect("a valid template"));
    bar.set_prefix(work.label.clone());
    bar
}

/// Elapsed time (against the minimum) and, for counted work, the mean rate.
fn timing(work: &Work, elapsed: Duration, done: u64) -> String {
    let seconds = elapsed.as_secs_f64();
    let minimum = work.min_duration.map(|m| format!(" of {:.0} s", m.as_secs_f64())).unwrap_or_default();
    match work.unit {
        Some(_) => format!("{seconds:.0} s{minimum}, {:.1}/s", done as f64 / seconds.max(1e-9)),
        None => format!("{seconds:.0} s{minimum}"),
    }
}

/// One progress line for a log.
pub fn line(work: &Work, done: u64, elapsed: Duration) -> String {
    match work.unit {
        Some(unit) => {
            let expected = work.expected.map(|e| format!(" of {e}")).unwrap_or_default();
            format!("{}: {done}{expected} {unit}, {}", work.label, timing(work, elapsed, done))
        }
        None => format!("{}: {}", work.label, timing(work, elapsed, done)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_the_count_the_time_and_the_rate() {
        let run = Work { label: "resnet50 Offline PerformanceOnly".into(), unit: Some("samples"), expected: None, min_duration: Some(Duration::from_secs(600)) };
        assert_eq!(line(&run, 12_000, Duration::from_secs(30)), "resnet50 Offline PerformanceOnly: 12000 samples, 30 s of 600 s, 400.0/s");
        let accuracy = Work { label: "resnet50 Offline AccuracyOnly".into(), unit: Some("samples"), expected: Some(50_000), min_duration: None };
        assert_eq!(line(&accuracy, 5_000, Duration::from_secs(10)), "resnet50 Offline AccuracyOnly: 5000 of 50000 samples, 10 s, 500.0/s");
        let phase = Work { label: "llama2-70b accuracy scoring".into(), unit: None, expected: None, min_duration: None };
        assert_eq!(line(&phase, 0, Duration::from_secs(90)), "llama2-70b accuracy scoring: 90 s");
    }
}
