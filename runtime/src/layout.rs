//! Where a round wants each file of a submission: the one place that knows the tree.
//!
//! Facts from the official checker (mlcommons/inference `tools/submission/submission_checker/constants.py`,
//! `*_PATH` tables, and `loader.py`): every round keeps `systems/<system>.json` and
//! `results/<system>/<benchmark>/<Scenario>/{performance/run_1, accuracy}`. v6.x puts
//! `measurements.json`, `user.conf`, `README.md` and the `TEST0x/` directories inside that scenario
//! directory and code in `src/`; v5.x has top-level `measurements/<system>/<benchmark>/<Scenario>/`
//! (with `<system>_<Scenario>.json`) and `compliance/<system>/<benchmark>/<Scenario>/TEST0x/` trees,
//! and code in `code/`.

use mlperf_config::{AuditTest, Layout, Scenario};
use std::fmt;
use std::path::{Path, PathBuf};

/// LoadGen's log file names (fixed by LoadGen; the checker looks for exactly these).
pub const SUMMARY_LOG: &str = "mlperf_log_summary.txt";
pub const DETAIL_LOG: &str = "mlperf_log_detail.txt";
pub const ACCURACY_LOG: &str = "mlperf_log_accuracy.json";
pub const TRACE_LOG: &str = "mlperf_log_trace.json";
/// The accuracy script's output next to the accuracy log (holds the `hash=` line after truncation).
pub const ACCURACY_TXT: &str = "accuracy.txt";
/// Compliance verification outputs inside a `TEST0x/` directory.
pub const VERIFY_ACCURACY: &str = "verify_accuracy.txt";
pub const VERIFY_PERFORMANCE: &str = "verify_performance.txt";
pub const VERIFY_OUTPUT_LEN: &str = "verify_output_len.txt";

/// The verify files of a compliance test's directory, the one the test is judged by first.
pub fn verify_files(test: AuditTest) -> &'static [&'static str] {
    match test {
        AuditTest::Test01 => &[VERIFY_ACCURACY, VERIFY_PERFORMANCE],
        AuditTest::Test04 => &[VERIFY_PERFORMANCE],
        AuditTest::Test06 | AuditTest::Test07 | AuditTest::Test08 => &[VERIFY_ACCURACY],
        AuditTest::Test09 => &[VERIFY_OUTPUT_LEN],
    }
}

/// The submission divisions (directory names under the submission root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Division {
    Closed,
    Open,
    Network,
}

impl Division {
    pub const ALL: [Division; 3] = [Division::Closed, Division::Open, Division::Network];

    pub const fn dir_name(self) -> &'static str {
        match self {
            Division::Closed => "closed",
            Division::Open => "open",
            Division::Network => "network",
        }
    }

    pub fn parse(text: &str) -> Option<Division> {
        Division::ALL.into_iter().find(|d| d.dir_name().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for Division {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dir_name())
    }
}

/// One result of a submission: `results/<system_name>/<bench_dir>/<Scenario>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ResultKey {
    /// The system description's name (`systems/<system_name>.json`).
    pub system_name: String,
    /// The checker's benchmark directory name (`resnet`, `bert-99`, ...).
    pub bench_dir: String,
    pub scenario: Scenario,
}

impl ResultKey {
    pub fn new(system_name: impl Into<String>, bench_dir: impl Into<String>, scenario: Scenario) -> ResultKey {
        ResultKey { system_name: system_name.into(), bench_dir: bench_dir.into(), scenario }
    }

    /// `<system_name>/<bench_dir>/<Scenario>`, the relative path every tree uses for this result.
    pub fn rel(&self) -> PathBuf {
        Path::new(&self.system_name).join(&self.bench_dir).join(self.scenario.name())
    }
}

impl fmt::Display for ResultKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.system_name, self.bench_dir, self.scenario.name())
    }
}

/// The paths of one submitter's tree (`<root>/<division>/<submitter>`) in a round's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionLayout {
    org: PathBuf,
    layout: Layout,
}

