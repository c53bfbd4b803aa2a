//! A PTDaemon stand-in for tests: it speaks, on 127.0.0.1, the text commands power-dev's server
//! (`lib/server.py` `Ptd`) sends PTDaemon and answers them as that server parses them, with
//! readings of a configured load instead of a meter's. Results measured with it are never
//! submittable (there is no meter), though its Identify reply names a supported model so that the
//! power checker's other rules can be exercised end to end: the reply's serial number
//! ([`SERIAL`]) marks its sessions, and [`caveats`] finds that mark in what a session recorded.
//!
//! What the server relies on (power.md §4, server.py c4b3ad8): `Hello` answered exactly; `RR` as
//! `Ranges,<ampAuto>,<ampRange>,<voltAuto>,<voltRange>`; `SR,V|A,...` as `Range V|A changed`; `Go`
//! starts 1 Hz readings, each written to the `-l` log with `,Mark,<mark>` (where the server reads the
//! ranging maxima); `RL,*,*` refused as by a one-channel meter, then `RL` as `Last <N> samples` and
//! N unread readings; stdout lines `MM-DD-YYYY HH:MM:SS.mmm: <msg>` (the server tees them into
//! ptd_logs.txt, where the checker looks for uncertainty checking, the Go marks and
//! `Completed test`), every reading among them.

use super::session::{POWER_DIR, SERVER_JSON, format_time, identify_reply};
use crate::submittable::NonSubmittable;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The Go reply the power checker requires (for `Go,1000,0,...`).
const GO_REPLY: &str = "Starting untimed measurement, maximum 500000 samples at {ms}ms with {rampup} rampup samples";
const VOLTS: f64 = 230.0;
/// The serial number of the stand-in's Identify reply: the mark of its sessions. power-dev's
/// server records the reply in server.json (`ptd_messages`); the checkers read only the model (the
/// first field) and the version (after `version=`, up to `-`), so the mark passes them.
pub const SERIAL: &str = "STANDIN0000";
const POWER_FACTOR: f64 = 0.98;

/// What the stand-in measures and how it presents itself.
#[derive(Debug, Clone)]
pub struct StandInOptions {
    /// 0: any free port (see [`StandIn::port`]).
    pub port: u16,
    /// The load's power.
    pub watts: f64,
    /// The load during a Go whose mark ends in `_testing` (default: `watts`); a lower one breaks
    /// the 95 % rule.
    pub testing_watts: Option<f64>,
    /// The meter's uncertainty, in percent; above 1 % each testing reading logs PTDaemon's warning,
    /// which the power checker makes an error.
    pub uncertainty_percent: f64,
    /// The `-l` log PTDaemon appends every reading to.
    pub log: Option<PathBuf>,
    /// Identify's model and version (the checker wants a supported Yokogawa and 1.11.1).
    pub model: String,
    pub version: String,
    /// Time between readings (PTDaemon's is the Go's 1000 ms; tests shorten it).
    pub period: Duration,
    /// A fault, at the first command that contains its text.
    pub fault: Option<Fault>,
}

/// What goes wrong, for the tests of what the workflow does then.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// The connection drops (a meter host that goes away mid-session).
    Drop(String),
    /// The command is answered with an `Error:` line (a meter refusing it).
    Error(String),
}

impl Default for StandInOptions {
    fn default() -> StandInOptions {
        StandInOptions {
            port: 8888,
            watts: 100.0,
            testing_watts: None,
            uncertainty_percent: 0.1,
            log: None,
            model: "YokogawaWT310".into(),
            version: "1.11.1".into(),
            period: Duration::from_secs(1),
            fault: None,
        }
    }
}

impl StandInOptions {
    /// Takes `-l <log>` and `-p <port>` from the command line power-dev's server starts PTDaemon
    /// with (`<ptd> -l <log> -p <port> [-b n] [-c ch] [dcFlag] [ifFlag] <deviceType> <devicePort>`);
    /// the meter's own arguments are accepted and ignored.
    pub fn with_ptd_argv(mut self, argv: &[String]) -> Result<StandInOptions, String> {
        let mut args = argv.iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("PTDaemon's {arg} needs a value"));
            match arg.as_str() {
                "-l" => self.log = Some(PathBuf::from(value()?)),
                "-p" => self.port = value()?.parse().map_err(|_| format!("PTDaemon's -p: not a port: {argv:?}"))?,
                "-b" | "-c" => {
                    value()?;
                }
                _ => {}
            }
        }
        Ok(self)
    }
}

