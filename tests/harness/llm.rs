//! LLM runs end to end through the real LoadGen against the stand-in serving engine: the harness
//! starts it (as CPU-dev's configs say), streams every scenario's requests, reports first tokens
//! and TTFT / TPOT, and stops it. Faults (HTTP errors, dropped connections, malformed events,
//! stalled streams, an engine that never becomes ready) fail the run with an error that names the
//! endpoint and the sample; three external endpoints survive one of them dying; Ctrl-C leaves no
//! engine behind.

use super::{detail_log_paths, detail_logs, free_port, mlperf, scratch};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Stand-in pacing for short runs: 64 requests in flight, each 20 ms to the first token and 5 ms
/// per token after it, so throughput is bounded by latency (about 100 samples/s) and a run lasts as
/// long as LoadGen asks, whatever the machine.
const PACED: &str = r#"--serving_args=["--first_token_ms=20", "--token_ms=5", "--min_output_tokens=64", "--max_output_tokens=192"]"#;

fn llm_run(cwd: &Path, port: u16, extra: &[&str]) -> (bool, String, String) {
    let (code, stdout, stderr) = llm_run_status(cwd, port, extra);
    (code == Some(0), stdout, stderr)
}

/// [`llm_run`] with the exit status.
fn llm_run_status(cwd: &Path, port: u16, extra: &[&str]) -> (Option<i32>, String, String) {
    let port_flag = format!("--serving_port={port}");
    // LLM runs issue in equal-issue mode: whole multiples of the loaded set, here 256 prompts.
    let mut args =
        vec!["run_harness", "--system_name=CPU-dev", "--max_concurrency=64", "--min_query_count=1", "--min_duration=3000", "--performance_sample_count_override=256", &port_flag];
    args.extend_from_slice(extra);
    let out = mlperf(cwd, &args);
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn llama2_70b_offline_server_and_interactive_are_valid_against_the_stand_in() {
    let cwd = scratch("llm-llama2");
    let (ok, stdout, stderr) = llm_run(
        &cwd,
        free_port(),
        // 80 queries/s for 7 s: enough queries for early stopping, about 53 of 64 slots busy.
        &[
            "--benchmarks=llama2-70b",
            "--accuracy_target=99.9",
            "--scenarios=offline,server,interactive",
            PACED,
            "--offline_expected_qps=150",
            "--server_target_qps=80",
            "--min_duration=7000",
            "--progress_interval=1",
        ],
    );
    assert!(ok, "{stdout}\n{stderr}");
    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 3, "{stdout}");
    // Output piped: each run is announced, and says how far it is every second.
    assert!(stderr.contains("[1/3] llama2-70b Offline PerformanceOnly") && stderr.contains("[3/3] llama2-70b Interactive PerformanceOnly"), "{stderr}");
    assert!(stderr.contains(", about 1 min left"), "the time left once a run is done: {stderr}");
    let progress = stderr.lines().filter(|l| l.starts_with("llama2-70b Server PerformanceOnly: ") && l.contains(" samples, ") && l.contains(" s of 7 s, ")).count();
    assert!(progress >= 4, "a progress line a second through a 7 s run: {stderr}");
    for (path, log) in &logs {
        assert_eq!(log.str("result_validity"), Some("VALID"), "{}:\n{stdout}", path.display());
        assert_eq!(log.bool("requested_use_token_latencies"), Some(true));
        assert!(log.errors.is_empty(), "{:?}", log.errors);
        let dir = path.parent().unwrap();
        let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("serving.json")).unwrap()).unwrap();
        let record = &record["endpoints"];
        assert_eq!(record[0]["failed"], 0, "{record}");
        assert!(record[0]["completed"].as_u64().unwrap() > 100, "{record}");
        assert!(std::fs::read_to_string(dir.join("NON_SUBMITTABLE.txt")).unwrap().contains("synthetic"));
        let run_log = std::fs::read_to_string(dir.join("mlperf_run.log")).unwrap();
        assert!(run_log.contains("serving client: output ids") && run_log.contains("PerformanceOnly: "), "the run's own log, progress included: {run_log}");
    }
    assert!(cwd.join("build/logs").exists());
    // The stand-in's own log sits with the runs.
    let engine_logs: Vec<_> = mlperf_runtime::fsutil::walk_files(&cwd.join("build")).into_iter().filter(|p| p.ends_with("serving_instance0.log")).collect();
    assert_eq!(engine_logs.len(), 3, "one engine per config, its log in the scenario directory");
    let server = logs.iter().find(|(p, _)| p.to_string_lossy().contains("/Server/")).unwrap();
    assert!(server.1.f64("result_first_token_99.00_percentile_latency_ns").unwrap() < 450e6, "TTFT measured from FirstTokenComplete");
    let interactive = logs.iter().find(|(p, _)| p.to_string_lossy().contains("/Interactive/")).unwrap();
    assert_eq!(interactive.1.u64("requested_server_ttft_latency"), Some(450_000_000), "the interactive limits");
    assert!(stdout.contains("TTFT p99") && stdout.contains("(limit 450)") && stdout.contains("(limit 40)"), "{stdout}");
    assert!(stdout.contains("endpoint http://127.0.0.1:") && stdout.contains("0 failed"), "{stdout}");
}

