//! clap value parsers for the typed flags: one value of a closed set ([`one_of`]), a comma list of
//! them or `all` ([`List`]), and NVIDIA's legacy `--config_ver` names ([`ConfigVers`]). A bad value
//! is a clap error that lists the accepted values (and the nearest one), before anything runs.

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
use std::marker::PhantomData;

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
