use super::*;

#[test]
fn needle_matches_score_the_label_characters_found_per_answer_uuid() {
    let a = "3f2b8c1e-9d4a-4b7e-8c2f-1a2b3c4d5e6f";
    assert_eq!(niah_em(&format!("The key is {a}."), &format!("It is {}", a.to_uppercase())), 100.0);
    assert_eq!(niah_em(a, "no uuid at all"), 0.0);
    // Each label character found anywhere in the answer's UUID counts.
    let other = "00000000-0000-0000-0000-000000000000";
    assert_eq!(niah_em(a, other), 11.11, "the 0s and the four dashes of 36 characters: round(400/36, 2)");
    assert_eq!(niah_em(a, &format!("{a} and {other}")), 50.0, "two answer UUIDs, one label UUID: the sum over pairs divided by 2");
}

#[test]
fn qa_matches_take_the_last_answer_and_any_alternative() {
    assert_eq!(qa_em("Paris|paris, France", "I think\nAnswer: Paris"), 100.0);
    assert_eq!(qa_em("Paris|paris, France", "Answer: Lyon. Answer: PARIS, france"), 100.0, "white space and case removed, the last Answer: counts");
    assert_eq!(qa_em("Paris", "Answer: Paris Answer: Lyon"), 0.0);
    assert_eq!(qa_em("New York", "it is newyork city"), 100.0, "the alternative contained in the squeezed answer");
    assert_eq!(qa_em("Berlin", "Answer: "), 100.0, "an empty answer is contained in every label, as in the script");
}

/// The official evaluation's output on the fixtures of `tests/fixtures/accuracy/mixed/` (made by
/// `scripts/make_mixed_eval_fixtures.py`: `evaluate-accuracy.py` of mlcommons/inference b66003e1
/// with rouge_score 0.1.2, NLTK 3.9.1 and NumPy 2, on these files): the same text here, but for
/// `gen_len`, which NumPy 2 prints as `np.int64(N)` and the script's pinned environment (vLLM
/// 0.6.3, so NumPy 1) as `N`.
mod official {
    use super::*;
    use crate::accuracy::log::read_accuracy_log;
    use crate::accuracy::punkt::Punkt;
    use crate::benchmarks::llm::dataset::{Format, References, read};
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy/mixed").join(name)
    }

    #[test]
    fn llama3_405b_prints_what_its_evaluation_prints() {
        let answers: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture("answers.json")).unwrap()).unwrap();
        let texts: Vec<String> = answers["llama3.1-405b"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
        let References::Targets(targets) = read(&fixture("llama3_405b_dataset.pkl"), Format::MetricTargets).unwrap().references else { panic!("targets") };
        let decode = |ids: &[i32]| Ok(texts[ids[0] as usize].clone());
        let punkt = Punkt::load(&fixture("../punkt_tab/english")).unwrap();
        let score = evaluate(read_accuracy_log(&fixture("llama3_405b_log.json")).unwrap(), &targets, &decode, &punkt).unwrap();
        let official = std::fs::read_to_string(fixture("llama3_405b_accuracy.txt")).unwrap();
        let gen_len = format!("'gen_len': np.int64({})", score.gen_len);
        assert!(official.contains(&gen_len), "{official}");
        assert_eq!(score.scored().text, official.replace(&gen_len, &format!("'gen_len': {}", score.gen_len)));
    }
}
