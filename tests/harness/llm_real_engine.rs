//! An LLM run against a real serving engine instead of the stand-in: llama.cpp's own HTTP server
//! (embedded in the `xllamacpp` Python wheel) with a tiny random Llama model that
//! `scripts/llamacpp_tiny_server.py` writes, driven through `--serving_engine=external
//! --serving_api=llama.cpp-completion`. Opt-in (`#[ignore]`, and it needs a Python with
//! `xllamacpp`, `gguf` and `numpy` named by `MLPERF_LLAMACPP_PYTHON`):
//!
//! ```text
//! python3 -m venv /tmp/llamacpp-venv && /tmp/llamacpp-venv/bin/pip install xllamacpp gguf numpy
//! MLPERF_LLAMACPP_PYTHON=/tmp/llamacpp-venv/bin/python \
//!     cargo test --release --test harness a_real_llama_cpp -- --ignored --nocapture
//! ```

use super::{detail_logs, free_port, mlperf, scratch};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The llama.cpp server process, killed when the test ends, panics included.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The status line of `GET path` on 127.0.0.1:port, if anything answers.
fn http_get_status(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.lines().next().map(str::to_string)
}

fn log_of(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
#[ignore = "needs a Python with xllamacpp, gguf and numpy in MLPERF_LLAMACPP_PYTHON; runs about a minute"]
fn a_real_llama_cpp_server_answers_an_offline_run() {
    let Some(python) = std::env::var_os("MLPERF_LLAMACPP_PYTHON").filter(|p| !p.is_empty()) else {
        eprintln!("skipped: set MLPERF_LLAMACPP_PYTHON to a Python with xllamacpp, gguf and numpy (see tests/harness/llm_real_engine.rs)");
        return;
    };
    let probe = Command::new(&python).args(["-c", "import xllamacpp, gguf, numpy"]).output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!("skipped: {} cannot import xllamacpp, gguf and numpy: {}", python.to_string_lossy(), String::from_utf8_lossy(&out.stderr).trim());
            return;
        }
        Err(e) => {
            eprintln!("skipped: MLPERF_LLAMACPP_PYTHON={} does not run: {e}", python.to_string_lossy());
            return;
        }
    }

    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cwd = scratch("llm-real-llama-cpp");
    // The model is written once and kept between runs (about 17 MB).
    let model_dir = root.join("target/test-scratch/llamacpp-tiny-model");
    let port = free_port();
    let server_log = cwd.join("llamacpp_server.log");
    let log_file = std::fs::File::create(&server_log).unwrap();
    let start = Instant::now();
    let mut server = Server(
        Command::new(&python)
            .arg(root.join("scripts/llamacpp_tiny_server.py"))
            .arg("--model-dir")
            .arg(&model_dir)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--parallel", "4"])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .expect("the llama.cpp server script starts"),
    );

    // Ready when /health answers 200 (the model is loaded); at most 120 s.
    let deadline = start + Duration::from_secs(120);
    loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            panic!("the llama.cpp server exited ({status}) before it was ready:\n{}", log_of(&server_log));
        }
        if http_get_status(port, "/health").is_some_and(|line| line.contains(" 200 ")) {
            break;
        }
        assert!(Instant::now() < deadline, "the llama.cpp server was not ready within 120 s:\n{}", log_of(&server_log));
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!("llama.cpp server ready on port {port} after {:.1} s", start.elapsed().as_secs_f64());

    // Offline issues ceil(2 q/s x 10 s x 1.1 = 22) rounded up to the loaded set: 16 prompts x 2
    // = 32 samples of up to 1024 prompt tokens, each answered with llama2-70b's 1024-token limit
    // (the model never stops early), with 4 in flight: tens of seconds on 2 cores, so the run
    // outlasts min_duration.
    let urls = format!("--llm_server_urls=[\"http://127.0.0.1:{port}/v1\"]");
    let run_start = Instant::now();
    let out = mlperf(
        &cwd,
        &[
            "run_harness",
            "--system_name=CPU-dev",
            "--benchmarks=llama2-70b",
            "--accuracy_target=99.9",
            "--scenarios=offline",
            "--serving_engine=external",
            "--serving_api=llama.cpp-completion",
            &urls,
            "--max_concurrency=4",
            "--min_query_count=1",
            "--min_duration=10000",
            "--performance_sample_count_override=16",
            "--offline_expected_qps=2",
            "--serving_ready_timeout=120000",
            "--serving_request_timeout=600000",
        ],
    );
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{stdout}");
    eprintln!("run_harness took {:.1} s", run_start.elapsed().as_secs_f64());
    assert!(out.status.success(), "{stdout}\n{stderr}\nserver log:\n{}", log_of(&server_log));
    assert!(server.0.try_wait().unwrap().is_none(), "the llama.cpp server is still up after the run");

    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 1, "{stdout}");
    let (path, log) = &logs[0];
    assert_eq!(log.str("result_validity"), Some("VALID"), "{}:\n{stdout}", path.display());
    assert!(log.errors.is_empty(), "{:?}", log.errors);
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path.parent().unwrap().join("serving.json")).unwrap()).unwrap();
    let record = &record["endpoints"];
    assert_eq!(record[0]["failed"], 0, "{record}");
    assert!(record[0]["completed"].as_u64().unwrap() > 0, "{record}");
    assert!(stdout.contains(&format!("endpoint http://127.0.0.1:{port}/v1")) && stdout.contains("0 failed"), "{stdout}");
}