impl SubmissionLayout {
    /// `<root>/<division>/<submitter>` of a submission root.
    pub fn new(root: &Path, division: Division, submitter: &str, layout: Layout) -> SubmissionLayout {
        SubmissionLayout { org: root.join(division.dir_name()).join(submitter), layout }
    }

    /// A tree rooted directly at `org` (the generated measurement files use `measurements/<round>/`).
    pub fn at(org: PathBuf, layout: Layout) -> SubmissionLayout {
        SubmissionLayout { org, layout }
    }

    /// The submitter trees under a submission root (`<root>/<division>/<submitter>`), optionally
    /// only one submitter's (compared case-insensitively, as the checker compares names).
    pub fn submitters(root: &Path, layout: Layout, only: Option<&str>) -> Vec<SubmissionLayout> {
        let mut trees = Vec::new();
        for division in Division::ALL {
            for submitter in subdirs(&root.join(division.dir_name())) {
                if only.is_none_or(|o| o.eq_ignore_ascii_case(&submitter)) {
                    trees.push(SubmissionLayout::new(root, division, &submitter, layout));
                }
            }
        }
        trees
    }

    /// The division this tree is in (from its parent directory's name).
    pub fn division(&self) -> Option<Division> {
        self.org.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).and_then(Division::parse)
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// `<root>/<division>/<submitter>`.
    pub fn org_dir(&self) -> &Path {
        &self.org
    }

    pub fn systems_dir(&self) -> PathBuf {
        self.org.join("systems")
    }

    /// `systems/<system_name>.json`.
    pub fn system_json(&self, system_name: &str) -> PathBuf {
        self.systems_dir().join(format!("{system_name}.json"))
    }

    /// Where the code goes: `src/` (v6.x) or `code/` (v5.x); the checker requires it to exist.
    pub fn src_dir(&self) -> PathBuf {
        self.org.join(match self.layout {
            Layout::V6 => "src",
            Layout::V5 => "code",
        })
    }

    pub fn results_dir(&self) -> PathBuf {
        self.org.join("results")
    }

    /// `results/<system>/<benchmark>/<Scenario>`.
    pub fn scenario_dir(&self, key: &ResultKey) -> PathBuf {
        self.results_dir().join(key.rel())
    }

    /// The performance run the checker reads: `<scenario>/performance/run_1`.
    pub fn performance_dir(&self, key: &ResultKey) -> PathBuf {
        self.scenario_dir(key).join("performance").join("run_1")
    }

    /// `<scenario>/accuracy`: the accuracy run's logs and accuracy.txt.
    pub fn accuracy_dir(&self, key: &ResultKey) -> PathBuf {
        self.scenario_dir(key).join("accuracy")
    }

    /// The directory holding user.conf, README.md and the measurements json.
    pub fn measurements_dir(&self, key: &ResultKey) -> PathBuf {
        match self.layout {
            Layout::V6 => self.scenario_dir(key),
            Layout::V5 => self.org.join("measurements").join(key.rel()),
        }
    }

    /// `measurements.json` (v6.x) or `<system>_<Scenario>.json` (v5.x; the checker takes the first
    /// `<system>*_<Scenario>.json` or `<system>*.json` in the directory).
    pub fn measurements_json(&self, key: &ResultKey) -> PathBuf {
        let name = match self.layout {
            Layout::V6 => "measurements.json".to_string(),
            Layout::V5 => format!("{}_{}.json", key.system_name, key.scenario.name()),
        };
        self.measurements_dir(key).join(name)
    }

    pub fn user_conf(&self, key: &ResultKey) -> PathBuf {
        self.measurements_dir(key).join("user.conf")
    }

    pub fn readme(&self, key: &ResultKey) -> PathBuf {
        self.measurements_dir(key).join("README.md")
    }

    /// The directory holding this result's `TEST0x/` directories.
    pub fn compliance_dir(&self, key: &ResultKey) -> PathBuf {
        match self.layout {
            Layout::V6 => self.scenario_dir(key),
            Layout::V5 => self.org.join("compliance").join(key.rel()),
        }
    }