/// A meter range: automatic or fixed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Range {
    Auto,
    Fixed(f64),
}

impl Range {
    /// `RR`'s `<auto>,<range>` pair.
    fn reported(self) -> String {
        match self {
            Range::Auto => "1,-1.000000".into(),
            Range::Fixed(r) => format!("0,{r:.6}"),
        }
    }
}

/// What the meter is doing.
struct Meter {
    options: StandInOptions,
    volts: Range,
    amps: Range,
    /// The mark of the running measurement.
    measuring: Option<String>,
    /// Readings taken since the last `RL` (without their mark).
    unread: Vec<String>,
    taken: u64,
    last_watts: f64,
    out: Box<dyn Write + Send>,
    log: Option<std::fs::File>,
}

fn now_micros() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

impl Meter {
    /// A stdout line as PTDaemon prints it (the server tees stdout into ptd_logs.txt).
    fn say(&mut self, message: &str) {
        let _ = writeln!(self.out, "{}: {message}", format_time(now_micros()));
        let _ = self.out.flush();
    }

    fn watts(&self) -> f64 {
        let testing = self.measuring.as_deref().is_some_and(|m| m.ends_with("_testing"));
        let base = if testing { self.options.testing_watts.unwrap_or(self.options.watts) } else { self.options.watts };
        // A small repeating ripple, so readings are not all equal.
        base + (self.taken % 5) as f64 * 0.1
    }

    /// One reading, if a measurement runs: kept for `RL` and appended, marked, to the log.
    fn sample(&mut self) {
        let Some(mark) = self.measuring.clone() else { return };
        let watts = self.watts();
        let line = format!("Time,{},Watts,{watts:.6},Volts,{VOLTS:.6},Amps,{:.6},PF,{POWER_FACTOR:.6}", format_time(now_micros()), watts / (VOLTS * POWER_FACTOR));
        self.taken += 1;
        self.last_watts = watts;
        if let Some(log) = &mut self.log {
            let _ = writeln!(log, "{line},Mark,{mark}");
            let _ = log.flush();
        }
        // Every reading on stdout too: the server's Tee holds PTDaemon's output in an 8 KiB
        // buffer, and ptd_logs.txt (copied at testing stop) gets only what was pushed through.
        self.say(&line);
        let uncertainty = self.options.uncertainty_percent;
        if uncertainty > 1.0 && mark.ends_with("_testing") {
            self.say(&format!("WARNING: Uncertainty {uncertainty:.2}%, which is above 1.00% limit for the last sample!"));
        }
        self.unread.push(line);
    }

    /// The fault `command` sets off (once), said on stdout as it happens.
    fn fault(&mut self, command: &str) -> Option<Fault> {
        let fault = self.options.fault.take_if(|f| match f {
            Fault::Drop(text) | Fault::Error(text) => command.contains(text.as_str()),
        })?;
        self.say(&format!("stand-in fault: {fault:?} at '{command}'"));
        Some(fault)
    }

    /// The reply lines to one command.
    fn reply(&mut self, command: &str) -> Vec<String> {
        let fields: Vec<&str> = command.split(',').collect();
        let one = |s: String| vec![s];
        match fields[..] {
            ["Hello"] => one("Hello, PTDaemon here!".into()),
            ["Identify"] => one(format!("{},{SERIAL},version={}-standin-20261128,not a meter", self.options.model, self.options.version)),
            ["RR"] => one(format!("Ranges,{},{}", self.amps.reported(), self.volts.reported())),
            ["SR", which @ ("V" | "A"), value] => {
                let range = match value {
                    "Auto" => Range::Auto,
                    v => match v.parse::<f64>() {
                        Ok(r) if r > 0.0 => Range::Fixed(r),
                        _ => return one(format!("Error: invalid range value '{v}'")),
                    },
                };
                *(if which == "V" { &mut self.volts } else { &mut self.amps }) = range;
                one(format!("Range {which} changed"))
            }
            ["Go", ms, rampup, mark] => {
                if self.measuring.is_some() {
                    return one("Error: measurement already running".into());
                }
                self.measuring = Some(mark.to_string());
                self.unread.clear();
                self.say(&format!("Go with mark '{mark}'"));
                one(GO_REPLY.replace("{ms}", ms).replace("{rampup}", rampup))
            }
            ["Stop"] => match self.measuring.take() {
                Some(_) => {
                    self.say("Completed test");
                    one("Stopping untimed measurement".into())
                }
                None => one("Error: no measurement to stop".into()),
            },
            // A one-channel AC meter: the server then asks with plain RL.
            ["RL", "*", "*"] => one("Error: Invalid number of parameters".into()),
            ["RL"] => {
                let mut lines = vec![format!("Last {} samples", self.unread.len())];
                lines.append(&mut self.unread);
                lines
            }
            ["Watts"] => one(format!("Watts,{:.6}", self.last_watts)),
            ["Uncertainty"] => one(format!("Uncertainty,{:.6}", self.options.uncertainty_percent / 100.0)),
            _ => one("Unknown command".into()),
        }
    }
}

