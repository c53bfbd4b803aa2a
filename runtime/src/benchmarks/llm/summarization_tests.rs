//! The summarisation scorer against what the reference evaluations print for the same answers
//! (`tests/fixtures/accuracy/summarization_eval.json`, made by
//! `scripts/make_summarization_fixture.py` with NLTK 3.8.1 and rouge_score from PyPI).

use super::*;
use std::path::PathBuf;

#[test]
fn prints_what_the_reference_evaluations_print_for_the_fixture_answers() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy");
    let punkt = Punkt::load(&dir.join("punkt_tab/english")).unwrap();
    let fixture: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summarization_eval.json")).unwrap()).unwrap();
    let pairs: Vec<(Answer, &str)> = fixture["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (Answer { tokens: p["tokens"].as_u64().unwrap() as usize, text: p["prediction"].as_str().unwrap().to_string() }, p["reference"].as_str().unwrap()))
        .collect();
    assert!(pairs.len() > 100);
    let score = score(&punkt, &pairs);
    assert_eq!(score.accuracy_txt(ResultStyle::Llama2), fixture["llama2"].as_str().unwrap());
    assert_eq!(score.accuracy_txt(ResultStyle::Llama31), fixture["llama31"].as_str().unwrap());
    let scored = score.scored(ResultStyle::Llama2);
    assert_eq!(scored.metrics[0], ("ROUGE1".to_string(), score.rouge1));
}

#[test]
fn numpy_sums_and_rounds_as_numpy_does() {
    // Pairwise summation agrees with a running sum up to rounding.
    let v: Vec<f64> = (0..1000).map(|i| 0.1 + f64::from(i) * 1e-3).collect();
    let running = v.iter().fold(0.0, |s, x| s + x);
    assert!((pairwise_sum(&v) - running).abs() < 1e-9);
    assert_eq!(pairwise_sum(&[1.0, 2.0, 3.0]), 6.0);
    assert_eq!(numpy_round(2.675, 2), 2.68, "NumPy scales first: 2.675 * 100 is 267.5 in binary, rounded half to even");
    assert_eq!(python_round(2.675, 2), 2.67, "Python rounds the exact binary value 2.67499999...");
    assert_eq!(numpy_round(0.125, 2), 0.12, "half to even");
}
