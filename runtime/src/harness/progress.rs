//! A one-line progress display for long runs: samples completed, elapsed time against the minimum
//! duration, current throughput. Only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts the display if stderr is a terminal; otherwise does nothing.
    pub fn start(label: String, completed: Arc<AtomicU64>, min_duration: Duration) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::io::stderr().is_terminal().then(|| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                let (mut last_count, mut last_time) = (0u64, start);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(500));
                    let (now, count) = (Instant::now(), completed.load(Ordering::Relaxed));
                    let rate = (count - last_count) as f64 / (now - last_time).as_secs_f64().max(1e-9);
                    (last_count, last_time) = (count, now);
                    eprint!("\r{label}: {count} samples, {:.0}/{:.0} s, {rate:.1} samples/s   ", (now - start).as_secs_f64(), min_duration.as_secs_f64());
                    let _ = std::io::stderr().flush();
                }
                eprintln!();
            })
        });
        Progress { stop, thread }
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
