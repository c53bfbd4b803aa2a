//! LiveCodeBench's code execution for the reasoning evaluations: each extracted program is run
//! against every public and private test of its problem, as LiveCodeBench's runner does
//! (deepseek-r1 grades against release v1, gpt-oss-120b against release v6), and passes when every
//! test passes.
//!
//! The problems are LiveCodeBench's `code_generation_lite` files as Hugging Face publishes them
//! (`test.jsonl`, `test2.jsonl`, ... `test6.jsonl`; release vN is the first N files), put under
//! `<scratch>/data/livecodebench/code_generation_lite/`. Each program runs in a Python 3 process
//! of its own ([`RUNNER`], LiveCodeBench's grading written for this tool: the import prelude,
//! stdin or function-call tests, 60 s per test, first failure ends the run), in the
//! [`super::sandbox`], killed after `61 s x tests + 5 s` as LiveCodeBench's pool does.
//! Without Python 3, the problem files or network isolation the evaluation stops and names what
//! is missing: a missing toolchain never scores zero silently.

use super::Reference;
use super::error::{EvalError, FETCH, ProblemError, ProblemField};
use super::reasoning::CodeJudge;
use super::sandbox;
use crate::dataset::pickle::{self, Value};
use crate::dataset::scratch::{Item, ItemKind, Scratch};
use crate::progress::{Progress, Work};
use base64::Engine as _;
use serde::Deserialize;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The test runner, run by `python3 -c`.
pub const RUNNER: &str = include_str!("lcb_runner.py");
/// LiveCodeBench's limit per test, in seconds.
pub const TEST_TIMEOUT_S: u64 = 60;
const RESULT_MARKER: &str = "mlperf-lcb-results ";

/// The judge of one evaluation: where its problems are and which release it grades against.
pub struct LiveCodeBench {
    problems_dir: PathBuf,
    /// Release vN: the first N problem files.
    release: usize,
    python: String,
    /// Seconds each test may take ([`TEST_TIMEOUT_S`]).
    test_timeout_s: u64,
}

/// One problem's tests.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// Function-call problems (LeetCode): the method to call; stdin problems have none.
    pub fn_name: Option<String>,
}

impl LiveCodeBench {
    pub fn new(scratch: &Scratch, reference: Reference) -> LiveCodeBench {
        let release = match reference {
            Reference::DeepSeekR1 => 1,
            Reference::GptOss120b => 6,
        };
        LiveCodeBench { problems_dir: scratch.data_dir().join("livecodebench/code_generation_lite"), release, python: "python3".into(), test_timeout_s: TEST_TIMEOUT_S }
    }

    /// A judge reading release `release` from `problems_dir`, running `python`, allowing each test
    /// `test_timeout_s` seconds.
    pub fn with(problems_dir: &Path, release: usize, python: &str, test_timeout_s: u64) -> LiveCodeBench {
        LiveCodeBench { problems_dir: problems_dir.to_path_buf(), release, python: python.into(), test_timeout_s }
    }

    /// The release's problem files, in order.
    fn files(&self) -> Vec<PathBuf> {
        (1..=self.release).map(|n| self.problems_dir.join(if n == 1 { "test.jsonl".to_string() } else { format!("test{n}.jsonl") })).collect()
    }

    /// The data check's entries: each problem file the evaluation reads, and how to fetch them.
    pub fn items(&self) -> Vec<Item> {
        let remedy = format!("The accuracy evaluation runs LiveCodeBench's tests from it; fetch the files with\n  {FETCH} {}", self.problems_dir.display());
        self.files().into_iter().map(|path| Item::new(ItemKind::Dataset, &format!("LiveCodeBench release v{} problems", self.release), path, remedy.clone())).collect()
    }

