//! clap value parsers for the typed flags: one value of a closed set ([`one_of`]), a comma list of
//! them or `all` ([`List`]), NVIDIA's legacy `--config_ver` names ([`ConfigVers`]), and numbers
//! that must be in range: durations ([`PositiveSeconds`], [`PositiveMillis`], [`DelayMillis`]) and
//! counts from 1 ([`from_one`], [`every`]). A bad value is a clap error (exit status 2) that lists
//! the accepted values (and the nearest one) or says what a number must be, before anything runs.

use crate::TABLES;
use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, Command};
use mlperf_config::benchmark::{self, BenchmarkInfo};
use mlperf_config::{AccuracyTarget, AuditTest, Harness, PowerSetting, Round, Scenario, ServingApi, Workload};
use mlperf_runtime::results::Format;
use mlperf_runtime::rundir::plan::{BackendKind, TestMode};
use mlperf_runtime::select::ConfigVer;
use std::ffi::OsStr;
use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroU64;
use std::str::FromStr;
use std::time::Duration;

/// A closed set of values a flag takes.
pub trait Named: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// Every value, in the order `--help` lists them.
    fn all() -> Vec<Self>;
    /// The canonical spelling.
    fn name(self) -> &'static str;
    /// Whether `text` spells this value: by default the name, ignoring case, `_` and `-`.
    fn matches(self, text: &str) -> bool {
        loose(self.name()) == loose(text)
    }
}

fn loose(text: &str) -> String {
    text.to_ascii_lowercase().replace(['_', '-'], "")
}

impl Named for Scenario {
    fn all() -> Vec<Self> {
        Scenario::ALL.to_vec()
    }
    fn name(self) -> &'static str {
        Scenario::name(self)
    }
}

impl Named for TestMode {
    fn all() -> Vec<Self> {
        TestMode::ALL.to_vec()
    }
    fn name(self) -> &'static str {
        TestMode::name(self)
    }
}

impl Named for Format {
    fn all() -> Vec<Self> {
        Format::ALL.to_vec()
    }
    fn name(self) -> &'static str {
        Format::name(self)
    }
}

impl Named for BackendKind {
    fn all() -> Vec<Self> {
        BackendKind::ALL.to_vec()
    }
    fn name(self) -> &'static str {
        BackendKind::name(self)
    }
}

impl Named for ServingApi {
    fn all() -> Vec<Self> {
        ServingApi::NAMES.iter().filter_map(|n| ServingApi::parse(n)).collect()
    }
    fn name(self) -> &'static str {
        ServingApi::name(self)
    }
}

impl Named for AuditTest {
    fn all() -> Vec<Self> {
        AuditTest::ALL.to_vec()
    }
    fn name(self) -> &'static str {
        AuditTest::name(self)
    }
}

impl Named for AccuracyTarget {
    fn all() -> Vec<Self> {
        vec![AccuracyTarget::K99, AccuracyTarget::K99_9]
    }
    /// NVIDIA's spelling of the flag (`--accuracy_target=0.999`); `99.9` is accepted too.
    fn name(self) -> &'static str {
        match self {
            AccuracyTarget::K99 => "0.99",
            AccuracyTarget::K99_9 => "0.999",
        }
    }
    fn matches(self, text: &str) -> bool {
        AccuracyTarget::parse(text) == Some(self)
    }
}

impl Named for PowerSetting {
    fn all() -> Vec<Self> {
        vec![PowerSetting::MaxP, PowerSetting::MaxQ]
    }
    fn name(self) -> &'static str {
        PowerSetting::name(self)
    }
    fn matches(self, text: &str) -> bool {
        PowerSetting::parse(text) == Some(self)
    }
}

impl Named for Harness {
    fn all() -> Vec<Self> {
        Harness::ALL.to_vec()
    }
    fn name(self) -> &'static str {
        Harness::name(self)
    }
    fn matches(self, text: &str) -> bool {
        Harness::parse(text) == Some(self)
    }
}

impl Named for &'static BenchmarkInfo {
    fn all() -> Vec<Self> {
        benchmark::BENCHMARKS.iter().collect()
    }
    fn name(self) -> &'static str {
        self.id
    }
    /// The id or an alias (`resnet`, `llama3_1-8b`), ignoring case.
    fn matches(self, text: &str) -> bool {
        benchmark::find(text).is_some_and(|b| b.id == self.id)
    }
}

impl Named for &'static Round {
    /// The rounds this binary holds.
    fn all() -> Vec<Self> {
        TABLES.rounds.iter().collect()
    }
    fn name(self) -> &'static str {
        self.id.as_ref()
    }
    fn matches(self, text: &str) -> bool {
        self.id == text
    }
}

