//! MBXP's code execution for mixtral-8x7b's evaluation, as `evaluate_mbxp.py` runs it through
//! mxeval (mlcommons/inference b66003e1, mxeval e09974f, the commit its README pins):
//!
//! - only C++, Python, PHP, JavaScript, Ruby and TypeScript answers are run and counted; answers
//!   in MBXP's other languages are left out of the score altogether;
//! - the solution is the answer up to its first ```` ``` ````, Python's left-stripped, every
//!   `\_` turned into `_` (Mixtral escapes underscores); the prompt is not prepended (Mixtral
//!   repeats it);
//! - Python runs `solution + "\n" + test + "\n" + "check(<entry point>)"` in a process of its own
//!   ([`RUNNER`]: destructive calls disabled, output swallowed, 20 s alarm) and passes when it
//!   raises nothing; the other languages write `solution + test` to a file, compile it where the
//!   language compiles (100 s), run it (20 s) and pass on exit status 0. TypeScript counts as
//!   compiled only when `tsc` exits with status 2, as mxeval checks (its tests' `require` calls
//!   fail the type check while the JavaScript is still written).
//!
//! Every program runs in the [`super::sandbox`]. A language whose toolchain is missing stops the
//! evaluation with the tool to install: a missing toolchain never scores zero silently.

use super::error::EvalError;
use super::sandbox;
use crate::accuracy::punkt::py_space;
use crate::progress::{Progress, Work};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The Python test runner, run by `python3 -c`.
pub const RUNNER: &str = include_str!("mbxp_runner.py");
/// `evaluate_mbxp.py`'s limit per program run, and mxeval's per compilation.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(20);
const COMPILE_TIMEOUT: Duration = Duration::from_secs(100);
const VERDICT_MARKER: &str = "mlperf-mbxp-verdict ";

/// A language `evaluate_mbxp.py` runs and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Language {
    Cpp,
    Python,
    Php,
    JavaScript,
    Ruby,
    TypeScript,
}

impl Language {
    /// The language of an MBXP id's prefix (`cpp_...`), if the evaluation counts it.
    pub fn of(tag: &str) -> Option<Language> {
        Some(match tag {
            "cpp" => Language::Cpp,
            "python" => Language::Python,
            "php" => Language::Php,
            "javascript" => Language::JavaScript,
            "ruby" => Language::Ruby,
            "typescript" => Language::TypeScript,
            _ => return None,
        })
    }

    pub fn tag(self) -> &'static str {
        match self {
            Language::Cpp => "cpp",
            Language::Python => "python",
            Language::Php => "php",
            Language::JavaScript => "javascript",
            Language::Ruby => "ruby",
            Language::TypeScript => "typescript",
        }
    }

    /// The programs mxeval runs for it (Python's is the judge's own).
    fn tools(self) -> &'static [&'static str] {
        match self {
            Language::Cpp => &["g++"],
            Language::Python => &[],
            Language::Php => &["php"],
            Language::JavaScript => &["node"],
            Language::Ruby => &["ruby"],
            Language::TypeScript => &["tsc", "node"],
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Language::Cpp => "cpp",
            Language::Python => "py",
            Language::Php => "php",
            Language::JavaScript => "js",
            Language::Ruby => "rb",
            Language::TypeScript => "ts",
        }
    }
}

/// One answer to run: its problem's language, entry point and test code, and the decoded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub language: Language,
    pub entry_point: String,
    pub test_code: String,
    pub response: String,
}

/// The code `evaluate_mbxp.py`'s worker runs for an answer.
pub fn solution(language: Language, response: &str) -> String {
    let code = response.find("```").map_or(response, |end| &response[..end]);
    let code = if language == Language::Python { code.trim_start_matches(py_space) } else { code };
    code.replace("\\_", "_")
}

/// Runs MBXP answers: `workers` at a time, each in a directory of its own under `work_dir`,
/// Python programs with `python`.
pub struct Mbxp {
    pub python: String,
    pub workers: usize,
    pub run_timeout: Duration,
    pub work_dir: PathBuf,
}

impl Default for Mbxp {
    fn default() -> Mbxp {
        Mbxp { python: "python3".into(), workers: std::thread::available_parallelism().map_or(1, |n| n.get()), run_timeout: RUN_TIMEOUT, work_dir: std::env::temp_dir() }
    }
}

