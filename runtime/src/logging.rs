//! Diagnostics through `tracing`: levels chosen with `-v` / `-q` (or `RUST_LOG`, which wins), the
//! `log` records of dependencies (tract) bridged into the same stream, and in a run's child a
//! log file in the run directory (`rundir::RUN_LOG`) that keeps everything at debug level whatever the
//! terminal shows.
//!
//! On stderr, info lines are the message alone, warnings and errors carry `warning:` / `error:`,
//! and debug and trace lines their level and where they come from. Results (tables, paths) are
//! not diagnostics: commands print them on stdout, which `-q` leaves alone.

use std::fmt;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, time::Uptime};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer};

/// How often progress is logged when stderr is not a terminal, unless `--progress_interval` says.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(30);

/// What the command line asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOptions {
    /// `-v` given this many times: 1 debug, 2 trace.
    pub verbose: u8,
    /// `-q` given this many times: 1 errors only, 2 nothing.
    pub quiet: u8,
    /// Progress lines' period when stderr is not a terminal.
    pub progress_interval: Duration,
}

impl Default for LogOptions {
    fn default() -> LogOptions {
        LogOptions { verbose: 0, quiet: 0, progress_interval: DEFAULT_PROGRESS_INTERVAL }
    }
}

static OPTIONS: OnceLock<LogOptions> = OnceLock::new();

/// This project's crates, whose info lines are shown by default (dependencies show warnings).
const OUR_CRATES: [&str; 4] = ["mlperf", "mlperf_runtime", "mlperf_loadgen", "mlperf_config"];

impl LogOptions {
    /// The filter the flags ask for.
    fn directives(&self) -> String {
        let ours = |level: &str| OUR_CRATES.iter().map(|c| format!("{c}={level}")).collect::<Vec<_>>().join(",");
        match (self.quiet, self.verbose) {
            (q, _) if q >= 2 => "off".into(),
            (1, _) => "error".into(),
            (_, 0) => format!("warn,{}", ours("info")),
            (_, 1) => format!("warn,{}", ours("debug")),
            _ => "trace".into(),
        }
    }

    /// The flags that give a child process the same settings.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![format!("--progress_interval={}", self.progress_interval.as_secs_f64())];
        args.extend(std::iter::repeat_n("--quiet".to_string(), self.quiet as usize));
        args.extend(std::iter::repeat_n("--verbose".to_string(), self.verbose as usize));
        args
    }
}

/// The options [`init`] was given (the defaults before it).
pub fn options() -> LogOptions {
    OPTIONS.get().copied().unwrap_or_default()
}

/// Why logging could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoggingError {
    #[error("RUST_LOG={directives:?}: {source}")]
    BadRustLog { directives: String, source: tracing_subscriber::filter::ParseError },
    #[error("cannot write the run's log {}: {source}", .path.display())]
    RunLog { path: std::path::PathBuf, source: std::io::Error },
    #[error("cannot start logging: {0}")]
    Init(#[from] tracing_subscriber::util::TryInitError),
}

impl From<LoggingError> for crate::Error {
    fn from(e: LoggingError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

/// Starts logging for this process: to stderr as `options` and `RUST_LOG` say, and, for a run's
/// child, everything at debug level into `run_log` too.
pub fn init(options: LogOptions, run_log: Option<&Path>) -> Result<(), LoggingError> {
    let _ = OPTIONS.set(options);
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives).map_err(|source| LoggingError::BadRustLog { directives, source })?,
        _ => EnvFilter::new(options.directives()),
    };
    let stderr = tracing_subscriber::fmt::layer().with_writer(|| StderrBesideBars).event_format(Plain).with_filter(filter);
    let file = match run_log {
        Some(path) => {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|source| LoggingError::RunLog { path: path.to_path_buf(), source })?;
            let everything = EnvFilter::new(format!("info,{}", OUR_CRATES.map(|c| format!("{c}=debug")).join(",")));
            Some(tracing_subscriber::fmt::layer().with_writer(Mutex::new(file)).with_ansi(false).with_timer(Uptime::default()).with_filter(everything))
        }
        None => None,
    };
    Ok(tracing_subscriber::registry().with(stderr).with(file).try_init()?)
}

/// What clears the terminal's live lines (progress bars) around a log line and draws them again.
/// Registered by whatever draws them (`progress`), so the logger knows nothing above it.
static STDERR_GUARD: OnceLock<fn(&mut dyn FnMut())> = OnceLock::new();

/// Makes every stderr log line go through `suspend` (once; later calls change nothing).
pub fn guard_stderr(suspend: fn(&mut dyn FnMut())) {
    let _ = STDERR_GUARD.set(suspend);
}

/// Stderr for log lines, written with the progress bars cleared and drawn again after.
struct StderrBesideBars;

impl std::io::Write for StderrBesideBars {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut written = None;
        let mut write = || written = Some(std::io::stderr().write(buf));
        match STDERR_GUARD.get() {
            Some(suspend) => suspend(&mut write),
            None => write(),
        }
        written.expect("the guard runs the write")
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// The stderr format: info as the message alone, warnings and errors prefixed as compilers do.
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        match *meta.level() {
            Level::ERROR => write!(writer, "error: ")?,
            Level::WARN => write!(writer, "warning: ")?,
            Level::INFO => {}
            level => write!(writer, "{} {}: ", level.as_str().to_lowercase(), meta.target())?,
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// Writes results on stdout ([`out!`](crate::out), [`outln!`](crate::outln)). When the reader
/// has gone away (`mlperf ... | head`), the rest is dropped instead of panicking as `print!`
/// does, and the command goes on: its logs and exit status stay those of its work.
pub fn write_stdout(args: fmt::Arguments) {
    static GONE: AtomicBool = AtomicBool::new(false);
    if GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        GONE.store(true, Ordering::Relaxed);
        tracing::debug!("stdout closed ({e}); results are no longer printed");
    }
}

/// `print!` for results: see [`write_stdout`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::logging::write_stdout(format_args!($($arg)*)) };
}

/// `println!` for results: see [`write_stdout`].
#[macro_export]
macro_rules! outln {
    () => { $crate::logging::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::logging::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_choose_the_levels_and_pass_to_a_child() {
        let base = LogOptions::default();
        assert_eq!(base.directives(), "warn,mlperf=info,mlperf_runtime=info,mlperf_loadgen=info,mlperf_config=info");
        assert_eq!(LogOptions { verbose: 1, ..base }.directives(), "warn,mlperf=debug,mlperf_runtime=debug,mlperf_loadgen=debug,mlperf_config=debug");
        assert_eq!(LogOptions { verbose: 2, ..base }.directives(), "trace");
        assert_eq!(LogOptions { quiet: 1, verbose: 2, ..base }.directives(), "error", "-q wins over -v");
        assert_eq!(LogOptions { quiet: 2, ..base }.directives(), "off");
        let child = LogOptions { quiet: 1, progress_interval: Duration::from_millis(1500), ..base };
        assert_eq!(child.args(), ["--progress_interval=1.5", "--quiet"]);
    }
}