/// The error clap prints for a value outside `valid`, with the nearest valid one.
fn invalid(cmd: &Command, arg: Option<&Arg>, value: &str, valid: Vec<String>) -> clap::Error {
    let mut err = clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd);
    if let Some(arg) = arg {
        err.insert(ContextKind::InvalidArg, ContextValue::String(arg.to_string()));
    }
    err.insert(ContextKind::InvalidValue, ContextValue::String(value.to_string()));
    if let Some(near) = mlperf_config::diag::did_you_mean(value, valid.iter().map(String::as_str)) {
        err.insert(ContextKind::SuggestedValue, ContextValue::String(near.to_string()));
    }
    err.insert(ContextKind::ValidValue, ContextValue::Strings(valid));
    err
}

fn text<'v>(cmd: &Command, value: &'v OsStr) -> Result<&'v str, clap::Error> {
    value.to_str().ok_or_else(|| clap::Error::new(ErrorKind::InvalidUtf8).with_cmd(cmd))
}

fn names<T: Named>() -> Vec<String> {
    T::all().into_iter().map(|v| v.name().to_string()).collect()
}

fn find<T: Named>(text: &str) -> Option<T> {
    T::all().into_iter().find(|v| v.matches(text))
}

/// One value of `T`.
#[derive(Clone)]
pub struct OneOf<T>(PhantomData<T>);

pub fn one_of<T: Named>() -> OneOf<T> {
    OneOf(PhantomData)
}

impl<T: Named> TypedValueParser for OneOf<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &Command, arg: Option<&Arg>, value: &OsStr) -> Result<T, clap::Error> {
        let text = text(cmd, value)?;
        find(text).ok_or_else(|| invalid(cmd, arg, text, names::<T>()))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(T::all().into_iter().map(|v| PossibleValue::new(v.name()))))
    }
}

/// A comma-separated list of `T` (NVIDIA's `--benchmarks=resnet50,bert`); `all` or nothing means
/// every one, written as an empty list.
#[derive(Clone, Debug)]
pub struct List<T>(pub Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<T: Named> List<T> {
    pub fn parser() -> ListParser<T> {
        ListParser(PhantomData)
    }
}

#[derive(Clone)]
pub struct ListParser<T>(PhantomData<T>);

/// The non-empty items of a comma list, `None` for `all`.
fn items(text: &str) -> Option<Vec<&str>> {
    let items: Vec<&str> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    (!items.iter().any(|i| i.eq_ignore_ascii_case("all"))).then_some(items)
}

impl<T: Named> TypedValueParser for ListParser<T> {
    type Value = List<T>;

    fn parse_ref(&self, cmd: &Command, arg: Option<&Arg>, value: &OsStr) -> Result<List<T>, clap::Error> {
        let Some(items) = items(text(cmd, value)?) else { return Ok(List(Vec::new())) };
        let valid = || names::<T>().into_iter().chain(["all".to_string()]).collect();
        items.into_iter().map(|item| find(item).ok_or_else(|| invalid(cmd, arg, item, valid()))).collect::<Result<_, _>>().map(List)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(T::all().into_iter().map(|v| PossibleValue::new(v.name())).chain([PossibleValue::new("all")])))
    }
}

/// `--config_ver=default,high_accuracy`: NVIDIA's legacy workload names, each mapped onto a
/// workload by its substrings (`triton`, `hetero`, `high_accuracy`, `maxq`), or `all`.
#[derive(Clone, Debug, Default)]
pub struct ConfigVers(pub Vec<ConfigVer>);

impl ConfigVers {
    pub fn parser() -> ConfigVersParser {
        ConfigVersParser
    }
}

#[derive(Clone)]
pub struct ConfigVersParser;

/// The canonical workload names (what config sections are called) and `all`, for help and errors.
fn workload_names() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names = Vec::new();
        for harness in Harness::ALL {
            for accuracy in [AccuracyTarget::K99, AccuracyTarget::K99_9] {
                for power in [PowerSetting::MaxP, PowerSetting::MaxQ] {
                    // Made once per process: clap's help wants 'static names.
                    names.push(&*Workload { harness, accuracy, power }.section_name().leak());
                }
            }
        }
        names.push("all");
        names
    })
}

impl TypedValueParser for ConfigVersParser {
    type Value = ConfigVers;

    fn parse_ref(&self, cmd: &Command, arg: Option<&Arg>, value: &OsStr) -> Result<ConfigVers, clap::Error> {
        let text = text(cmd, value)?;
        let items: Vec<&str> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        let valid = || workload_names().iter().map(|n| n.to_string()).collect();
        items.into_iter().map(|item| ConfigVer::parse(item).ok_or_else(|| invalid(cmd, arg, item, valid()))).collect::<Result<_, _>>().map(ConfigVers)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(workload_names().iter().map(|n| PossibleValue::new(*n))))
    }
}

