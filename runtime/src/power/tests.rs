//! The session reader and the metric on a generated session.

use super::fixture::{Spec, tempdir, write_session};
use super::metric::{PowerMetric, power_metric};
use super::session::Session;
use mlperf_config::Scenario;

#[test]
fn a_generated_session_reads_back_with_its_windows_and_samples() {
    let root = write_session(&tempdir("read"), &Spec::default());
    let session = Session::read(&root).unwrap();
    assert_eq!(session.testing.window.seconds(), 60.0);
    assert_eq!(session.ranging.samples.len(), 80);
    assert_eq!(session.client["session_name"], session.server["session_name"]);
}

// Figures from the submission checker's averaging (checks/power_check.py get_power_metric_check,
// inference b66003e) run by python3 on this fixture: see tests/fixtures/power/metric-provenance.md.
#[test]
fn the_metric_matches_the_checkers_figures() {
    let root = write_session(&tempdir("metric"), &Spec::default());
    let session = Session::read(&root).unwrap();
    let Ok(PowerMetric::Watts { watts, samples_per_second_per_watt }) = power_metric(&session.testing, Scenario::Offline, 40.0) else { panic!() };
    assert!((watts - 98.20338983050847).abs() < 1e-9, "{watts}");
    assert!((samples_per_second_per_watt - 0.40731791508457027).abs() < 1e-12);
    let root = write_session(&tempdir("metric-ss"), &Spec { scenario: "SingleStream", ..Spec::default() });
    let session = Session::read(&root).unwrap();
    let Ok(PowerMetric::MillijoulesPerQuery { millijoules, queries_per_joule }) = power_metric(&session.testing, Scenario::SingleStream, 0.0) else { panic!() };
    assert!((millijoules - 2455.084745762712).abs() < 1e-6, "{millijoules}");
    assert!((queries_per_joule - 0.4073179150845702).abs() < 1e-12);
}

#[test]
fn a_multistream_result_inferred_from_singlestream_counts_eight_samples_a_query() {
    let root = write_session(&tempdir("metric-ms"), &Spec { scenario: "SingleStream", ..Spec::default() });
    let session = Session::read(&root).unwrap();
    let single = power_metric(&session.testing, Scenario::SingleStream, 0.0).unwrap().value().0;
    let multi = power_metric(&session.testing, Scenario::MultiStream, 0.0).unwrap().value().0;
    assert!((multi - 8.0 * single).abs() < 1e-9);
    assert!((multi - 19640.677966101695).abs() < 1e-6, "the checker's figure: {multi}");
}

#[test]
fn no_reading_inside_the_window_is_an_error_naming_the_run() {
    let root = write_session(&tempdir("metric-none"), &Spec { testing_watts: -1.0, ..Spec::default() });
    let session = Session::read(&root).unwrap();
    let e = power_metric(&session.testing, Scenario::Offline, 40.0).unwrap_err().to_string();
    assert!(e.contains("run_1/spl.txt") && e.contains("power window"), "{e}");
}