/// A bound stand-in; [`StandIn::serve`] answers its connections until the process ends.
pub struct StandIn {
    listener: TcpListener,
    meter: Arc<Mutex<Meter>>,
}

fn lock(meter: &Mutex<Meter>) -> MutexGuard<'_, Meter> {
    // A panicked connection thread leaves the meter usable: its state is plain data.
    meter.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl StandIn {
    /// Binds 127.0.0.1:`options.port`, opens the log, and prints PTDaemon's start-up line.
    pub fn bind(options: StandInOptions, out: Box<dyn Write + Send>) -> std::io::Result<StandIn> {
        let listener = TcpListener::bind(("127.0.0.1", options.port))?;
        let log = options.log.as_ref().map(|p| std::fs::OpenOptions::new().create(true).append(true).open(p)).transpose()?;
        let model = options.model.clone();
        let mut meter = Meter { options, volts: Range::Auto, amps: Range::Auto, measuring: None, unread: Vec::new(), taken: 0, last_watts: 0.0, out, log };
        meter.say(&format!("Uncertainty checking for {model} is activated"));
        Ok(StandIn { listener, meter: Arc::new(Mutex::new(meter)) })
    }

    pub fn port(&self) -> std::io::Result<u16> {
        Ok(self.listener.local_addr()?.port())
    }

    /// Takes readings every period and answers connections one at a time, as PTDaemon does.
    pub fn serve(self) -> std::io::Result<()> {
        let meter = Arc::clone(&self.meter);
        let period = lock(&meter).options.period;
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(period);
                lock(&meter).sample();
            }
        });
        for stream in self.listener.incoming() {
            // A dropped connection ends that client, not the stand-in.
            let _ = self.answer(stream?);
        }
        Ok(())
    }

    fn answer(&self, stream: TcpStream) -> std::io::Result<()> {
        let mut writer = stream.try_clone()?;
        for line in BufReader::new(stream).lines() {
            let line = line?;
            let command = line.trim_end_matches('\r');
            let mut meter = lock(&self.meter);
            let replies = match meter.fault(command) {
                // Returning drops both halves of the connection.
                Some(Fault::Drop(_)) => return Ok(()),
                Some(Fault::Error(_)) => vec![format!("Error: stand-in fault at '{command}'")],
                None => meter.reply(command),
            };
            drop(meter);
            for reply in replies {
                writer.write_all(reply.as_bytes())?;
                writer.write_all(b"\r\n")?;
            }
        }
        Ok(())
    }
}

