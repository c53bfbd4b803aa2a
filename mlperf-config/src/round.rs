//! Rounds as data: `rounds/<id>.toml` (from the official checker and LoadGen of that round) parsed
//! strictly at build time and baked into the binary.

use crate::bake::Bake;
use crate::types::{AccuracyTarget, Scenario};
use config_macros::Bake;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

type Str = Cow<'static, str>;
type List<T> = Cow<'static, [T]>;

/// A small ordered map that bakes as a slice of pairs (sorted by key for deterministic output).
#[derive(Debug, Clone, PartialEq)]
pub struct Table<K: Clone + 'static, V: Clone + 'static>(pub Cow<'static, [(K, V)]>);

impl<K: Clone, V: Clone> Default for Table<K, V> {
    fn default() -> Self {
        Table(Cow::Owned(Vec::new()))
    }
}

impl<K: Clone, V: Clone> Table<K, V> {
    pub fn get<Q: PartialEq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.0.iter().find(|(k, _)| k.borrow() == key).map(|(_, v)| v)
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.0.iter().map(|(k, _)| k)
    }
}

impl<K: Bake + Clone, V: Bake + Clone> Bake for Table<K, V> {
    fn bake_into(&self, out: &mut String) {
        out.push_str("::mlperf_config::Table(");
        self.0.bake_into(out);
        out.push(')');
    }
}

impl<'de, K: Deserialize<'de> + Ord + Clone, V: Deserialize<'de> + Clone> Deserialize<'de> for Table<K, V> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<K, V>::deserialize(d)?;
        Ok(Table(Cow::Owned(map.into_iter().collect())))
    }
}

/// Seeds are written as strings in the round files: the schedule seed does not fit TOML's i64.
fn seed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map_err(|_| serde::de::Error::custom(format!("seed \"{text}\" is not an unsigned 64-bit integer")))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Bake)]
pub enum Layout {
    /// v6.x: user.conf, measurements.json, README.md and TEST0x/ inside results/<sys>/<bench>/<Scenario>/; code in src/.
    #[serde(rename = "v6")]
    V6,
    /// v5.x: top-level measurements/ and compliance/ trees; code in code/.
    #[serde(rename = "v5")]
    V5,
}

#[derive(Debug, Clone, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct LoadgenPin {
    pub version: Str,
    pub sha256: Str,
    pub git_short: Str,
}

#[derive(Debug, Clone, Copy, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct Seeds {
    #[serde(deserialize_with = "seed")]
    pub qsl: u64,
    #[serde(deserialize_with = "seed")]
    pub sample_index: u64,
    #[serde(deserialize_with = "seed")]
    pub schedule: u64,
}

#[derive(Debug, Clone, Copy, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct ComplianceSeeds {
    #[serde(deserialize_with = "seed")]
    pub accuracy_log: u64,
}

/// TEST09's bounds on the mean output length of a performance-mode run, in tokens (its audit.config's
/// `test09_min_output_tokens` / `test09_max_output_tokens`).
#[derive(Debug, Clone, Copy, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct OutputTokenBounds {
    pub min: f64,
    pub max: f64,
}

/// TEST07's compliance set (accuracy verified in performance mode on a set of its own): its size
/// and the score the audit run must reach (the audit.config's `test07_accuracy_threshold`).
#[derive(Debug, Clone, Copy, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct Test07Set {
    pub samples: u64,
    pub accuracy_threshold: f64,
}

#[derive(Debug, Clone, Copy, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct TokenLimits {
    pub ttft_ms: f64,
    pub tpot_ms: f64,
}

#[derive(Debug, Clone, Deserialize, Bake, Default)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSet {
    #[serde(default)]
    pub required: List<Str>,
    #[serde(default)]
    pub optional: List<Str>,
}

#[derive(Debug, Clone, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct AccuracyRequirement {
    pub checker_model: Str,
    pub metric: Str,
    pub target: f64,
    #[serde(default)]
    pub upper: Option<f64>,
    #[serde(default)]
    pub delta_percent: Option<f64>,
}

/// A compliance test of MLCommons' `compliance/` directory (its directory name, `TEST01`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, Bake)]
pub enum AuditTest {
    #[serde(rename = "TEST01")]
    Test01,
    #[serde(rename = "TEST04")]
    Test04,
    #[serde(rename = "TEST06")]
    Test06,
    #[serde(rename = "TEST07")]
    Test07,
    #[serde(rename = "TEST08")]
    Test08,
    #[serde(rename = "TEST09")]
    Test09,
}