    /// The release's problems by `question_id`.
    pub fn problems(&self) -> Result<HashMap<String, Problem>, EvalError> {
        let mut problems = HashMap::new();
        for path in self.files() {
            let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Problems {
                path: path.clone(),
                source,
                release: self.release,
                last: if self.release == 1 { String::new() } else { self.release.to_string() },
                dir: self.problems_dir.clone(),
            })?;
            for (line_no, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let (id, problem) = parse_problem(line).map_err(|problem| EvalError::ProblemLine { path: path.clone(), line: line_no + 1, problem })?;
                problems.insert(id, problem);
            }
        }
        Ok(problems)
    }

    /// Fails with what is missing when Python 3 cannot run here.
    fn check_toolchain(&self) -> Result<(), EvalError> {
        let out = Command::new(&self.python).args(["-c", "import sys; assert sys.version_info >= (3, 11), sys.version"]).output();
        match out {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(EvalError::OldPython { python: self.python.clone(), stderr: String::from_utf8_lossy(&o.stderr).trim().to_string() }),
            Err(source) => Err(EvalError::NoPython { python: self.python.clone(), source }),
        }
    }

    /// Runs `code` against `problem`: LiveCodeBench's per-test results (true, or -2 wrong answer,
    /// -3 time limit, -4 error; -1 when the process gave none within its time).
    pub fn run(&self, code: &str, problem: &Problem) -> Result<Vec<serde_json::Value>, EvalError> {
        let job = serde_json::json!({"code": code, "inputs": problem.inputs, "outputs": problem.outputs, "fn_name": problem.fn_name, "timeout": self.test_timeout_s});
        let mut command = Command::new(&self.python);
        command.args(["-c", RUNNER]);
        let limit = Duration::from_secs((self.test_timeout_s + 1) * problem.inputs.len() as u64 + 5);
        let outcome = sandbox::run(&mut command, job.to_string().as_bytes(), limit).map_err(EvalError::Runner)?;
        let results = String::from_utf8_lossy(&outcome.stdout).lines().rev().find_map(|l| l.strip_prefix(RESULT_MARKER)).and_then(|json| {
            #[derive(Deserialize)]
            struct Results {
                results: Vec<serde_json::Value>,
            }
            serde_json::from_str::<Results>(json).ok()
        });
        match (outcome.status, results) {
            (Some(_), Some(r)) => Ok(r.results),
            (Some(s), None) if s.code().is_some_and(|c| c != 0) && outcome.elapsed < Duration::from_secs(1) && outcome.stdout.is_empty() => {
                Err(EvalError::RunnerFailed { status: s, python: self.python.clone() })
            }
            _ => Ok(vec![serde_json::Value::from(-1); problem.inputs.len()]),
        }
    }
}

impl CodeJudge for LiveCodeBench {
    fn judge(&self, work: &[(String, String)]) -> Result<Vec<bool>, EvalError> {
        self.check_toolchain()?;
        sandbox::check_isolation("LiveCodeBench's generated code")?;
        let problems = self.problems()?;
        let judged = Arc::new(AtomicU64::new(0));
        let _progress = Progress::start(Work { label: "LiveCodeBench".into(), unit: Some("programs"), expected: Some(work.len() as u64), min_duration: None }, judged.clone());
        work.iter()
            .map(|(id, code)| {
                let passed = match problems.get(id) {
                    // A question outside the release is wrong, as in the reference.
                    None => false,
                    Some(problem) => self.run(code, problem)?.iter().all(|r| r.as_bool() == Some(true) || r.as_i64().is_some_and(|v| v > 0)),
                };
                judged.fetch_add(1, Ordering::Relaxed);
                Ok(passed)
            })
            .collect()
    }
}

#[derive(Deserialize)]
struct Line {
    question_id: String,
    public_test_cases: String,
    private_test_cases: String,
    #[serde(default)]
    metadata: String,
}

#[derive(Deserialize)]
struct Test {
    input: String,
    output: String,
}

