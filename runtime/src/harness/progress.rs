//! Progress of long work (LoadGen runs, ImageNet preprocessing): a bar when stderr is a
//! terminal (indicatif), otherwise a plain log line every `--progress_interval` (30 s by default),
//! so a run under `nohup`, `tee` or a batch scheduler still says how far it is.
//!
//! Each line reads `<label>: <done> of <expected> <unit>, <elapsed> s[ of <minimum> s], <rate>/s`:
//! the expected count where it is known (an accuracy run's set, images to preprocess), the
//! minimum duration where one applies (performance runs).

use crate::logging;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What is being counted.
#[derive(Debug, Clone)]
pub struct Work {
    pub label: String,
    /// What one count is ("samples", "images").
    pub unit: &'static str,
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
    let bar = ProgressBar::with_draw_target(work.expected, ProgressDrawTarget::stderr());
    let count = if work.expected.is_some() { "{pos}/{len}" } else { "{pos}" };
    let template = format!("{{prefix}}: {count} {} {{msg}}", work.unit);
    bar.set_style(ProgressStyle::with_template(&template).expect("a valid template"));
    bar.set_prefix(work.label.clone());
    bar
}

/// Elapsed time (against the minimum) and the mean rate.
fn timing(work: &Work, elapsed: Duration, done: u64) -> String {
    let seconds = elapsed.as_secs_f64();
    let minimum = work.min_duration.map(|m| format!(" of {:.0} s", m.as_secs_f64())).unwrap_or_default();
    format!("{seconds:.0} s{minimum}, {:.1}/s", done as f64 / seconds.max(1e-9))
}

/// One progress line for a log.
pub fn line(work: &Work, done: u64, elapsed: Duration) -> String {
    let expected = work.expected.map(|e| format!(" of {e}")).unwrap_or_default();
    format!("{}: {done}{expected} {}, {}", work.label, work.unit, timing(work, elapsed, done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_the_count_the_time_and_the_rate() {
        let run = Work { label: "resnet50 Offline PerformanceOnly".into(), unit: "samples", expected: None, min_duration: Some(Duration::from_secs(600)) };
        assert_eq!(line(&run, 12_000, Duration::from_secs(30)), "resnet50 Offline PerformanceOnly: 12000 samples, 30 s of 600 s, 400.0/s");
        let accuracy = Work { label: "resnet50 Offline AccuracyOnly".into(), unit: "samples", expected: Some(50_000), min_duration: None };
        assert_eq!(line(&accuracy, 5_000, Duration::from_secs(10)), "resnet50 Offline AccuracyOnly: 5000 of 50000 samples, 10 s, 500.0/s");
    }
}