    /// `TEST0x/` of one compliance test.
    pub fn test_dir(&self, key: &ResultKey, test: AuditTest) -> PathBuf {
        self.compliance_dir(key).join(test.name())
    }

    /// `TEST0x/performance/run_1` (TEST01, TEST04).
    pub fn test_performance_dir(&self, key: &ResultKey, test: AuditTest) -> PathBuf {
        self.test_dir(key, test).join("performance").join("run_1")
    }

    /// `TEST0x/accuracy` (TEST01, TEST06, TEST07, TEST09).
    pub fn test_accuracy_dir(&self, key: &ResultKey, test: AuditTest) -> PathBuf {
        self.test_dir(key, test).join("accuracy")
    }

    /// The accuracy directories truncation processes for a result, as the official
    /// truncate_accuracy_log.py walks them: `accuracy/` and the `TEST01`/`TEST07`/`TEST09`
    /// `accuracy/` directories below the scenario directory. It walks `results/` only, so in the v5
    /// layout (TEST dirs under `compliance/`) only `accuracy/` is truncated.
    pub fn truncated_accuracy_dirs(&self, key: &ResultKey) -> Vec<(PathBuf, Option<AuditTest>)> {
        let mut dirs = vec![(self.accuracy_dir(key), None)];
        if self.layout == Layout::V6 {
            dirs.extend(TRUNCATED_TESTS.iter().map(|&t| (self.test_accuracy_dir(key, t), Some(t))));
        }
        dirs
    }

    /// Every result below `results/` (`<system>/<benchmark>/<Scenario>` directories whose last
    /// component is a scenario name), sorted.
    pub fn results(&self) -> Vec<ResultKey> {
        let mut keys = Vec::new();
        for system in subdirs(&self.results_dir()) {
            for bench in subdirs(&self.results_dir().join(&system)) {
                for scenario in subdirs(&self.results_dir().join(&system).join(&bench)) {
                    if let Some(s) = Scenario::parse(&scenario).filter(|s| s.name() == scenario) {
                        keys.push(ResultKey::new(system.clone(), bench.clone(), s));
                    }
                }
            }
        }
        keys.sort();
        keys
    }
}

/// Compliance tests whose `TEST0x/accuracy/mlperf_log_accuracy.json` the official truncation also
/// truncates (truncate_accuracy_log.py processes TEST01, TEST07 and TEST09 subdirectories).
pub const TRUNCATED_TESTS: [AuditTest; 3] = [AuditTest::Test01, AuditTest::Test07, AuditTest::Test09];

/// Names of the subdirectories of `dir`, sorted (empty when it does not exist). Links are never
/// followed, neither `dir` nor its entries: a link in a tree could lead anywhere, `/` included
/// (`check::entries` reports them).
fn subdirs(dir: &Path) -> Vec<String> {
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Vec::new();
    }
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).filter_map(|e| e.file_name().to_str().map(String::from)).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Whether a system.json `system_type` ("edge", "datacenter,edge", ...) lists edge: only edge
/// systems may submit inferred results.
pub fn is_edge(system_type: &str) -> bool {
    system_type.split(',').any(|t| t.trim() == "edge")
}