#[test]
fn a_text_only_api_gets_its_output_ids_by_re_tokenizing_with_the_models_tokenizer() {
    use mlperf_runtime::accuracy::log::read_accuracy_log;
    use mlperf_runtime::benchmarks::llm::synthetic_prompt;
    use mlperf_runtime::engines::serving::stand_in::StandInOptions;
    let cwd = scratch("llm-completions-text");
    // The stand-in streams " t<id>" per token; its tokenizer.json maps each word back to its id.
    let stand_in = StandInOptions { vocab: 64, min_output_tokens: 8, max_output_tokens: 16, ..StandInOptions::default() };
    let tokenizer = cwd.join("tokenizer.json");
    std::fs::write(&tokenizer, stand_in.tokenizer_json()).unwrap();
    let tokenizer_flag = format!("--tokenizer_path={}", tokenizer.display());
    let base = ["--benchmarks=llama2-70b", "--accuracy_target=99.9", "--scenarios=offline", "--serving_api=completions-text", "--offline_expected_qps=150"];
    let fast = r#"--serving_args=["--first_token_ms=2", "--token_ms=1", "--min_output_tokens=8", "--max_output_tokens=16", "--vocab=64"]"#;

    let (ok, stdout, stderr) = llm_run(&cwd, free_port(), &[&base[..], &[fast, "--test_mode=AccuracyOnly", "--max_concurrency=256", &tokenizer_flag]].concat());
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stderr.contains(&format!("output ids re-tokenized from the streamed text with {}", tokenizer.display())), "the run's log says so: {stderr}");
    let log = mlperf_runtime::fsutil::walk_files(&cwd.join("build")).into_iter().find(|p| p.ends_with("mlperf_log_accuracy.json")).expect("an accuracy log");
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(log.parent().unwrap().join("serving.json")).unwrap()).unwrap();
    assert!(record["output_ids"].as_str().unwrap().starts_with("re-tokenized from the streamed text with"), "{record}");
    let entries = read_accuracy_log(&log).unwrap();
    assert!(entries.len() > 1000, "every sample answered: {}", entries.len());
    for e in entries.iter().step_by(97) {
        let ids: Vec<i32> = e.data.chunks_exact(4).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(ids, stand_in.answer(&synthetic_prompt(e.qsl_idx), 1024), "sample {}: the generated ids, back from the text", e.qsl_idx);
    }

    // Without a tokenizer the run stops before sending anything, saying what to set.
    let (ok, stdout, stderr) = llm_run(&cwd, free_port(), &[&base[..], &[PACED, "--tokenizer_path=/nonexistent/tokenizer.json"]].concat());
    assert!(!ok);
    assert!(format!("{stdout}{stderr}").contains("/nonexistent/tokenizer.json: no such tokenizer file"), "{stdout}\n{stderr}");
}

#[test]
fn run_audit_harness_runs_and_verifies_test06_for_llama2_70b_server() {
    let cwd = scratch("llm-test06");
    let args = [
        "run_audit_harness",
        "--system_name=CPU-dev",
        "--benchmarks=llama2-70b",
        "--accuracy_target=99.9",
        "--scenarios=server",
        "--audit_tests=TEST06",
        "--max_concurrency=256",
        "--server_target_qps=200",
        r#"--serving_args=["--first_token_ms=2", "--token_ms=1", "--min_output_tokens=8", "--max_output_tokens=16"]"#,
    ];
    let port = format!("--serving_port={}", free_port());
    let out = mlperf(&cwd, &[&args[..], &[&port]].concat());
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let dir = cwd.join("build/compliance/CPU-dev_RS/llama2-70b-99.9/Server");
    // The round's TEST06 settings: 100 samples logged, first tokens reported (Server), each checked.
    let verify = std::fs::read_to_string(dir.join("TEST06/verify_accuracy.txt")).unwrap();
    assert_eq!(verify, "First token check pass: True\nEOS check pass: True\nSample length check pass: True\nTEST06 verification complete\n");
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("TEST06.json")).unwrap()).unwrap();
    assert_eq!(record["passed"], true, "{record}");
    assert!(stdout.contains("TEST06  PASS") && stdout.contains("100 entries"), "{stdout}");
}

