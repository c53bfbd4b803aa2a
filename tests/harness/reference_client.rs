//! The MLCommons reference llama2-70b client, unmodified (`language/llama2-70b/main.py --vllm` with
//! `SUT_API.py`, Offline, under its own Python LoadGen), against the stand-in: it sends every prompt
//! of the run in one non-streamed `/v1/completions` request (`"prompt": [[ids], ...]`) and
//! re-tokenizes the text answers with the served model's tokenizer. Opt-in (`#[ignore]`): it needs
//! the mlcommons/inference checkout (`MLPERF_REFERENCE_DIR`, a work tree or a bare clone; run at
//! commit b66003e1) and a Python with what SUT_API.py imports (`MLPERF_REFERENCE_PYTHON`):
//!
//! ```text
//! python3 -m venv /tmp/venv-ref && /tmp/venv-ref/bin/pip install mlcommons-loadgen torch transformers datasets pandas requests more_itertools tqdm
//! MLPERF_REFERENCE_DIR=/path/to/inference MLPERF_REFERENCE_PYTHON=/tmp/venv-ref/bin/python \
//!     cargo test --release --test harness reference_client -- --ignored --nocapture
//! ```

use super::scratch;
use mlperf_runtime::accuracy::log::read_accuracy_log;
use mlperf_runtime::benchmarks::llm::synthetic_prompt;
use mlperf_runtime::engines::serving::stand_in::{self, StandInOptions};
use std::path::Path;
use std::process::Command;

/// Runs `scripts/reference_client.py` and returns the JSON it prints.
fn reference_client(cwd: &Path, endpoint: &str, prompts: &Path, tokenizer: &Path, samples: usize, accuracy: bool) -> serde_json::Value {
    let (Ok(checkout), Ok(python)) = (std::env::var("MLPERF_REFERENCE_DIR"), std::env::var("MLPERF_REFERENCE_PYTHON")) else {
        panic!("set MLPERF_REFERENCE_DIR (the mlcommons/inference checkout) and MLPERF_REFERENCE_PYTHON (a Python with what SUT_API.py imports)");
    };
    let work = cwd.join(if accuracy { "accuracy" } else { "performance" });
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/reference_client.py"))
        .args(["--reference_dir", &checkout, "--api_server", endpoint.trim_end_matches("/v1")])
        .arg("--tokenizer_json")
        .arg(tokenizer)
        .arg("--prompts")
        .arg(prompts)
        .args(["--samples", &samples.to_string(), "--timeout", "300"])
        .arg("--work")
        .arg(&work)
        .args(accuracy.then_some("--accuracy"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    println!("{stdout}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
#[ignore = "needs the mlcommons/inference checkout and a Python with the reference client's packages"]
fn reference_client_llama2_70b_offline_completes_against_the_stand_in_and_gets_its_answers() {
    let cwd = scratch("reference-client");
    // Answers of 16 to 48 tokens: the client's n_tokens comes from re-tokenizing their text.
    let options = StandInOptions { min_output_tokens: 16, max_output_tokens: 48, ..StandInOptions::default() };
    let tokenizer = cwd.join("tokenizer.json");
    std::fs::write(&tokenizer, options.tokenizer_json()).unwrap();
    let prompts: Vec<Vec<i32>> = (0..512).map(|k| synthetic_prompt(k).to_vec()).collect();
    let prompts_file = cwd.join("prompts.json");
    std::fs::write(&prompts_file, serde_json::to_string(&prompts).unwrap()).unwrap();
    let server = stand_in::start(StandInOptions { port: 0, ..options.clone() }).unwrap();

    let run = reference_client(&cwd, &server.endpoint(), &prompts_file, &tokenizer, 2048, false);
    assert_eq!((run["result"].as_str(), run["samples"].as_u64()), (Some("VALID"), Some(2048)), "{run}");
    let (samples_per_s, tokens_per_s) = (run["samples_per_s"].as_f64().unwrap(), run["tokens_per_s"].as_f64().unwrap());
    let mean_tokens = tokens_per_s / samples_per_s;
    assert!(samples_per_s > 0.0 && (16.0..=48.0).contains(&mean_tokens), "{samples_per_s} samples/s, {tokens_per_s} tokens/s");

    // Every answer it logs is the stand-in's, back from the text through the word-level tokenizer.
    let run = reference_client(&cwd, &server.endpoint(), &prompts_file, &tokenizer, 512, true);
    let entries = read_accuracy_log(&Path::new(run["logs"].as_str().unwrap()).join("mlperf_log_accuracy.json")).unwrap();
    assert_eq!(entries.len(), 512, "every sample once");
    for e in &entries {
        // SUT_API.py logs numpy's default integers: int64.
        let ids: Vec<i64> = e.data.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())).collect();
        let answer: Vec<i64> = options.answer(&prompts[e.qsl_idx], 1024).into_iter().map(i64::from).collect();
        assert_eq!(ids, answer, "sample {}", e.qsl_idx);
    }
}
