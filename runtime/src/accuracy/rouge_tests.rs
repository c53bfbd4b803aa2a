//! ROUGE and the Porter stemmer against the official libraries' own output on the same input
//! (`tests/fixtures/accuracy/`, made by `scripts/make_rouge_fixtures.py` with NLTK and
//! rouge_score from PyPI; its README gives the versions), plus hand-checked cases.

use super::*;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_porter_stemmer_agrees_with_nltk_on_every_fixture_word() {
    let text = fixture("porter_nltk.tsv");
    let mut wrong = Vec::new();
    let mut words = 0;
    for line in text.lines() {
        let (word, expected) = line.split_once('\t').unwrap_or_else(|| panic!("not word<TAB>stem: {line:?}"));
        words += 1;
        let got = porter::stem(word);
        if got != expected {
            wrong.push(format!("{word}: nltk {expected}, ours {got}"));
        }
    }
    assert!(words > 5000, "{words} words");
    assert!(wrong.is_empty(), "{} of {words} stems differ:\n{}", wrong.len(), wrong.iter().take(40).cloned().collect::<Vec<_>>().join("\n"));
}

#[test]
fn rouge_agrees_with_rouge_score_on_every_fixture_pair() {
    let mut scorer = RougeScorer::new();
    let mut pairs = 0;
    for line in fixture("rouge_score.jsonl").lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (target, prediction) = (v["target"].as_str().unwrap(), v["prediction"].as_str().unwrap());
        let ours = scorer.score(target, prediction);
        for (key, got) in [("rouge1", ours.rouge1), ("rouge2", ours.rouge2), ("rougeL", ours.rouge_l), ("rougeLsum", ours.rouge_lsum)] {
            let expected: Vec<f64> = v[key].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            for (name, e, g) in [("precision", expected[0], got.precision), ("recall", expected[1], got.recall), ("fmeasure", expected[2], got.fmeasure)] {
                assert!((e - g).abs() <= 1e-12, "{key} {name}: rouge_score {e}, ours {g}\ntarget: {target:?}\nprediction: {prediction:?}");
            }
        }
        pairs += 1;
    }
    assert!(pairs > 100, "{pairs} pairs");
}

#[test]
fn hand_checked_scores() {
    let mut s = RougeScorer::new();
    let same = s.score("The cats sat.", "the cat SAT!");
    assert_eq!(same.rouge1, Score { precision: 1.0, recall: 1.0, fmeasure: 1.0 }, "case, punctuation and plural are the same tokens");
    // target a b c d, prediction a c x: unigram overlap 2, bigrams none, LCS a c.
    let r = s.score("alpha beta gamma delta", "alpha gamma xray");
    assert_eq!((r.rouge1.precision, r.rouge1.recall), (2.0 / 3.0, 0.5));
    assert_eq!(r.rouge2, Score::default());
    assert_eq!((r.rouge_l.precision, r.rouge_l.recall), (2.0 / 3.0, 0.5));
    assert_eq!(s.score("", "words").rouge_l, Score::default());
    // Lsum: two target sentences, each matched in a different predicted sentence.
    let lsum = s.score("one two\nthree four", "three four\none two").rouge_lsum;
    assert_eq!(lsum.fmeasure, 1.0);
    assert_eq!(s.score("one two three four", "three four\none two").rouge_lsum.recall, 1.0, "the union of LCSs with every predicted sentence");
}