#[test]
fn run_audit_harness_runs_and_verifies_test09_for_gpt_oss_offline() {
    let cwd = scratch("llm-test09");
    // Answers of 1,160 tokens: a mean inside the round's 1150.38..1406.02; every one of the 6,396
    // samples is issued once and logged (the round's TEST09 settings).
    let args = [
        "run_audit_harness",
        "--system_name=CPU-dev",
        "--benchmarks=gpt-oss-120b",
        "--scenarios=offline",
        "--audit_tests=TEST09",
        "--performance_sample_count_override=6396",
        r#"--serving_args=["--min_output_tokens=1160", "--max_output_tokens=1160"]"#,
    ];
    let port = format!("--serving_port={}", free_port());
    let out = mlperf(&cwd, &[&args[..], &[&port]].concat());
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let dir = cwd.join("build/compliance/CPU-dev_RS/gpt-oss-120b/Offline");
    let verify = std::fs::read_to_string(dir.join("TEST09/verify_output_len.txt")).unwrap();
    assert!(verify.contains("Total samples: 6396\nMean output tokens: 1160.00\n") && verify.ends_with("Min check pass: True\nMax check pass: True\n\nTEST PASS\n"), "{verify}");
    assert!(dir.join("TEST09/accuracy/mlperf_log_accuracy.json").is_file(), "the log the checker's truncation walks");
    assert!(stdout.contains("TEST09  PASS"), "{stdout}");
}

#[test]
fn run_audit_harness_runs_and_verifies_test07_for_gpt_oss_offline() {
    let cwd = scratch("llm-test07");
    // TEST07's compliance set (990 GPQA questions, 90 of them with a ground truth no answer can
    // match), where the data check looks for it; a stand-in answering every question as its
    // ground truth says, in words of a tokenizer that holds them.
    let fixtures = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/accuracy/reasoning");
    let set = cwd.join("scratch/data/gpt-oss-120b/acc/acc_eval_compliance_gpqa.parquet");
    std::fs::create_dir_all(set.parent().unwrap()).unwrap();
    std::fs::copy(fixtures.join("gpt_oss_test07_set.parquet"), &set).unwrap();
    let tokenizer = cwd.join("tokenizer.json");
    std::fs::write(&tokenizer, answer_tokenizer_json()).unwrap();
    let serving = format!(r#"--serving_args=["--first_token_ms=2", "--token_ms=1", "--reference_answers={}", "--tokenizer={}"]"#, set.display(), tokenizer.display());
    let args = [
        "run_audit_harness",
        "--system_name=CPU-dev",
        "--benchmarks=gpt-oss-120b",
        "--scenarios=offline",
        "--audit_tests=TEST07",
        "--dataset=real",
        &format!("--tokenizer_path={}", tokenizer.display()),
        &serving,
        &format!("--serving_port={}", free_port()),
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_mlperf")).args(args).current_dir(&cwd).env("MLPERF_SCRATCH_PATH", cwd.join("scratch")).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let dir = cwd.join("build/compliance/CPU-dev_RS/gpt-oss-120b/Offline/TEST07");
    let verify = std::fs::read_to_string(dir.join("verify_accuracy.txt")).unwrap();
    assert!(verify.contains("gpqa_diamond                   900      990        5     180.00     90.91%\n"), "{verify}");
    assert!(verify.contains("\n'exact_match': 90.909\n"), "{verify}");
    assert!(verify.ends_with("Accuracy score: 90.909\nAccuracy threshold: 60.698\nAccuracy check pass: True\nTEST PASS\n"), "{verify}");
    assert!(dir.join("accuracy/mlperf_log_accuracy.json").is_file() && dir.join("performance/run_1/mlperf_log_detail.txt").is_file(), "what the checker's TEST07 tree holds");
    assert!(stdout.contains("TEST07  PASS"), "{stdout}");
}

/// A word-level tokenizer with the words of multiple-choice answers (`Answer : B`).
fn answer_tokenizer_json() -> String {
    let words = ["<unk>", "Answer", ":", "A", "B", "C", "D", "E"];
    let vocab: serde_json::Map<String, serde_json::Value> = words.iter().enumerate().map(|(k, w)| (w.to_string(), serde_json::json!(k))).collect();
    serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [], "normalizer": null,
        "pre_tokenizer": { "type": "Whitespace" }, "post_processor": null, "decoder": null,
        "model": { "type": "WordLevel", "vocab": vocab, "unk_token": "<unk>" }
    })
    .to_string()
}