/// One line of a problem file: its id, and its public then private tests. Private tests are JSON,
/// or (most) base64 of zlib of a pickled JSON string.
pub fn parse_problem(line: &str) -> Result<(String, Problem), ProblemError> {
    let l: Line = serde_json::from_str(line).map_err(ProblemError::NotALine)?;
    let at = |field: ProblemField| ProblemError::Field { id: l.question_id.clone(), field };
    let mut tests: Vec<Test> = serde_json::from_str(&l.public_test_cases).map_err(|e| at(ProblemField::PublicTests(e)))?;
    let private = match serde_json::from_str::<Vec<Test>>(&l.private_test_cases) {
        Ok(t) => t,
        Err(_) => {
            let packed = base64::engine::general_purpose::STANDARD.decode(l.private_test_cases.trim()).map_err(|e| at(ProblemField::PrivateNotBase64(e)))?;
            let mut pickled = Vec::new();
            flate2::read::ZlibDecoder::new(packed.as_slice()).read_to_end(&mut pickled).map_err(|e| at(ProblemField::PrivateNotZlib(e)))?;
            let json = match pickle::parse(&pickled).map_err(|e| at(ProblemField::PrivatePickle(e)))? {
                Value::Str(s) => s,
                other => return Err(at(ProblemField::PrivateNotString(other.kind()))),
            };
            serde_json::from_str(&json).map_err(|e| at(ProblemField::PrivateJson(e)))?
        }
    };
    tests.extend(private);
    let fn_name = if l.metadata.trim().is_empty() {
        None
    } else {
        let metadata: serde_json::Value = serde_json::from_str(&l.metadata).map_err(|e| at(ProblemField::Metadata(e)))?;
        metadata.get("func_name").and_then(|v| v.as_str()).map(str::to_string)
    };
    let (inputs, outputs) = tests.into_iter().map(|t| (t.input, t.output)).unzip();
    Ok((l.question_id, Problem { inputs, outputs, fn_name }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem_line(id: &str, public: &str, private: &str, metadata: &str) -> String {
        serde_json::json!({"question_id": id, "public_test_cases": public, "private_test_cases": private, "metadata": metadata}).to_string()
    }

    /// The base64 / zlib / pickle packing of most private tests, made with Python.
    fn packed(json: &str) -> Option<String> {
        let script = "import base64, pickle, sys, zlib; print(base64.b64encode(zlib.compress(pickle.dumps(sys.argv[1]))).decode())";
        let out = Command::new("python3").args(["-c", script, json]).output().ok()?;
        Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
    }

    #[test]
    fn problems_read_public_then_private_tests() {
        let private = r#"[{"input": "3\n", "output": "9\n", "testtype": "stdin"}]"#;
        let packed = packed(private).expect("python3 runs (LoadGen's build needs it too)");
        let line = problem_line("abc001", r#"[{"input": "2\n", "output": "4\n", "testtype": "stdin"}]"#, &packed, "{}");
        let (id, p) = parse_problem(&line).unwrap();
        assert_eq!((id.as_str(), p.inputs, p.outputs, p.fn_name), ("abc001", vec!["2\n".to_string(), "3\n".into()], vec!["4\n".to_string(), "9\n".into()], None));
        let line = problem_line("lc7", "[]", r#"[{"input": "[1, 2]\n3", "output": "[4, 5]", "testtype": "functional"}]"#, r#"{"func_name": "add"}"#);
        assert_eq!(parse_problem(&line).unwrap().1.fn_name.as_deref(), Some("add"));
        let err = parse_problem(&problem_line("bad", "[]", "%%%", "{}")).unwrap_err().to_string();
        assert!(err.contains("problem bad: private_test_cases: neither JSON nor base64"), "{err}");
    }

    fn judge_with(problems: &[String]) -> (LiveCodeBench, PathBuf) {
        let dir = std::env::temp_dir().join(format!("mlperf-lcb-{}-{}", std::process::id(), problems.len()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("test.jsonl"), problems.join("\n")).unwrap();
        // One second per test instead of LiveCodeBench's 60, for the endless loop.
        (LiveCodeBench::with(&dir, 1, "python3", 1), dir)
    }

    #[test]
    fn programs_pass_only_when_every_test_passes() {
        let stdin = problem_line("sq", r#"[{"input": "2\n", "output": "4\n"}, {"input": "3\n", "output": "9.0\n"}]"#, "[]", "{}");
        let calls = problem_line("lc", "[]", r#"[{"input": "[1, 2]\n3", "output": "[4, 5]"}, {"input": "[]\n1", "output": "[]"}]"#, r#"{"func_name": "add"}"#);
        let (judge, dir) = judge_with(&[stdin, calls]);
        let square = "n = int(input())\nprint(n * n)";
        let main_guarded = "import sys\ndef main():\n    n = int(sys.stdin.readline())\n    print(n ** 2)\nif __name__ == '__main__':\n    main()";
        let solution = "class Solution:\n    def add(self, xs: List[int], k: int) -> List[int]:\n        return tuple(x + k for x in xs)";
        let work = [
            ("sq", square),
            ("sq", main_guarded),
            ("sq", "print(4)"),
            ("sq", "while True: pass"),
            ("sq", "import socket\ns = socket.create_connection(('1.1.1.1', 80), timeout=5)\nprint(int(input()) ** 2)"),
            ("lc", solution),
            ("lc", "def add(xs, k):\n    return [x - k for x in xs]"),
            ("unknown", square),
        ];
        let work: Vec<(String, String)> = work.iter().map(|(id, code)| (id.to_string(), code.to_string())).collect();
        assert_eq!(judge.judge(&work).unwrap(), [true, true, false, false, false, true, false, false]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_toolchain_or_problem_file_names_what_is_missing() {
        let (judge, dir) = judge_with(&[]);
        let no_python = LiveCodeBench::with(&dir, 1, "/nonexistent/python3", 1);
        let err = no_python.judge(&[("x".into(), "print(1)".into())]).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/python3") && err.contains("install python3"), "{err}");
        let v6 = LiveCodeBench::with(&dir, 6, "python3", 1);
        let err = v6.judge(&[("x".into(), "print(1)".into())]).unwrap_err().to_string();
        let items = v6.items();
        assert_eq!(items.iter().map(|i| i.present).collect::<Vec<_>>(), [true, false, false, false, false, false], "the data check lists all six files");
        assert!(items[5].path.ends_with("test6.jsonl") && items[5].remedy.contains("huggingface-cli download livecodebench/code_generation_lite"));
        assert!(err.contains("test2.jsonl") && err.contains("release v6") && err.contains("huggingface-cli download livecodebench/code_generation_lite"), "{err}");
        assert_eq!(judge.judge(&[("x".into(), "print(1)".into())]).unwrap(), [false], "an id outside the release is wrong");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