impl Mbxp {
    /// Whether each task passes its tests, in order. Fails, before running anything, when a
    /// language of `tasks` has no toolchain here or generated code cannot be cut from the network.
    pub fn judge(&self, tasks: &[Task]) -> Result<Vec<bool>, EvalError> {
        let mut per_language: BTreeMap<Language, usize> = BTreeMap::new();
        for task in tasks {
            *per_language.entry(task.language).or_default() += 1;
        }
        for (&language, &count) in &per_language {
            let python = [self.python.as_str()];
            let tools = if language == Language::Python { &python[..] } else { language.tools() };
            for tool in tools {
                if let Err(source) = Command::new(tool).arg("--version").output() {
                    return Err(EvalError::Toolchain { language: language.tag(), count, tool: tool.to_string(), source });
                }
            }
        }
        if per_language.keys().any(|l| matches!(l, Language::JavaScript | Language::TypeScript)) {
            self.require_lodash()?;
        }
        sandbox::check_isolation("MBXP's generated code")?;
        let judged = Arc::new(AtomicU64::new(0));
        let _progress = Progress::start(Work { label: "MBXP".into(), unit: Some("programs"), expected: Some(tasks.len() as u64), min_duration: None }, judged.clone());
        let next = AtomicUsize::new(0);
        let mut verdicts: Vec<Option<Result<bool, EvalError>>> = tasks.iter().map(|_| None).collect();
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..self.workers.clamp(1, tasks.len().max(1)))
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(task) = tasks.get(i) else { break done };
                            let dir = self.work_dir.join(format!("mlperf-mbxp-{}-{i}", std::process::id()));
                            done.push((i, self.run(task, &dir)));
                            judged.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            for worker in workers {
                for (i, verdict) in worker.join().expect("an MBXP worker panicked") {
                    verdicts[i] = Some(verdict);
                }
            }
        });
        verdicts.into_iter().map(|v| v.expect("every task judged")).collect()
    }

    /// MBXP's JavaScript and TypeScript tests compare with lodash's `isEqual`: fails unless
    /// `node` finds the package from where the programs run (mxeval's set-up installs it beside
    /// them).
    fn require_lodash(&self) -> Result<(), EvalError> {
        match Command::new("node").args(["-e", "require('lodash')"]).current_dir(&self.work_dir).output() {
            Ok(out) if out.status.success() => Ok(()),
            _ => Err(EvalError::Lodash { dir: self.work_dir.clone() }),
        }
    }

    /// Runs one task in `dir` (made, then removed).
    fn run(&self, task: &Task, dir: &Path) -> Result<bool, EvalError> {
        std::fs::create_dir_all(dir).map_err(|source| EvalError::MakeDir { path: dir.to_path_buf(), source })?;
        let passed = self.run_in(task, dir);
        let _ = std::fs::remove_dir_all(dir);
        passed
    }

    fn run_in(&self, task: &Task, dir: &Path) -> Result<bool, EvalError> {
        let code = solution(task.language, &task.response);
        let language = task.language;
        if language == Language::Python {
            let program = format!("{code}\n{}\ncheck({})", task.test_code, task.entry_point);
            let job = serde_json::json!({"program": program, "timeout": self.run_timeout.as_secs_f64(), "dir": dir});
            let outcome = sandbox::run(Command::new(&self.python).args(["-c", RUNNER]), job.to_string().as_bytes(), self.run_timeout + Duration::from_secs(1))?;
            let verdict = String::from_utf8_lossy(&outcome.stdout).lines().find_map(|l| l.strip_prefix(VERDICT_MARKER).map(str::to_string));
            return Ok(verdict.as_deref() == Some("\"passed\""));
        }
        let source = PathBuf::from(format!("main.{}", language.extension()));
        std::fs::write(dir.join(&source), format!("{code}{}", task.test_code)).map_err(|e| EvalError::Write { path: dir.join(&source), source: e })?;
        let in_dir = |program: &str, args: &[&str]| {
            let mut command = Command::new(program);
            command.args(args).current_dir(dir);
            command
        };
        let compiled = match language {
            Language::Cpp => sandbox::run(&mut in_dir("g++", &["main.cpp", "-o", "main_cpp"]), b"", COMPILE_TIMEOUT)?.succeeded(),
            Language::TypeScript => {
                let tsc = sandbox::run(&mut in_dir("tsc", &["main.ts", "--target", "es5", "--lib", "es2016"]), b"", COMPILE_TIMEOUT)?;
                tsc.status.and_then(|s| s.code()) == Some(2)
            }
            _ => true,
        };
        if !compiled {
            return Ok(false);
        }
        let mut program = match language {
            Language::Cpp => in_dir("./main_cpp", &[]),
            Language::JavaScript => in_dir("node", &["main.js"]),
            Language::TypeScript => in_dir("node", &["main.js"]),
            Language::Php => in_dir("php", &["main.php"]),
            Language::Ruby => in_dir("ruby", &["main.rb"]),
            Language::Python => unreachable!("run above"),
        };
        Ok(sandbox::run(&mut program, b"", self.run_timeout)?.succeeded())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(language: Language, response: &str, test_code: &str) -> Task {
        Task { language, entry_point: "add".into(), test_code: test_code.into(), response: response.into() }
    }

    #[test]
    fn programs_pass_on_a_clean_run_and_fail_on_errors_and_at_the_time_limit() {
        let python_test = "def check(candidate):\n    assert candidate(1, 2) == 3\n";
        let cpp_test = "\nint main() { if (add(1, 2) != 3) throw 1; return 0; }\n";
        let tasks = [
            task(Language::Python, "def add(a, b):\n    return a + b", python_test),
            task(Language::Python, "def add(a, b):\n    return a - b", python_test),
            task(Language::Python, "def add(a, b):\n    while True: pass", python_test),
            task(Language::Python, "import os\ndef add(a, b):\n    os.remove('x')", python_test),
            task(Language::Cpp, "int add(int a, int b) { return a + b; }", cpp_test),
            task(Language::Cpp, "int add(int a, int b) { return a * b; }", cpp_test),
            task(Language::Cpp, "int add(int a, int b) { return a + b }", cpp_test),
        ];
        let judge = Mbxp { run_timeout: Duration::from_secs(1), ..Mbxp::default() };
        assert_eq!(judge.judge(&tasks).unwrap(), [true, false, false, false, true, false, false]);
    }

    #[test]
    fn a_missing_toolchain_is_named_before_anything_runs() {
        let judge = Mbxp { python: "/nonexistent/python3".into(), ..Mbxp::default() };
        let err = judge.judge(&[task(Language::Python, "", "")]).unwrap_err().to_string();
        assert!(err.contains("MBXP's python answers (1 in this log) run with `/nonexistent/python3`") && err.contains("install it"), "{err}");
        let judge = Mbxp { work_dir: PathBuf::from("/"), ..Mbxp::default() };
        let err = judge.judge(&[task(Language::JavaScript, "", "")]).unwrap_err().to_string();
        assert!(err.contains("`node`") || err.contains("lodash, which node does not find from /"), "{err}");
    }
}
