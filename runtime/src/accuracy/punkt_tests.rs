//! Punkt against `nltk.sent_tokenize` itself on the same texts (`tests/fixtures/accuracy/`,
//! made by `scripts/make_punkt_fixtures.py` with NLTK and the English `punkt_tab` model; its
//! README gives the versions and where the model came from), plus hand-checked cases.

use super::*;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy")
}

fn english() -> Punkt {
    Punkt::load(&fixtures().join("punkt_tab/english")).unwrap()
}

#[test]
fn sentences_agree_with_nltk_on_every_fixture_text() {
    let punkt = english();
    let text = std::fs::read_to_string(fixtures().join("sent_tokenize.jsonl")).unwrap();
    let mut wrong = Vec::new();
    let mut texts = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let input = v["text"].as_str().unwrap();
        let expected: Vec<&str> = v["sentences"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        let got = punkt.sentences(input);
        if got != expected {
            wrong.push(format!("text {input:?}\n  nltk: {expected:?}\n  ours: {got:?}"));
        }
        texts += 1;
    }
    assert!(texts > 100, "{texts} texts");
    assert!(wrong.is_empty(), "{} of {texts} texts split differently:\n{}", wrong.len(), wrong.iter().take(10).cloned().collect::<Vec<_>>().join("\n"));
}

#[test]
fn hand_checked_sentences_and_a_missing_model() {
    let punkt = english();
    assert_eq!(punkt.sentences("Mr. Smith went to Washington. He arrived at 5 p.m. on Jan. 3rd."), ["Mr. Smith went to Washington.", "He arrived at 5 p.m. on Jan. 3rd."]);
    assert_eq!(punkt.sentences("Very bad acting!!! I promise."), ["Very bad acting!!!", "I promise."]);
    assert_eq!(punkt.sentences("(See above.) Then we left."), ["(See above.)", "Then we left."]);
    assert_eq!(punkt.sentences("  \n "), Vec::<&str>::new());
    let missing = Punkt::load(Path::new("/nonexistent/punkt_tab/english")).err().unwrap().to_string();
    assert!(missing.contains("/nonexistent/punkt_tab/english/collocations.tab") && missing.contains("punkt_tab"), "{missing}");
}