/// The stand-in of the scored llama3.1-8b run: 64 words, 8 to 16 of them per answer.
fn summarising_stand_in() -> mlperf_runtime::engines::serving::stand_in::StandInOptions {
    mlperf_runtime::engines::serving::stand_in::StandInOptions { vocab: 64, min_output_tokens: 8, max_output_tokens: 16, ..Default::default() }
}

/// NLTK's English Punkt model where `NLTK_DATA=<cwd>/nltk_data` finds it.
fn nltk_data(cwd: &Path) {
    let dir = cwd.join("nltk_data/tokenizers/punkt_tab");
    std::fs::create_dir_all(&dir).unwrap();
    let model = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/accuracy/punkt_tab/english");
    std::os::unix::fs::symlink(&model, dir.join("english")).unwrap();
}

/// A CNN/DailyMail dataset file of the official structure with `n` short samples, whose reference
/// summaries are the stand-in's answers in its words for the even samples and unrelated text for
/// the odd ones.
fn write_cnn_eval(path: &Path, n: usize) {
    let stand_in = summarising_stand_in();
    let entries: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let prompt = [128000, 1000 + i as i32 % 5000, 42];
            let output = if i % 2 == 0 { stand_in.answer(&prompt, 128).iter().map(|id| format!("t{id}")).collect::<Vec<_>>().join(" ") } else { format!("summary {i}") };
            serde_json::json!({ "instruction": { "llama": "Summarize: {input}" }, "input": format!("article {i}"), "tok_input": prompt, "output": output })
        })
        .collect();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(&entries).unwrap()).unwrap();
}