impl AuditTest {
    pub const ALL: [AuditTest; 6] = [AuditTest::Test01, AuditTest::Test04, AuditTest::Test06, AuditTest::Test07, AuditTest::Test08, AuditTest::Test09];

    /// The directory and script name (`TEST01`).
    pub const fn name(self) -> &'static str {
        match self {
            AuditTest::Test01 => "TEST01",
            AuditTest::Test04 => "TEST04",
            AuditTest::Test06 => "TEST06",
            AuditTest::Test07 => "TEST07",
            AuditTest::Test08 => "TEST08",
            AuditTest::Test09 => "TEST09",
        }
    }

    /// `TEST01` or `test01`.
    pub fn parse(text: &str) -> Option<AuditTest> {
        AuditTest::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(text))
    }
}

impl std::fmt::Display for AuditTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a compliance test's audit.config does and how its verification judges it.
#[derive(Debug, Clone, Deserialize, Bake, Default)]
#[serde(deny_unknown_fields)]
pub struct Audit {
    #[serde(default)]
    pub mode: Option<u64>,
    #[serde(default)]
    pub accuracy_log_sampling_target: Option<PerModel>,
    #[serde(default)]
    pub performance_delta_percent: Option<f64>,
    #[serde(default)]
    pub tolerance_percent: Option<f64>,
    #[serde(default)]
    pub performance_issue_unique: Option<u64>,
    #[serde(default)]
    pub performance_issue_same: Option<u64>,
    #[serde(default)]
    pub performance_issue_same_index: Option<u64>,
    #[serde(default)]
    pub min_query_count: Option<PerModel>,
    #[serde(default)]
    pub min_duration_ms: Option<u64>,
    #[serde(default)]
    pub sample_concatenate_permutation: Option<u64>,
}

/// An audit value that is either the same for every model or given per LoadGen model name.
#[derive(Debug, Clone, Deserialize, Bake)]
#[serde(untagged)]
pub enum PerModel {
    All(u64),
    Models(Table<Str, u64>),
}

impl PerModel {
    pub fn for_model(&self, loadgen_model: &str) -> Option<u64> {
        match self {
            PerModel::All(v) => Some(*v),
            PerModel::Models(t) => t.get(loadgen_model).copied(),
        }
    }
}

/// One benchmark as a round has it.
#[derive(Debug, Clone, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkRound {
    pub loadgen_model: Str,
    #[serde(default)]
    pub interactive_loadgen_model: Option<Str>,
    /// Accuracy target key (`99`, `99.9`) -> checker model / results directory name.
    pub checker_models: Table<Str, Str>,
    pub dataset_size: u64,
    #[serde(default)]
    pub accuracy_sample_count: Option<u64>,
    /// A benchmark whose Interactive scenario reads its own, smaller set (qwen3-vl: 8,000 products):
    /// that set's size, its total and performance sample count in Interactive runs.
    #[serde(default)]
    pub interactive_dataset_size: Option<u64>,
    pub performance_sample_count: u64,
    #[serde(default)]
    pub offline_min_samples_per_query: Option<u64>,
    #[serde(default)]
    pub min_queries: Table<Str, u64>,
    #[serde(default)]
    pub latency_constraint_ms: Table<Str, f64>,
    #[serde(default)]
    pub llm_latency_limits: Table<Str, TokenLimits>,
    #[serde(default)]
    pub use_token_latencies: Option<bool>,
    /// TEST09's bounds (benchmarks that run it).
    #[serde(default)]
    pub test09_output_tokens: Option<OutputTokenBounds>,
    /// TEST07's set (benchmarks that run it).
    #[serde(default)]
    pub test07: Option<Test07Set>,
    /// LLMs: the reference SUT's output-length limit in tokens (its `max_tokens` / `max_new_tokens` /
    /// `MAX_OSL`, as the round file's comment cites), which a serving harness passes as the request's
    /// maximum; for a benchmark with `accuracy_max_output_tokens`, the limit of performance runs.
    /// None for benchmarks that do not generate tokens.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// LLMs whose reference generates longer in accuracy runs than in performance runs (gpt-oss-120b:
    /// 32768 vs 10240): the accuracy runs' limit. None: accuracy runs use `max_output_tokens`.
    #[serde(default)]
    pub accuracy_max_output_tokens: Option<u64>,
    /// The rules forbid reusing cached prefixes (qwen3-vl: `--no-enable-prefix-caching` in vLLM,
    /// `--disable-radix-cache` in SGLang): configs that start an engine must turn it off (C0313).
    #[serde(default)]
    pub forbids_prefix_caching: bool,
    /// System type (`datacenter`, `edge`, `datacenter_edge`) -> scenarios.
    #[serde(default)]
    pub scenarios: Table<Str, ScenarioSet>,
    #[serde(default)]
    pub compliance: List<AuditTest>,
    #[serde(default)]
    pub accuracy: List<AccuracyRequirement>,
}

