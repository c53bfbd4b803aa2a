use super::*;
use crate::compliance::testlogs::{dir, summary, write};

fn check(name: &str, reference: &str, test: &str) -> Verification {
    let d = dir(name);
    compare_summaries(&write(&d, "ref.txt", reference), &write(&d, "test.txt", test), 10.0)
}

#[test]
fn offline_within_tolerance_passes_with_the_scripts_report() {
    let v = check("offline-pass", &summary("Offline", "VALID", "100.5", 0), &summary("Offline", "VALID", "110.4", 0));
    assert!(v.passed);
    // Offline / Server scores are printed as the summary spells them.
    assert_eq!(v.report, "Verifying performance.\nreference score = 100.5\ntest score = 110.4\nTEST PASS\n");
}

#[test]
fn a_caching_sut_more_than_ten_percent_faster_fails() {
    let v = check("offline-fail", &summary("Offline", "VALID", "100", 0), &summary("Offline", "VALID", "110.5", 0));
    assert!(!v.passed);
    assert!(v.report.ends_with("TEST FAIL: Test score invalid\n"));
    // Slower is never a failure.
    assert!(check("offline-slow", &summary("Offline", "VALID", "100", 0), &summary("Offline", "VALID", "10", 0)).passed);
}

#[test]
fn server_reads_completed_samples_per_second() {
    assert!(check("server-pass", &summary("Server", "VALID", "1000", 0), &summary("Server", "VALID", "1050", 0)).passed);
    assert!(!check("server-fail", &summary("Server", "VALID", "1000", 0), &summary("Server", "VALID", "1200", 0)).passed);
}

#[test]
fn singlestream_scores_are_rates_of_the_early_stopping_estimate() {
    // 2 ms and 1.9 ms: rates 500 and 526.3 (< 500 x 1.2, the relaxed threshold the script applies
    // because the rate is below 200000).
    let v = check("ss-pass", &summary("SingleStream", "VALID", "2000000", 0), &summary("SingleStream", "VALID", "1900000", 0));
    assert!(v.passed, "{}", v.report);
    assert_eq!(v.report, "Verifying performance.\nreference score = 500.0\ntest score = 526.3157894736842\nTEST PASS\n");
    let v = check("ss-fail", &summary("SingleStream", "VALID", "2000000", 0), &summary("SingleStream", "VALID", "1600000", 0));
    assert!(!v.passed, "625 per second is more than 20 % above 500");
}

#[test]
fn multistream_uses_the_99th_percentile_estimate() {
    let v = check("ms", &summary("MultiStream", "VALID", "10000000", 0), &summary("MultiStream", "VALID", "9000000", 0));
    assert!(v.report.contains("reference score = 100.0\ntest score = 111.11111111111111\n"), "{}", v.report);
    assert!(v.passed);
}

#[test]
fn invalid_runs_and_mismatched_scenarios_fail_and_errors_warn() {
    let v = check("invalid-ref", &summary("Offline", "INVALID", "100", 0), &summary("Offline", "VALID", "100", 0));
    assert_eq!(v.report, "Verifying performance.\nTEST FAIL: Reference results are invalid\n");
    let v = check("invalid-test", &summary("Offline", "VALID", "100", 0), &summary("Offline", "INVALID", "100", 0));
    assert!(!v.passed && v.report.ends_with("TEST FAIL: Test results are invalid\n"));
    let v = check("scenarios", &summary("Offline", "VALID", "100", 0), &summary("Server", "VALID", "100", 0));
    assert!(!v.passed && v.report.ends_with("Test and reference scenarios do not match!\n"));
    let v = check("errors", &summary("Offline", "VALID", "100", 3), &summary("Offline", "VALID", "100", 1));
    assert!(v.passed);
    assert!(v.report.contains("WARNING: 3 ERROR reported in reference results\nWARNING: 1 ERROR reported in test results\n"), "{}", v.report);
}

#[test]
fn a_summary_without_a_score_fails() {
    let v = check("no-score", &summary("Offline", "VALID", "100", 0).replace("Samples per second", "Something"), &summary("Offline", "VALID", "100", 0));
    assert!(!v.passed);
    assert!(v.report.contains("reference score = 0\n"), "{}", v.report);
}