#[test]
fn llama3_1_8b_sends_the_official_datasets_prompts_is_scored_and_a_wrong_file_is_named() {
    let cwd = scratch("llm-real-dataset");
    let data = cwd.join("scratch/data/llama3.1-8b/cnn_eval.json");
    write_cnn_eval(&data, 13368);
    let run = |extra: &[&str]| {
        let port = format!("--serving_port={}", free_port());
        let args = [
            &["run_harness", "--system_name=CPU-dev", "--benchmarks=llama3.1-8b", "--scenarios=offline", "--dataset=real", "--max_concurrency=64", "--min_query_count=1"][..],
            &[&port],
            extra,
        ]
        .concat();
        let out = Command::new(env!("CARGO_BIN_EXE_mlperf")).args(&args).current_dir(&cwd).env("MLPERF_SCRATCH_PATH", cwd.join("scratch")).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (ok, stdout, stderr) = run(&[PACED, "--min_duration=3000", "--performance_sample_count_override=256", "--offline_expected_qps=150"]);
    assert!(ok, "{stdout}\n{stderr}");
    let logs = detail_logs(&cwd);
    assert_eq!(logs[0].1.str("result_validity"), Some("VALID"), "{stdout}");
    assert_eq!(logs[0].1.u64("qsl_reported_total_count"), Some(13368), "the dataset's samples");
    let note = std::fs::read_to_string(logs[0].0.parent().unwrap().join("NON_SUBMITTABLE.txt")).unwrap_or_default();
    assert!(!note.contains("synthetic"), "real prompts: {note}");

    // An accuracy run is scored as the reference evaluation does: the stand-in's ids decoded with
    // its tokenizer, sentences split with NLTK's English Punkt model (NLTK_DATA), ROUGE against
    // the dataset's references.
    let tokenizer = cwd.join("tokenizer.json");
    std::fs::write(&tokenizer, summarising_stand_in().tokenizer_json()).unwrap();
    nltk_data(&cwd);
    let fast = r#"--serving_args=["--first_token_ms=2", "--token_ms=1", "--min_output_tokens=8", "--max_output_tokens=16", "--vocab=64"]"#;
    let tokenizer_flag = format!("--tokenizer_path={}", tokenizer.display());
    let out = Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args([
            "run_harness",
            "--system_name=CPU-dev",
            "--benchmarks=llama3.1-8b",
            "--scenarios=offline",
            "--dataset=real",
            "--max_concurrency=256",
            "--test_mode=AccuracyOnly",
            fast,
            &tokenizer_flag,
        ])
        .arg(format!("--serving_port={}", free_port()))
        .current_dir(&cwd)
        .env("MLPERF_SCRATCH_PATH", cwd.join("scratch"))
        .env("NLTK_DATA", cwd.join("nltk_data"))
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let accuracy =
        mlperf_runtime::fsutil::walk_files(&cwd.join("build")).into_iter().find(|p| p.ends_with("accuracy.txt")).unwrap_or_else(|| panic!("no accuracy.txt:\n{stdout}\n{stderr}"));
    let text = std::fs::read_to_string(accuracy).unwrap();
    // Half the references are the answers themselves, half share no word with them.
    assert!(
        text.starts_with("\nResults\n\n{'rouge1': '50.0', 'rouge2': '50.0', 'rougeL': '50.0', 'rougeLsum': '50.0', 'gen_len': ") && text.contains("'gen_num': 13368}"),
        "{text}"
    );
    // The stand-in's answers are far shorter than the model's: GEN_LEN misses its range, so the run
    // is BELOW_TARGET with its own exit status, and staging refuses it without the flag.
    assert_eq!(out.status.code(), Some(mlperf_runtime::error::exit::BELOW_TARGET), "{stdout}\n{stderr}");
    assert!(stdout.contains("BELOW_TARGET") && stdout.contains("GEN_LEN is ") && stdout.contains("below the target 7350879.6"), "{stdout}");
    assert!(stderr.contains("1 of 1 runs scored below the accuracy target"), "{stderr}");
    let stage = Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args(["stage_results", "--system_name=CPU-dev", "--benchmarks=llama3.1-8b", "--scenarios=offline", "--allow-non-submittable"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    let staged = format!("{}{}", String::from_utf8_lossy(&stage.stdout), String::from_utf8_lossy(&stage.stderr));
    assert!(!stage.status.success() && staged.contains("accuracy below the round's target: GEN_LEN is ") && staged.contains("--allow-below-target"), "{staged}");
    assert!(!cwd.join("build/submission").exists(), "nothing staged: {staged}");

    write_cnn_eval(&data, 10);
    let (ok, stdout, stderr) = run(&[PACED]);
    assert!(!ok);
    assert!(format!("{stdout}{stderr}").contains("cnn_eval.json: 10 samples, but the round's llama3.1-8b performance set has 13368"), "{stdout}\n{stderr}");
    assert!(!stderr.contains("started instance0"), "the dataset is checked before the serving engine is started: {stderr}");
}

/// `mlperf` with the scratch space and NLTK's data of `cwd`: (exit status, stdout, stderr).
fn mlperf_in_scratch(cwd: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args(args)
        .current_dir(cwd)
        .env("MLPERF_SCRATCH_PATH", cwd.join("scratch"))
        .env("NLTK_DATA", cwd.join("nltk_data"))
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_truncated_tokenizer_is_found_before_the_engine_starts_and_mlperf_score_rescores_a_kept_log() {
    use mlperf_runtime::error::exit;
    let cwd = scratch("llm-preflight-score");
    write_cnn_eval(&cwd.join("scratch/data/llama3.1-8b/cnn_eval.json"), 13368);
    nltk_data(&cwd);
    let tokenizer = cwd.join("tokenizer.json");
    let good = summarising_stand_in().tokenizer_json();
    let truncated = &good[..good.len() / 2];
    std::fs::write(&tokenizer, truncated).unwrap();
    let tokenizer_flag = format!("--tokenizer_path={}", tokenizer.display());
    let fast = r#"--serving_args=["--first_token_ms=2", "--token_ms=1", "--min_output_tokens=8", "--max_output_tokens=16", "--vocab=64"]"#;
    let accuracy_run = |port: String| {
        let args = [
            "run_harness",
            "--system_name=CPU-dev",
            "--benchmarks=llama3.1-8b",
            "--scenarios=offline",
            "--dataset=real",
            "--max_concurrency=256",
            "--test_mode=AccuracyOnly",
            fast,
            &tokenizer_flag,
            &port,
        ];
        mlperf_in_scratch(&cwd, &args)
    };

    // The scorer's tokenizer is read before the engine starts and before any sample runs.
    let started = Instant::now();
    let (code, stdout, stderr) = accuracy_run(format!("--serving_port={}", free_port()));
    assert_eq!(code, Some(exit::DATA), "{stdout}\n{stderr}");
    assert!(stderr.contains(&format!("{}: not a Hugging Face tokenizer.json", tokenizer.display())), "{stderr}");
    assert!(!stderr.contains("started instance0"), "no engine was started: {stderr}");
    assert!(detail_log_paths(&cwd).is_empty(), "no sample ran");
    assert!(started.elapsed() < Duration::from_secs(20), "found in seconds: {:?}", started.elapsed());

    std::fs::write(&tokenizer, &good).unwrap();
    let (code, stdout, stderr) = accuracy_run(format!("--serving_port={}", free_port()));
    // Scored: the stand-in's short answers miss GEN_LEN's range (BELOW_TARGET), as in llama3_1_8b_....
    assert_eq!(code, Some(exit::BELOW_TARGET), "{stdout}\n{stderr}");
    let txt = mlperf_runtime::fsutil::walk_files(&cwd.join("build")).into_iter().find(|p| p.ends_with("accuracy.txt")).expect("a scored run");
    let dir = txt.parent().unwrap().to_str().unwrap().to_string();
    let scored = std::fs::read_to_string(&txt).unwrap();
    assert!(scored.contains("'rouge1': '50.0'"), "{scored}");

    // A score is never replaced without --force.
    let (code, stdout, stderr) = mlperf_in_scratch(&cwd, &["score", &dir]);
    assert_eq!(code, Some(exit::OTHER), "{stdout}\n{stderr}");
    assert!(stderr.contains("accuracy.txt already exists") && stderr.contains("--force"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&txt).unwrap(), scored, "kept");

    // With --force, a broken tokenizer is found before scoring and the old score is kept.
    std::fs::write(&tokenizer, truncated).unwrap();
    let (code, stdout, stderr) = mlperf_in_scratch(&cwd, &["score", "--force", &dir]);
    assert_eq!(code, Some(exit::DATA), "{stdout}\n{stderr}");
    assert!(stderr.contains("not a Hugging Face tokenizer.json"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&txt).unwrap(), scored, "kept");

    // The kept log of a run whose scoring failed, scored again once the tokenizer is fixed: the
    // same accuracy.txt the run wrote.
    std::fs::write(&tokenizer, &good).unwrap();
    std::fs::remove_file(&txt).unwrap();
    let (code, stdout, stderr) = mlperf_in_scratch(&cwd, &["score", &dir]);
    assert_eq!(code, Some(exit::OK), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&txt).unwrap(), scored);
    assert!(stdout.contains("accuracy.txt: Results") && stdout.contains("'rouge1': '50.0'"), "{stdout}");

    // A directory that is not a run says so.
    let (code, _, stderr) = mlperf_in_scratch(&cwd, &["score", cwd.join("build").to_str().unwrap()]);
    assert_eq!(code, Some(exit::USAGE), "{stderr}");
    assert!(stderr.contains("no run plan") && stderr.contains("is it a run directory"), "{stderr}");
}

#[test]
fn the_other_llms_and_edge_singlestream_run_against_the_stand_in() {
    let cwd = scratch("llm-others");
    let (ok, stdout, stderr) = llm_run(&cwd, free_port(), &["--benchmarks=llama3.1-8b,deepseek-r1,gpt-oss-120b", "--scenarios=offline", PACED, "--offline_expected_qps=150"]);
    assert!(ok, "{stdout}\n{stderr}");
    let fast = r#"--serving_args=["--first_token_ms=2", "--token_ms=1", "--min_output_tokens=8", "--max_output_tokens=16"]"#;
    let (ok, stdout2, stderr) =
        llm_run(&cwd, free_port(), &["-q", "--benchmarks=llama3.1-8b-edge", "--scenarios=singlestream", fast, "--single_stream_expected_latency_ns=20000000"]);
    assert!(ok, "{stdout2}\n{stderr}");
    assert_eq!(stderr, "", "-q: the result table only");
    assert!(stdout2.contains("VALID"), "{stdout2}");
    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 4, "{stdout}{stdout2}");
    for (path, log) in &logs {
        assert_eq!(log.str("result_validity"), Some("VALID"), "{}:\n{stdout}{stdout2}", path.display());
    }
    // Each model's output limit reaches the requests (the stand-in caps answers at max_tokens).
    let edge = logs.iter().find(|(p, _)| p.to_string_lossy().contains("llama3.1-8b-edge")).unwrap();
    assert_eq!(edge.1.str("effective_scenario"), Some("SingleStream"));
}

/// A run against a stand-in with a fault: it must fail (exit status 6), saying where and what.
fn fault(name: &str, extra: &[&str], expect: &[&str]) {
    let cwd = scratch(name);
    let (code, stdout, stderr) =
        llm_run_status(&cwd, free_port(), &[&["--benchmarks=llama2-70b", "--accuracy_target=99.9", "--scenarios=offline", "--offline_expected_qps=150"], extra].concat());
    assert_eq!(code, Some(mlperf_runtime::error::exit::FAILED), "{name}: the run must fail\n{stdout}\n{stderr}");
    assert!(stdout.contains("FAILED") || stderr.contains("error:"), "{name}:\n{stdout}\n{stderr}");
    let all = format!("{stdout}\n{stderr}");
    for e in expect {
        assert!(all.contains(e), "{name}: no `{e}` in\n{all}");
    }
}

#[test]
fn an_http_error_fails_the_run_naming_the_endpoint_and_the_sample() {
    fault("llm-http-500", &[r#"--serving_args=["--http_500_every=7"]"#], &["HTTP 500", "endpoint http://127.0.0.1:", ", sample ", "injected failure"]);
}

#[test]
fn a_connection_dropped_on_every_try_fails_the_run() {
    // Each cut connection is tried again; after three in a row the endpoint is down, and with no
    // endpoint left the waiting requests fail.
    // Each cut connection is tried again; after three in a row the endpoint's health is checked,
    // it answers, so the endpoint stays up and the request fails when its tries are spent.
    fault("llm-drop", &[r#"--serving_args=["--drop_every=1"]"#], &["the stream broke", "(tried 3 times)", ", sample ", "is healthy after 3 connection failures in a row"]);
}

#[test]
fn a_burst_of_dropped_connections_at_512_in_flight_is_sent_again_after_a_health_check() {
    // The first three requests' connections are cut in a row; the endpoint answers its health
    // check, stays up, and the three are sent again: the run is VALID.
    let cwd = scratch("llm-drop-burst");
    let port = format!("--serving_port={}", free_port());
    let serving = r#"--serving_args=["--first_token_ms=20", "--token_ms=5", "--min_output_tokens=64", "--max_output_tokens=192", "--drop_first=3"]"#;
    let args = [
        "run_harness",
        "--system_name=CPU-dev",
        "--benchmarks=llama2-70b",
        "--accuracy_target=99.9",
        "--scenarios=offline",
        "--max_concurrency=512",
        "--min_query_count=1",
        "--min_duration=2000",
        "--performance_sample_count_override=512",
        // 3,072 samples: longer than min_duration at the stand-in's pace (about 775 samples/s).
        "--offline_expected_qps=1500",
        serving,
        &port,
    ];
    let out = mlperf(&cwd, &args);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("is healthy after 3 connection failures in a row; requests go on"), "{stderr}");
    let logs = detail_logs(&cwd);
    assert_eq!(logs[0].1.str("result_validity"), Some("VALID"), "{stdout}");
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(logs[0].0.parent().unwrap().join("serving.json")).unwrap()).unwrap();
    let endpoint = &record["endpoints"][0];
    assert!(endpoint["down"].is_null() && endpoint["resent"].as_u64() >= Some(3) && endpoint["failed"] == 0, "{record}");
}

/// A run against one external endpoint at `url`: (exit status, stdout and stderr, seconds taken).
fn external_run(name: &str, url: &str) -> (Option<i32>, String, Duration) {
    let cwd = scratch(name);
    let urls = format!("--llm_server_urls=[\"{url}\"]");
    let started = Instant::now();
    let (code, stdout, stderr) = llm_run_status(
        &cwd,
        30000,
        &[
            "--benchmarks=llama2-70b",
            "--accuracy_target=99.9",
            "--scenarios=offline",
            "--serving_engine=external",
            "--serving_api=completions-token-ids",
            "--serving_ready_timeout=60000",
            &urls,
        ],
    );
    (code, format!("{stdout}\n{stderr}"), started.elapsed())
}

#[test]
fn an_external_endpoint_on_a_closed_port_fails_at_once_naming_its_address() {
    let url = format!("http://127.0.0.1:{}/v1", free_port());
    let (code, all, took) = external_run("llm-closed-port", &url);
    assert_eq!(code, Some(mlperf_runtime::error::exit::FAILED), "{all}");
    assert!(all.contains(&format!("the serving endpoint {url} (llm_server_urls) does not answer")) && all.contains("cannot connect"), "{all}");
    assert!(took < Duration::from_secs(15), "not the ready timeout: {took:?}");
}

#[test]
fn a_silent_external_peer_times_out_per_probe_naming_the_endpoint_and_the_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    // Takes connections and never answers.
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    let (code, all, took) = external_run("llm-silent-peer", &url);
    assert_eq!(code, Some(mlperf_runtime::error::exit::FAILED), "{all}");
    assert!(all.contains(&format!("the serving endpoint {url} (llm_server_urls) does not answer")) && all.contains("/health: no answer within 5000 ms"), "{all}");
    assert!(took < Duration::from_secs(20), "one probe's timeout, not the ready timeout: {took:?}");
}

#[test]
fn an_external_peer_that_drops_every_connection_fails_at_once() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    let (code, all, took) = external_run("llm-drop-peer", &url);
    assert_eq!(code, Some(mlperf_runtime::error::exit::FAILED), "{all}");
    assert!(all.contains(&format!("the serving endpoint {url} (llm_server_urls) does not answer")), "{all}");
    assert!(took < Duration::from_secs(15), "{took:?}");
}

#[test]
fn a_malformed_event_fails_the_run() {
    fault("llm-malformed", &[r#"--serving_args=["--malformed_every=5"]"#], &["malformed event", ", sample "]);
}

#[test]
fn a_stalled_stream_fails_the_run_at_the_request_timeout() {
    fault("llm-stall", &[r#"--serving_args=["--stall_every=3"]"#, "--serving_request_timeout=1500"], &["within the request timeout of 1500 ms", ", sample "]);
}

#[test]
fn an_engine_that_never_becomes_ready_fails_within_the_ready_timeout() {
    let start = Instant::now();
    fault(
        "llm-never-ready",
        &[r#"--serving_args=["--never_ready"]"#, "--serving_ready_timeout=2500", "--progress_interval=1"],
        &["was not ready within 2 s", "answered 503", "waiting for the serving endpoint http://127.0.0.1:", "(serving_ready_timeout 2.5 s): 1 s"],
    );
    assert!(start.elapsed() < Duration::from_secs(30), "the wait ends at the ready timeout");
}

/// A stand-in in its own process, as something outside `mlperf` would start one, and its port. It
/// listens on a port the system picks and says which: a port found free beforehand can be taken
/// (by another test's connection) before the stand-in binds it.
fn external_stand_in(extra: &[&str]) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let args = ["serve_stand_in", "--port=0", "--first_token_ms=20", "--token_ms=5", "--min_output_tokens=64", "--max_output_tokens=192"];
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlperf")).args(args).args(extra).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let said = lines.by_ref().map_while(Result::ok).find(|line| line.contains(" listening on http://127.0.0.1:")).expect("the stand-in says where it listens");
    let port = said.rsplit(':').next().and_then(|p| p.trim_end_matches("/v1").parse().ok()).unwrap_or_else(|| panic!("a port in {said:?}"));
    // The rest of its output is drained, so that a full pipe never stops it.
    std::thread::spawn(move || lines.for_each(drop));
    (child, port)
}

#[test]
fn three_external_endpoints_finish_the_run_when_one_dies_and_report_it() {
    let cwd = scratch("llm-three-endpoints");
    let (mut servers, ports): (Vec<_>, Vec<_>) = [&[][..], &["--die_after=30"], &[]].into_iter().map(external_stand_in).unzip();
    let urls = format!("--llm_server_urls=[{}]", ports.iter().map(|p| format!("\"http://127.0.0.1:{p}/v1\"")).collect::<Vec<_>>().join(", "));
    let (ok, stdout, stderr) = llm_run(
        &cwd,
        30000,
        &[
            "--benchmarks=llama2-70b",
            "--accuracy_target=99.9",
            "--scenarios=offline",
            "--offline_expected_qps=150",
            "--serving_engine=external",
            "--serving_api=completions-token-ids",
            &urls,
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut exited = servers[1].try_wait().unwrap();
    while exited.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        exited = servers[1].try_wait().unwrap();
    }
    for s in &mut servers {
        let _ = s.kill();
        let _ = s.wait();
    }
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(exited.and_then(|e| e.code()), Some(17), "the middle endpoint died as asked");
    let logs = detail_logs(&cwd);
    assert_eq!(logs[0].1.str("result_validity"), Some("VALID"), "{stdout}");
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(logs[0].0.parent().unwrap().join("serving.json")).unwrap()).unwrap();
    let record = &record["endpoints"];
    assert!(record[1]["down"].is_string(), "the dead endpoint is reported: {record}");
    assert!(record[0]["completed"].as_u64().unwrap() > 0 && record[2]["completed"].as_u64().unwrap() > 0, "{record}");
    assert!(record[1]["resent"].as_u64().unwrap() > 0, "its requests in flight went elsewhere: {record}");
    assert!(stdout.contains(&format!("endpoint http://127.0.0.1:{}/v1", ports[1])) && stdout.contains("DOWN"), "{stdout}");
}

#[test]
fn ctrl_c_during_an_llm_server_run_stops_the_stand_in_it_started() {
    let cwd = scratch("llm-ctrl-c");
    let port = format!("--serving_port={}", free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args([
            "run_harness",
            "--system_name=CPU-dev",
            "--benchmarks=llama2-70b",
            "--accuracy_target=99.9",
            "--scenarios=server",
            "--server_target_qps=20",
            "--min_duration=60000",
            &port,
            PACED,
        ])
        .current_dir(&cwd)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while detail_log_paths(&cwd).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: kill(2) of the process group this test started (a terminal's Ctrl-C).
    assert_eq!(unsafe { kill(-(child.id() as i32), 2) }, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stdout.contains("ABORTED"), "{stdout}");
    let pid: i32 = stderr.split("started instance0 (pid ").nth(1).and_then(|s| s.split(')').next()).and_then(|s| s.parse().ok()).expect("the stand-in's pid");
    // SAFETY: kill(2) with signal 0 only probes whether the process exists.
    assert_ne!(unsafe { kill(pid, 0) }, 0, "the stand-in the harness started is gone");
}

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}