impl BenchmarkRound {
    /// The checker model (and results directory) name for an accuracy target, if the round has it.
    pub fn checker_model(&self, accuracy: AccuracyTarget) -> Option<&str> {
        self.checker_models.get(accuracy.key()).map(|s| s.as_ref())
    }

    /// Scenarios a system of this type may submit (required and optional).
    pub fn allowed_scenarios(&self, system_type: &str) -> Vec<Scenario> {
        let key = system_type_key(system_type);
        self.scenarios.get(key).map(|set| set.required.iter().chain(set.optional.iter()).filter_map(|s| Scenario::parse(s)).collect()).unwrap_or_default()
    }

    /// Scenarios a system of any type may submit: what a development system may run.
    pub fn any_scenarios(&self) -> Vec<Scenario> {
        let mut all: Vec<Scenario> = self.scenarios.0.iter().flat_map(|(_, set)| set.required.iter().chain(set.optional.iter())).filter_map(|s| Scenario::parse(s)).collect();
        all.sort();
        all.dedup();
        all
    }

    /// The LoadGen model name for a scenario (Interactive runs the `-interactive` settings).
    pub fn loadgen_model_for(&self, scenario: Scenario) -> &str {
        match (scenario, &self.interactive_loadgen_model) {
            (Scenario::Interactive, Some(m)) => m,
            _ => &self.loadgen_model,
        }
    }

    pub fn latency_constraint_ns(&self, scenario: Scenario) -> Option<u64> {
        self.latency_constraint_ms.get(scenario.name()).map(|ms| (ms * 1e6).round() as u64)
    }

    /// The output-token limit of a run: `accuracy_max_output_tokens` for accuracy runs where the round
    /// has one, else `max_output_tokens` (None: the benchmark does not generate tokens).
    pub fn max_output_tokens_for(&self, accuracy_run: bool) -> Option<u64> {
        if accuracy_run { self.accuracy_max_output_tokens.or(self.max_output_tokens) } else { self.max_output_tokens }
    }

    /// The sample count of `scenario`'s set, `size` (its set's size) unless the scenario reads a
    /// set of its own.
    pub fn scenario_set_size(&self, scenario: Scenario, size: u64) -> u64 {
        match (scenario, self.interactive_dataset_size) {
            (Scenario::Interactive, Some(own)) => own,
            _ => size,
        }
    }

    pub fn accuracy_sample_count(&self) -> u64 {
        self.accuracy_sample_count.unwrap_or(self.dataset_size)
    }
}

/// `datacenter,edge` and `edge,datacenter` share one table key.
pub fn system_type_key(system_type: &str) -> &str {
    match system_type {
        "datacenter,edge" | "edge,datacenter" => "datacenter_edge",
        other => other,
    }
}

#[derive(Debug, Clone, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct Round {
    pub id: Str,
    pub checker_version: Str,
    pub layout: Layout,
    pub min_duration_ms: u64,
    pub test_run_min_duration_ms: u64,
    pub loadgen: LoadgenPin,
    pub seeds: Seeds,
    pub compliance_seeds: ComplianceSeeds,
    pub accuracy_patterns: Table<Str, Str>,
    #[serde(default)]
    pub audits: Table<AuditTest, Audit>,
    pub benchmarks: Table<Str, BenchmarkRound>,
}

impl Round {
    pub fn benchmark(&self, id: &str) -> Option<&BenchmarkRound> {
        self.benchmarks.get(id)
    }
}