/// Whether the checker lets an edge system's `to` result be inferred from a `from` log.
pub fn inferable(from: Scenario, to: Scenario) -> bool {
    use Scenario::{MultiStream, Offline, SingleStream};
    matches!((from, to), (SingleStream, MultiStream) | (SingleStream, Offline) | (MultiStream, Offline))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ResultKey {
        ResultKey::new("CPU-dev_TRT", "resnet", Scenario::Offline)
    }

    #[test]
    fn v6_keeps_everything_in_the_scenario_dir() {
        let l = SubmissionLayout::new(Path::new("sub"), Division::Closed, "Acme", Layout::V6);
        let s = "sub/closed/Acme/results/CPU-dev_TRT/resnet/Offline";
        assert_eq!(l.org_dir(), Path::new("sub/closed/Acme"));
        assert_eq!(l.system_json("CPU-dev_TRT"), Path::new("sub/closed/Acme/systems/CPU-dev_TRT.json"));
        assert_eq!(l.src_dir(), Path::new("sub/closed/Acme/src"));
        assert_eq!(l.scenario_dir(&key()), Path::new(s));
        assert_eq!(l.performance_dir(&key()), Path::new(s).join("performance/run_1"));
        assert_eq!(l.accuracy_dir(&key()), Path::new(s).join("accuracy"));
        assert_eq!(l.measurements_json(&key()), Path::new(s).join("measurements.json"));
        assert_eq!(l.user_conf(&key()), Path::new(s).join("user.conf"));
        assert_eq!(l.readme(&key()), Path::new(s).join("README.md"));
        assert_eq!(l.test_dir(&key(), AuditTest::Test04), Path::new(s).join("TEST04"));
        assert_eq!(l.test_performance_dir(&key(), AuditTest::Test01), Path::new(s).join("TEST01/performance/run_1"));
        assert_eq!(l.test_accuracy_dir(&key(), AuditTest::Test01), Path::new(s).join("TEST01/accuracy"));
    }

    #[test]
    fn v5_has_measurements_and_compliance_trees_and_code() {
        let l = SubmissionLayout::new(Path::new("sub"), Division::Open, "Acme", Layout::V5);
        let org = Path::new("sub/open/Acme");
        assert_eq!(l.src_dir(), org.join("code"));
        assert_eq!(l.performance_dir(&key()), org.join("results/CPU-dev_TRT/resnet/Offline/performance/run_1"));
        assert_eq!(l.accuracy_dir(&key()), org.join("results/CPU-dev_TRT/resnet/Offline/accuracy"));
        let m = org.join("measurements/CPU-dev_TRT/resnet/Offline");
        assert_eq!(l.measurements_dir(&key()), m);
        assert_eq!(l.measurements_json(&key()), m.join("CPU-dev_TRT_Offline.json"));
        assert_eq!(l.user_conf(&key()), m.join("user.conf"));
        assert_eq!(l.readme(&key()), m.join("README.md"));
        assert_eq!(l.test_dir(&key(), AuditTest::Test01), org.join("compliance/CPU-dev_TRT/resnet/Offline/TEST01"));
    }

    #[test]
    fn truncation_covers_accuracy_and_the_officially_truncated_tests() {
        let s = Path::new("o/results/CPU-dev_TRT/resnet/Offline");
        let v6 = SubmissionLayout::at(PathBuf::from("o"), Layout::V6).truncated_accuracy_dirs(&key());
        assert_eq!(v6[0], (s.join("accuracy"), None));
        assert_eq!(v6[1..].iter().map(|(d, t)| (d.clone(), t.unwrap())).collect::<Vec<_>>(), TRUNCATED_TESTS.map(|t| (s.join(t.name()).join("accuracy"), t)).to_vec());
        let v5 = SubmissionLayout::at(PathBuf::from("o"), Layout::V5).truncated_accuracy_dirs(&key());
        assert_eq!(v5, vec![(s.join("accuracy"), None)]);
    }

    #[test]
    fn results_lists_scenario_dirs_only() {
        let root = std::env::temp_dir().join(format!("mlperf-layout-{}", std::process::id()));
        let l = SubmissionLayout::new(&root, Division::Closed, "Acme", Layout::V6);
        for key in [key(), ResultKey::new("CPU-dev_TRT", "resnet", Scenario::SingleStream)] {
            std::fs::create_dir_all(l.performance_dir(&key)).unwrap();
        }
        std::fs::create_dir_all(l.results_dir().join("CPU-dev_TRT/resnet/notes")).unwrap();
        let found = l.results();
        let trees = SubmissionLayout::submitters(&root, Layout::V6, Some("acme"));
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(trees, vec![l.clone()]);
        assert_eq!(found, vec![key(), ResultKey::new("CPU-dev_TRT", "resnet", Scenario::SingleStream)]);
        assert_eq!(Division::parse("Closed"), Some(Division::Closed));
        assert_eq!(l.division(), Some(Division::Closed));
    }
}