/// Why the session under `session_dir` can never be submitted, from what its server.json recorded:
/// the stand-in's mark in the Identify reply. An unreadable server.json gives nothing here (the
/// power rules refuse it).
pub fn caveats(session_dir: &Path) -> Vec<NonSubmittable> {
    let text = std::fs::read_to_string(session_dir.join(POWER_DIR).join(SERVER_JSON)).unwrap_or_default();
    let server: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let identify = identify_reply(&server);
    let marked = identify.split(',').nth(1) == Some(SERIAL);
    marked.then(|| NonSubmittable::PowerStandIn { identify: identify.to_string() }).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::fixture::tempdir;
    use crate::power::session::parse_time;

    /// Output shared with the test.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// power-dev's Proto: a command out with `\r\n`, one reply line back with `\r` stripped.
    struct Client(BufReader<TcpStream>, TcpStream);

    impl Client {
        fn cmd(&mut self, command: &str) -> String {
            self.1.write_all(format!("{command}\r\n").as_bytes()).unwrap();
            self.line()
        }
        fn line(&mut self) -> String {
            let mut line = String::new();
            assert!(self.0.read_line(&mut line).unwrap() > 0, "the stand-in hung up");
            assert!(line.ends_with("\r\n"), "{line:?}");
            line.trim_end_matches(['\r', '\n']).to_string()
        }
        /// The server's grab_power_data: RL,*,*, then RL on "Invalid number of parameters".
        fn readings(&mut self) -> Vec<String> {
            let mut header = self.cmd("RL,*,*");
            if header.contains("Invalid number of parameters") {
                header = self.cmd("RL");
            }
            let n: usize = header.split(' ').nth(1).unwrap().parse().unwrap();
            (0..n).map(|_| self.line()).collect()
        }
    }

    /// The columns server.py's RE_PTD_LOG reads, and the Volts/Amps of a log line with `mark`.
    fn volts_amps(line: &str, mark: &str) -> Option<(f64, f64)> {
        let f: Vec<&str> = line.split(',').collect();
        let shape = f.len() == 12 && [f[0], f[2], f[4], f[6], f[8], f[10]] == ["Time", "Watts", "Volts", "Amps", "PF", "Mark"];
        (shape && f[11] == mark && parse_time(f[1]).is_some()).then(|| (f[5].parse().unwrap(), f[7].parse().unwrap()))
    }

    #[test]
    fn a_fault_strikes_once_at_the_first_command_containing_its_text() {
        for (fault, at_go) in [(Fault::Error("_testing".into()), Some("Error: stand-in fault at 'Go,1000,0,s_testing'")), (Fault::Drop("_testing".into()), None)] {
            let options = StandInOptions { port: 0, fault: Some(fault.clone()), ..Default::default() };
            let standin = StandIn::bind(options, Box::new(Shared::default())).unwrap();
            let port = standin.port().unwrap();
            std::thread::spawn(move || standin.serve());
            let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let mut ptd = Client(BufReader::new(stream.try_clone().unwrap()), stream);
            assert_eq!(ptd.cmd("Go,1000,0,s_ranging"), "Starting untimed measurement, maximum 500000 samples at 1000ms with 0 rampup samples");
            assert_eq!(ptd.cmd("Stop"), "Stopping untimed measurement");
            ptd.1.write_all(b"Go,1000,0,s_testing\r\n").unwrap();
            let mut line = String::new();
            let read = ptd.0.read_line(&mut line).unwrap();
            match at_go {
                Some(reply) => {
                    assert_eq!(line.trim_end(), reply);
                    // Once: the next Go is measured.
                    assert!(ptd.cmd("Go,1000,0,s_testing").starts_with("Starting untimed"), "{fault:?}");
                }
                None => assert_eq!(read, 0, "the connection dropped: {line:?}"),
            }
        }
    }

    #[test]
    fn the_ptd_command_line_of_power_devs_server_gives_the_log_and_port() {
        let argv: Vec<String> = ["-l", "/tmp/x/ptd_logfile_1.log", "-p", "8890", "-c", "1,2", "-U", "77", "C2PH13047V"].map(String::from).to_vec();
        let options = StandInOptions::default().with_ptd_argv(&argv).unwrap();
        assert_eq!((options.port, options.log), (8890, Some(PathBuf::from("/tmp/x/ptd_logfile_1.log"))));
        assert!(StandInOptions::default().with_ptd_argv(&["-p".into(), "x".into()]).is_err());
        assert!(StandInOptions::default().with_ptd_argv(&["-l".into()]).is_err());
    }

    #[test]
    fn an_uncertainty_above_one_percent_logs_ptdaemons_warning_during_testing_only() {
        let out = Shared::default();
        let options = StandInOptions { port: 0, uncertainty_percent: 1.5, ..Default::default() };
        let standin = StandIn::bind(options, Box::new(out.clone())).unwrap();
        let mut meter = lock(&standin.meter);
        for mode in ["ranging", "testing"] {
            meter.reply(&format!("Go,1000,0,s_{mode}"));
            meter.sample();
            meter.reply("Stop");
        }
        assert_eq!(meter.reply("Uncertainty"), ["Uncertainty,0.015000"]);
        let printed = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let warnings: Vec<(usize, &str)> = printed.lines().enumerate().filter(|(_, l)| l.contains("WARNING:")).collect();
        // Lines: activation, Go, reading, Completed, Go, reading, the warning, Completed.
        assert_eq!(warnings.len(), 1, "{printed}");
        assert_eq!(warnings[0].0, 6, "{printed}");
        assert!(warnings[0].1.ends_with(": WARNING: Uncertainty 1.50%, which is above 1.00% limit for the last sample!"), "{printed}");
    }

    #[test]
    fn the_stand_in_answers_a_session_as_power_devs_server_drives_it() {
        let dir = tempdir("standin");
        let log = dir.join("ptd_logfile_1.log");
        let out = Shared::default();
        let options = StandInOptions { port: 0, watts: 120.0, testing_watts: Some(110.0), log: Some(log.clone()), period: Duration::from_millis(20), ..Default::default() };
        let standin = StandIn::bind(options, Box::new(out.clone())).unwrap();
        let port = standin.port().unwrap();
        std::thread::spawn(move || standin.serve());
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut ptd = Client(BufReader::new(stream.try_clone().unwrap()), stream);
        // Ptd._start and _get_initial_range.
        assert_eq!(ptd.cmd("Hello"), "Hello, PTDaemon here!");
        let identify = ptd.cmd("Identify");
        assert!(identify.starts_with("YokogawaWT310,") && identify.contains("version=1.11.1-"), "{identify}");
        let ranges = ptd.cmd("RR");
        let r: Vec<&str> = ranges.split(',').collect();
        assert_eq!((r[0], r[1], r[3]), ("Ranges", "1", "1"), "auto ranges, so the server restores Auto: {ranges}");
        // Session.start(RANGING) ... stop.
        assert_eq!(ptd.cmd("SR,V,Auto"), "Range V changed");
        assert_eq!(ptd.cmd("SR,A,Auto"), "Range A changed");
        assert_eq!(ptd.cmd("SR,A,Auto"), "Range A changed");
        let session = "2026-11-29_01-00-00_standin";
        assert_eq!(ptd.cmd(&format!("Go,1000,0,{session}_ranging")), "Starting untimed measurement, maximum 500000 samples at 1000ms with 0 rampup samples");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(ptd.cmd("Stop"), "Stopping untimed measurement");
        let ranging = ptd.readings();
        assert!(ranging.len() >= 3, "{ranging:?}");
        assert!(ranging.iter().all(|l| l.starts_with("Time,") && l.contains(",Watts,12") && !l.contains("Mark")), "{ranging:?}");
        // max_volts_amps_avg_watts over the log's ranging lines.
        let text = std::fs::read_to_string(&log).unwrap();
        let marked: Vec<(f64, f64)> = text.lines().filter_map(|l| volts_amps(l, &format!("{session}_ranging"))).collect();
        assert!(marked.len() >= ranging.len(), "{text}");
        let max_amps = marked.iter().map(|(_, a)| *a).fold(0.0, f64::max);
        assert!((120.0 / (230.0 * 0.98)..=120.4 / (230.0 * 0.98) + 1e-6).contains(&max_amps), "{max_amps}");
        // Session.start(TESTING) ... stop, then terminate's restore.
        assert_eq!(ptd.cmd("SR,V,230.000000"), "Range V changed");
        assert_eq!(ptd.cmd(&format!("SR,A,{}", max_amps * 1.1)), "Range A changed");
        assert!(ptd.cmd("RR").starts_with("Ranges,0,0.5"), "fixed ranges are reported");
        assert!(ptd.cmd(&format!("Go,1000,0,{session}_testing")).starts_with("Starting untimed"));
        std::thread::sleep(Duration::from_millis(200));
        assert!(ptd.cmd("Watts").starts_with("Watts,11"));
        assert!(ptd.cmd("Uncertainty").starts_with("Uncertainty"));
        assert_eq!(ptd.cmd("Stop"), "Stopping untimed measurement");
        let testing = ptd.readings();
        assert!(!testing.is_empty() && testing.iter().all(|l| l.contains(",Watts,11")), "{testing:?}");
        assert_eq!(ptd.cmd("Stop"), "Error: no measurement to stop");
        assert_eq!(ptd.cmd("SR,V,Auto"), "Range V changed");
        assert_eq!(ptd.cmd("SR,A,Auto"), "Range A changed");
        assert!(ptd.cmd("SR,A,lots").starts_with("Error"), "the server drops a session on an Error reply");
        assert_eq!(ptd.cmd("Bogus"), "Unknown command");
        // stdout: what the checker reads from ptd_logs.txt, in order, each with PTD's stamp.
        let printed = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(printed.lines().filter(|l| l.contains(": Time,")).count() >= ranging.len() + testing.len(), "{printed}");
        let messages: Vec<&str> = printed
            .lines()
            .map(|l| {
                assert!(parse_time(&l[..23]).is_some() && &l[23..25] == ": ", "{l}");
                &l[25..]
            })
            .filter(|m| !m.starts_with("Time,"))
            .collect();
        assert_eq!(
            messages,
            [
                "Uncertainty checking for YokogawaWT310 is activated",
                &format!("Go with mark '{session}_ranging'"),
                "Completed test",
                &format!("Go with mark '{session}_testing'"),
                "Completed test"
            ]
        );
    }
}