/// A finite number of `text` that `ok` accepts, else `want` (clap prints it after the flag and value).
fn number(text: &str, ok: fn(f64) -> bool, want: &str) -> Result<f64, String> {
    text.parse::<f64>().ok().filter(|v| v.is_finite() && ok(*v)).ok_or_else(|| want.to_string())
}

/// A number of seconds above 0 (`--seconds`, `--warm_up`, `--progress_interval`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PositiveSeconds(pub f64);

impl PositiveSeconds {
    pub fn parse(text: &str) -> Result<Self, String> {
        number(text, |v| v > 0.0, "give a positive number of seconds").map(PositiveSeconds)
    }

    pub fn duration(self) -> Duration {
        Duration::from_secs_f64(self.0)
    }
}

/// A number of milliseconds above 0 (`--paced_token_ms`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PositiveMillis(pub f64);

impl PositiveMillis {
    pub fn parse(text: &str) -> Result<Self, String> {
        number(text, |v| v > 0.0, "give a positive number of milliseconds").map(PositiveMillis)
    }
}

/// A delay in milliseconds, 0 or more (the stand-in's `--first_token_ms`, `--token_ms`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayMillis(pub f64);

impl DelayMillis {
    pub fn parse(text: &str) -> Result<Self, String> {
        number(text, |v| v >= 0.0, "give a number of milliseconds, 0 or more").map(DelayMillis)
    }

    pub fn duration(self) -> Duration {
        Duration::from_secs_f64(self.0 / 1e3)
    }
}

/// `--help` shows a default as the number it is (`[default: 10]`).
macro_rules! display_number {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}
display_number!(PositiveSeconds, PositiveMillis, DelayMillis);

/// A count from 1 (`--vocab`, `--threads`): `T` is a non-zero integer type, whose parse refuses 0.
pub fn from_one<T: FromStr>(text: &str) -> Result<T, String> {
    text.parse().map_err(|_| "give a whole number, at least 1".to_string())
}

/// Every n-th request (the stand-in's fault flags): requests count from 1.
pub fn every(text: &str) -> Result<NonZeroU64, String> {
    text.parse().map_err(|_| "give a whole number of requests, at least 1 (requests count from 1; 0 would never fire)".to_string())
}

#[cfg(test)]
mod tests {
    use super::super::args::Cli;
    use clap::Parser;
    use clap::error::ErrorKind;

    /// A number out of range is refused at parse time, with a usage error (exit status 2) that
    /// names the flag and what it must be.
    #[test]
    fn numbers_out_of_range_are_usage_errors() {
        for (args, flag, want) in [
            (&["systems", "--progress_interval=0"][..], "--progress_interval", "positive number of seconds"),
            (&["bench", "engine", "--seconds=0"], "--seconds", "positive number of seconds"),
            (&["bench", "engine", "--seconds=nan"], "--seconds", "positive number of seconds"),
            (&["bench", "llm", "--seconds=inf"], "--seconds", "positive number of seconds"),
            (&["bench", "llm", "--warm_up=-1"], "--warm_up", "positive number of seconds"),
            (&["bench", "llm", "--paced_token_ms=0"], "--paced_token_ms", "positive number of milliseconds"),
            (&["serve_stand_in", "--token_ms=-1"], "--token_ms", "milliseconds, 0 or more"),
            (&["serve_stand_in", "--first_token_ms=x"], "--first_token_ms", "milliseconds, 0 or more"),
            (&["serve_stand_in", "--vocab=0"], "--vocab", "at least 1"),
            (&["serve_stand_in", "--threads=0"], "--threads", "at least 1"),
            (&["serve_stand_in", "--stall_every=0"], "--stall_every", "0 would never fire"),
        ] {
            let err = Cli::try_parse_from([&["mlperf"], args].concat()).expect_err(&format!("{args:?} is refused"));
            assert_eq!((err.kind(), err.exit_code()), (ErrorKind::ValueValidation, 2), "{args:?}");
            let text = err.to_string();
            assert!(text.contains(flag) && text.contains(want), "{args:?}: {text}");
        }
    }

    #[test]
    fn numbers_in_range_and_defaults_parse() {
        let cli = Cli::try_parse_from(["mlperf", "systems", "--progress_interval=0.5"]).unwrap();
        assert_eq!(cli.progress_interval.duration(), std::time::Duration::from_millis(500));
        let cli = Cli::try_parse_from(["mlperf", "systems"]).unwrap();
        assert_eq!(cli.progress_interval.0, 30.0);
        Cli::try_parse_from(["mlperf", "serve_stand_in", "--token_ms=0", "--first_token_ms=2.5", "--vocab=1", "--die_after=1"]).unwrap();
    }
}
