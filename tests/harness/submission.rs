//! From real LoadGen runs to a packed submission: staging (and its refusals), compliance staging,
//! inferred results, truncation, export and pack, through the binary.

use super::{assert_ran_invalid, detail_logs, mlperf, scratch};
use mlperf_runtime::fsutil::walk_files;
use std::path::{Path, PathBuf};
use std::process::Output;

const SCENARIO: &str = "build/submission/closed/Example/results/CPU-dev_RS/resnet/SingleStream";
const SELECT: [&str; 3] = ["--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream"];

fn ok(out: &Output) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    text
}

fn refused(out: &Output) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "expected a refusal:\n{text}");
    text
}

fn with_selection<'a>(command: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![command];
    args.extend_from_slice(&SELECT);
    args.extend_from_slice(extra);
    args
}

/// The run directory of the only run of `mode` under `cwd/build/logs`.
fn run_dir(cwd: &Path, mode: &str) -> PathBuf {
    let dirs: Vec<PathBuf> = walk_files(&cwd.join("build/logs"))
        .into_iter()
        .filter(|p| p.ends_with("run_plan.json") && std::fs::read_to_string(p).unwrap().contains(&format!("\"mode\": \"{mode}\"")))
        .map(|p| p.parent().unwrap().to_path_buf())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// A VALID performance run (fixed-latency device, 2 s) and an accuracy run (null backend) of
/// resnet50 SingleStream: real LoadGen, non-submittable because the backends are test doubles.
/// accuracy.txt is written in the accuracy script's format since test backends are never scored.
/// (The performance run lasts over a second, so the two runs get different timestamps.)
fn performance_and_accuracy_runs(cwd: &Path) {
    let perf = ["--backend=fixed_latency", "--backend_latency_us=1000", "--single_stream_expected_latency_ns=1000000", "--min_duration=2000"];
    ok(&mlperf(cwd, &with_selection("run_harness", &perf)));
    ok(&mlperf(cwd, &with_selection("run_harness", &["--backend=null", "--test_mode=AccuracyOnly"])));
    let accuracy = run_dir(cwd, "AccuracyOnly");
    std::fs::write(accuracy.join("accuracy.txt"), "accuracy=100.000%, good=50000, total=50000\n").unwrap();
}

/// Verified audits in the layout build/compliance promises (what run_audit_harness writes).
fn verified_audit(cwd: &Path, test: &str, verdict: &str) {
    let dir = cwd.join("build/compliance/CPU-dev_RS/resnet/SingleStream").join(test);
    let perf = run_dir(cwd, "PerformanceOnly");
    std::fs::create_dir_all(dir.join("performance/run_1")).unwrap();
    for log in ["mlperf_log_summary.txt", "mlperf_log_detail.txt"] {
        std::fs::copy(perf.join(log), dir.join("performance/run_1").join(log)).unwrap();
    }
    std::fs::write(dir.join("verify_performance.txt"), format!("reference score = 1\ntest score = 1\n{verdict}\n")).unwrap();
    if test == "TEST01" {
        std::fs::write(dir.join("verify_accuracy.txt"), format!("num_acc_log_entries = 2\nnum_perf_log_data_mismatch = 0\n{verdict}\n")).unwrap();
        std::fs::create_dir_all(dir.join("accuracy")).unwrap();
        std::fs::write(dir.join("accuracy/mlperf_log_accuracy.json"), "[\n{\"seq_id\" : 0, \"qsl_idx\" : 7, \"data\" : \"\"}\n]\n").unwrap();
    }
}

fn sha256sum(path: &Path) -> String {
    let out = std::process::Command::new("sha256sum").arg(path).output().expect("sha256sum runs");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_string()
}

/// Relative path -> bytes of every file below `root`.
fn contents(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    walk_files(root).into_iter().map(|p| (p.strip_prefix(root).unwrap().to_path_buf(), std::fs::read(&p).unwrap())).collect()
}

#[test]
fn stage_infer_truncate_export_and_pack_a_submission() {
    let cwd = scratch("submission-chain");
    performance_and_accuracy_runs(&cwd);
    let scenario = cwd.join(SCENARIO);

    // A non-submittable run is refused, with its reasons and the way out.
    let text = refused(&mlperf(&cwd, &with_selection("stage_results", &[])));
    assert!(text.contains("not submittable") && text.contains("test backend") && text.contains("--allow-non-submittable"), "{text}");
    assert!(!cwd.join("build/submission").exists(), "a refusal writes nothing");

    let text = ok(&mlperf(&cwd, &with_selection("stage_results", &["--allow-non-submittable"])));
    assert!(text.contains("STAGING A NON-SUBMITTABLE RUN") && text.contains("test backend"), "{text}");
    for file in [
        "user.conf",
        "measurements.json",
        "README.md",
        "performance/run_1/mlperf_log_detail.txt",
        "performance/run_1/mlperf_log_summary.txt",
        "accuracy/accuracy.txt",
        "accuracy/mlperf_log_accuracy.json",
        "accuracy/NON_SUBMITTABLE.txt",
    ] {
        assert!(scenario.join(file).is_file(), "{file} staged");
    }
    assert!(cwd.join("build/submission/closed/Example/systems/CPU-dev_RS.json").is_file());
    assert!(cwd.join("build/submission/closed/Example/src/README.md").is_file());
    // What ran (a --min_duration override) is what is staged.
    assert_eq!(std::fs::read(scenario.join("user.conf")).unwrap(), std::fs::read(run_dir(&cwd, "PerformanceOnly").join("user.conf")).unwrap());

    // Staging again changes nothing; a changed staged file is only replaced with --force.
    assert!(ok(&mlperf(&cwd, &with_selection("stage_results", &["--allow-non-submittable"]))).contains("0 files written, 0 replaced"));
    let readme = std::fs::read(scenario.join("README.md")).unwrap();
    std::fs::write(scenario.join("README.md"), "edited by hand\n").unwrap();
    let text = refused(&mlperf(&cwd, &with_selection("stage_results", &["--allow-non-submittable"])));
    assert!(text.contains("README.md") && text.contains("--force"), "{text}");
    assert_eq!(std::fs::read_to_string(scenario.join("README.md")).unwrap(), "edited by hand\n");
    ok(&mlperf(&cwd, &with_selection("stage_results", &["--allow-non-submittable", "--force"])));
    assert_eq!(std::fs::read(scenario.join("README.md")).unwrap(), readme);

    // One writer at a time into an --out: a live writer's lock refuses the next with its pid ...
    let (out, lock) = (cwd.join("build/concurrent"), cwd.join("build/.concurrent.mlperf.lock"));
    let into = |out: &Path, logs: &str| {
        with_selection("stage_results", &["--allow-non-submittable", "--log_dir", logs, "--out", out.to_str().unwrap()]).iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let stage_into = |out: &Path, logs: &str| {
        let args = into(out, logs);
        std::process::Command::new(env!("CARGO_BIN_EXE_mlperf")).args(&args).current_dir(&cwd).output().unwrap()
    };
    std::fs::write(&lock, format!("{} stage_results\n", std::process::id())).unwrap();
    let text = refused(&stage_into(&out, "build/logs"));
    assert!(text.contains(&format!("mlperf stage_results (pid {}) is writing", std::process::id())) && text.contains(".concurrent.mlperf.lock"), "{text}");
    assert!(walk_files(&out).is_empty(), "nothing written under a held lock");
    // ... and a lock whose process is gone is taken over.
    let gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait_with_output().unwrap();
    std::fs::write(&lock, format!("{pid} stage_results\n")).unwrap();
    ok(&stage_into(&out, "build/logs"));
    assert!(!lock.exists(), "the lock goes with its writer");
    // Two writers of different runs at once: one stages, the other is refused, never replaced.
    assert!(std::process::Command::new("cp").args(["-r", "build/logs", "build/logs2"]).current_dir(&cwd).status().unwrap().success());
    for log in walk_files(&cwd.join("build/logs2")).into_iter().filter(|p| p.ends_with("mlperf_log_detail.txt")) {
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.push('\n');
        std::fs::write(&log, text).unwrap();
    }
    for attempt in 0..4 {
        let out = cwd.join(format!("build/race{attempt}"));
        let spawn = |logs: &str| {
            std::process::Command::new(env!("CARGO_BIN_EXE_mlperf"))
                .args(into(&out, logs))
                .current_dir(&cwd)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (first, second) = (spawn("build/logs"), spawn("build/logs2"));
        let ends = [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()];
        assert_eq!(
            ends.iter().filter(|o| o.status.success()).count(),
            1,
            "exactly one writer stages: {:?}",
            ends.iter().map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).collect::<Vec<_>>()
        );
        let loser = ends.iter().find(|o| !o.status.success()).unwrap();
        let why = String::from_utf8_lossy(&loser.stderr);
        assert!(why.contains("is writing") || why.contains("would change"), "{why}");
    }

    // Truncation needs the round's audits (resnet: TEST01, TEST04) staged first.
    let text = refused(&mlperf(&cwd, &["truncate_results"]));
    assert!(text.contains("TEST01") && text.contains("TEST04") && text.contains("stage_compliance"), "{text}");

    // Compliance: missing, then failed verification, are refused; passed ones are staged.
    let text = refused(&mlperf(&cwd, &with_selection("stage_compliance", &[])));
    assert!(text.contains("run_audit_harness"), "{text}");
    verified_audit(&cwd, "TEST01", "TEST PASS");
    verified_audit(&cwd, "TEST04", "TEST FAIL");
    let text = refused(&mlperf(&cwd, &with_selection("stage_compliance", &[])));
    assert!(text.contains("TEST04: verification failed") && text.contains("TEST04 did not pass (no TEST PASS)"), "{text}");
    assert!(!scenario.join("TEST01").exists(), "a refusal writes nothing");
    verified_audit(&cwd, "TEST04", "TEST PASS");
    ok(&mlperf(&cwd, &with_selection("stage_compliance", &[])));
    assert!(scenario.join("TEST04/verify_performance.txt").is_file() && scenario.join("TEST01/accuracy/mlperf_log_accuracy.json").is_file());

    // Inferred MultiStream / Offline from the SingleStream result (CPU-dev is an edge system).
    let text = ok(&mlperf(&cwd, &["infer_results"]));
    assert!(text.contains("2 results inferred"), "{text}");
    for inferred in ["MultiStream", "Offline"] {
        let dir = scenario.with_file_name(inferred);
        assert_eq!(std::fs::read(dir.join("performance/run_1/mlperf_log_detail.txt")).unwrap(), std::fs::read(scenario.join("performance/run_1/mlperf_log_detail.txt")).unwrap());
        assert!(std::fs::read_to_string(dir.join("README.md")).unwrap().contains(&format!("This {inferred} result is INFERRED")));
        assert!(dir.join("TEST04/verify_performance.txt").is_file());
    }
    assert!(ok(&mlperf(&cwd, &["infer_results"])).contains("0 results inferred"), "measured and inferred results are never replaced");

    // Truncation: hash of the full log (checked with sha256sum) and both 4096-byte ends.
    let full = std::fs::read(scenario.join("accuracy/mlperf_log_accuracy.json")).unwrap();
    assert!(full.len() > 100_000, "50000 accuracy-log entries");
    let short_test01 = std::fs::read(scenario.join("TEST01/accuracy/mlperf_log_accuracy.json")).unwrap();
    ok(&mlperf(&cwd, &["truncate_results"]));
    let backup = cwd.join("build/full_results").join(SCENARIO.strip_prefix("build/submission/").unwrap()).join("accuracy/mlperf_log_accuracy.json");
    assert_eq!(std::fs::read(&backup).unwrap(), full, "the full log is backed up");
    let truncated = std::fs::read(scenario.join("accuracy/mlperf_log_accuracy.json")).unwrap();
    assert_eq!(truncated.len(), 4096 + 7 + 4096);
    assert_eq!((&truncated[..4096], &truncated[4096..4103], &truncated[4103..]), (&full[..4096], &b"\n\n...\n\n"[..], &full[full.len() - 4096..]));
    let accuracy_txt = std::fs::read_to_string(scenario.join("accuracy/accuracy.txt")).unwrap();
    assert_eq!(accuracy_txt, format!("accuracy=100.000%, good=50000, total=50000\n\nhash={}\n", sha256sum(&backup)));
    // The short TEST01 log stays whole and still gets its hash; the inferred copies are truncated too.
    assert_eq!(std::fs::read(scenario.join("TEST01/accuracy/mlperf_log_accuracy.json")).unwrap(), short_test01);
    let test01_hash = std::fs::read_to_string(scenario.join("TEST01/accuracy/accuracy.txt")).unwrap();
    assert_eq!(test01_hash, format!("\nhash={}\n", sha256sum(&scenario.join("TEST01/accuracy/mlperf_log_accuracy.json"))));
    assert_eq!(std::fs::read(scenario.with_file_name("Offline").join("accuracy/mlperf_log_accuracy.json")).unwrap(), truncated);
    // A second run changes nothing.
    let before = contents(&cwd.join("build/submission"));
    assert!(ok(&mlperf(&cwd, &["truncate_results"])).contains("0 logs truncated, 0 kept whole"));
    assert_eq!(contents(&cwd.join("build/submission")), before);

    // Export: a clean copy, with what was left out listed.
    std::fs::write(scenario.join("README.md~"), "backup").unwrap();
    std::os::unix::fs::symlink(scenario.join("user.conf"), scenario.join("linked.conf")).unwrap();
    std::fs::write(cwd.join("build/submission/notes.txt"), "scratch").unwrap();
    // A link anywhere refuses the whole export (as check_submission fails on it); nothing is written.
    let out = mlperf(&cwd, &["export_submission"]);
    assert_eq!(out.status.code(), Some(mlperf_runtime::error::exit::CHECK_FAILED));
    let text = refused(&out);
    assert!(text.contains("SingleStream/linked.conf\": symbolic link to") && text.contains("nothing was exported"), "{text}");
    assert!(!cwd.join("build/export").exists());
    std::fs::remove_file(scenario.join("linked.conf")).unwrap();
    let text = ok(&mlperf(&cwd, &["export_submission"]));
    assert!(text.contains("README.md~: editor backup") && text.contains("notes.txt: not a division"), "{text}");
    assert!(text.contains("NON-SUBMITTABLE"), "{text}");
    let export = contents(&cwd.join("build/export"));
    let names: Vec<String> = export.iter().map(|(p, _)| p.display().to_string()).collect();
    assert!(
        !names.iter().any(|n| n.ends_with("NON_SUBMITTABLE.txt") || n.ends_with("run_plan.json") || n.ends_with('~') || n.ends_with("linked.conf") || n == "notes.txt"),
        "{names:?}"
    );
    let staged = contents(&cwd.join("build/submission"));
    assert!(export.iter().all(|file| staged.contains(file)), "exported files are byte copies");
    assert!(export.iter().any(|(p, _)| p.ends_with("SingleStream/accuracy/accuracy.txt")));
    assert!(refused(&mlperf(&cwd, &["export_submission"])).contains("--force"));
    ok(&mlperf(&cwd, &["export_submission", "--force"]));

    // Pack: the tarball unpacks to the export; the checksum file verifies with sha256sum -c.
    ok(&mlperf(&cwd, &["pack_submission"]));
    let build = cwd.join("build");
    assert!(std::process::Command::new("sha256sum").args(["-c", "mlperf_submission_Example.sha256"]).current_dir(&build).status().unwrap().success());
    let unpacked = cwd.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    assert!(std::process::Command::new("tar").arg("-xzf").arg(build.join("mlperf_submission_Example.tar.gz")).current_dir(&unpacked).status().unwrap().success());
    assert_eq!(contents(&unpacked), export);
    assert!(refused(&mlperf(&cwd, &["pack_submission"])).contains("--force"));

    // Encrypted: decrypts with the official unpack command (openssl enc -d -aes256).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args(["pack_submission", "--encrypt", "--force"])
        .env("MLPERF_PACK_PASSPHRASE", "correct horse")
        .current_dir(&cwd)
        .output()
        .unwrap();
    ok(&out);
    let decrypted = cwd.join("decrypted");
    std::fs::create_dir_all(&decrypted).unwrap();
    let script = format!("openssl enc -d -aes256 -pass env:PW -in {} | tar -xz", build.join("mlperf_submission_Example.tar.gz").display());
    assert!(std::process::Command::new("sh").args(["-c", &script]).env("PW", "correct horse").current_dir(&decrypted).status().unwrap().success());
    assert_eq!(contents(&decrypted), export);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args(["pack_submission", "--encrypt", "--force"])
        .env_remove("MLPERF_PACK_PASSPHRASE")
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(refused(&out).contains("MLPERF_PACK_PASSPHRASE"));
}

#[test]
fn staging_refuses_invalid_runs() {
    let cwd = scratch("submission-invalid");
    // A null SUT answers a one-minute run's queries in milliseconds: LoadGen calls it INVALID.
    assert_ran_invalid(&mlperf(&cwd, &with_selection("run_harness", &["--backend=null", "--test_run"])));
    let (_, log) = detail_logs(&cwd).remove(0);
    assert_eq!(log.str("result_validity"), Some("INVALID"));
    let text = refused(&mlperf(&cwd, &with_selection("stage_results", &["--allow-non-submittable"])));
    let run = run_dir(&cwd, "PerformanceOnly");
    assert!(text.contains(&format!("refused {}: INVALID", run.strip_prefix(&cwd).unwrap().display())), "{text}");
    assert!(text.contains("mlperf run_harness --benchmarks=resnet50 --scenarios=singlestream"), "{text}");
    assert!(text.contains("no usable AccuracyOnly run"), "{text}");
    assert!(!cwd.join("build/submission").exists());
}

/// A power run staged through the binary: the recorded power-dev session (runtime's fixture, from
/// an opt-in run through power-dev; its PROVENANCE.md) kept in a real run's directory lands as the
/// round's layout wants it: `performance/` holds `power/`, `ranging/` and `run_1/` with `spl.txt`,
/// the documents go into the scenario directory, the stand-in makes it non-submittable, and a
/// power result from a config that is not MaxQ is staged with a warning naming the way out.
#[test]
fn a_power_run_stages_its_logs_and_documents_where_the_round_wants_them() {
    let cwd = scratch("submission-power");
    performance_and_accuracy_runs(&cwd);
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/tests/fixtures/power/recorded-resnet50-offline");
    let session = run_dir(&cwd, "PerformanceOnly").join("power_session");
    for file in walk_files(&recorded) {
        let to = session.join(file.strip_prefix(&recorded).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    let text = refused(&mlperf(&cwd, &with_selection("stage_results", &[])));
    assert!(text.contains("power measured by the PTDaemon stand-in"), "{text}");
    let text = ok(&mlperf(&cwd, &with_selection("stage_results", &["--allow-non-submittable"])));
    assert!(text.contains("a power result staged under CPU-dev_RS (a MaxP config)") && text.contains("--power_setting MaxQ"), "{text}");
    let scenario = cwd.join(SCENARIO);
    let names = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    };
    // The run's provenance beside the checker's directories (export_submission leaves both files out).
    assert_eq!(names(&scenario.join("performance")), ["NON_SUBMITTABLE.txt", "power", "ranging", "run_1", "run_plan.json"]);
    assert_eq!(names(&scenario.join("performance/power")), ["client.json", "client.log", "ptd_logs.txt", "server.json", "server.log"]);
    // run_1 also holds the run's own accuracy log, which the checker allows (OPTIONAL_PERF_FILES).
    assert_eq!(names(&scenario.join("performance/run_1")), ["mlperf_log_accuracy.json", "mlperf_log_detail.txt", "mlperf_log_summary.txt", "spl.txt"]);
    assert_eq!(names(&scenario.join("performance/ranging")), ["mlperf_log_detail.txt", "mlperf_log_summary.txt", "spl.txt"]);
    for run in ["ranging", "run_1"] {
        assert_eq!(
            std::fs::read(scenario.join("performance").join(run).join("spl.txt")).unwrap(),
            std::fs::read(recorded.join(run).join("spl.txt")).unwrap(),
            "{run}: byte for byte"
        );
    }
    let settings = std::fs::read_to_string(scenario.join("power_settings.md")).unwrap();
    assert!(settings.starts_with("# Power settings: CPU-dev_RS\n") && settings.contains("| power setting | MaxP |"), "{settings}");
    let analyzer = std::fs::read_to_string(scenario.join("analyzer_table.md")).unwrap();
    assert!(analyzer.contains("| 1 | YokogawaWT310 | STANDIN0000 | 1.11.1-standin-20261128 |"), "{analyzer}");
    // Nowhere else: not in the performance directory, not above the scenario.
    let documents: Vec<PathBuf> = walk_files(&cwd.join("build/submission")).into_iter().filter(|f| f.ends_with("power_settings.md") || f.ends_with("analyzer_table.md")).collect();
    assert_eq!(documents, [scenario.join("analyzer_table.md"), scenario.join("power_settings.md")]);
}
