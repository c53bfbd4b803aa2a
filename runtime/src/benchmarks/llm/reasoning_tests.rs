use super::*;
use crate::benchmarks::llm::answers::*;
use crate::benchmarks::llm::math_grader::{grade_answer, normalize, normalize_answer};

#[test]
fn deepseek_multiple_choice_takes_the_last_answer_line() {
    let cases: &[(&str, Option<char>)] = &[
        ("Answer: b", Some('B')),
        ("Answer: B.", Some('B')),
        ("answer:  A)", Some('A')),
        ("Answer: (B", Some('B')),
        ("final answer = d", Some('D')),
        ("FinalAnswer: A", Some('A')),
        ("answer\n:\nA!", Some('A')),
        ("Answer: C1", Some('C')),
        ("Answer: A ... then Answer: C and", Some('C')),
        ("The answer is (B)", None),
        ("**Answer:** C", None),
        ("Answer: Bob", None),
        ("Answer: E", None),
        ("", None),
    ];
    for (text, want) in cases {
        assert_eq!(deepseek_choice(text, Choices::UpToD), *want, "{text:?}");
    }
    // A..J falls back to the last lone letter.
    assert_eq!(deepseek_choice("The answer is (B)", Choices::UpToJ), Some('B'));
    assert_eq!(deepseek_choice("Answer: E", Choices::UpToJ), Some('E'));
    assert_eq!(deepseek_choice("a guess", Choices::UpToJ), Some('A'));
    assert_eq!(deepseek_choice("['Answer: C']", Choices::UpToD), Some('C'));
    assert_eq!(deepseek_choice(r"Thinking\nAnswer: D", Choices::UpToD), Some('D'));
}

#[test]
fn gpt_oss_multiple_choice_reads_the_final_channel_first() {
    let harmony = |analysis: &str, last: &str| format!("<|channel|>analysis<|message|>{analysis}<|end|><|start|>assistant<|channel|>final<|message|>{last}<|return|>");
    assert_eq!(final_section(&harmony("x", "  B  ")), "B");
    assert_eq!(final_section("no markers"), "no markers");
    assert_eq!(final_section("<|channel|>final 明<|message|>C"), "C");
    let cases: &[(String, Option<char>)] = &[
        (harmony("Answer: A", "**C**"), Some('C')),
        (harmony("Answer: A", "(b) because"), Some('B')),
        (harmony("Answer: A", "Final answer: D"), Some('D')),
        // No leading letter nor `Answer:` in the final channel: the last ANSWER anywhere.
        (harmony("ANSWER: A", "I pick the second one"), Some('A')),
        (harmony("nothing", "The answer is C"), None),
        ("1. D) foo".to_string(), Some('D')),
        (String::new(), None),
    ];
    for (text, want) in cases {
        assert_eq!(gpt_oss_choice(text, Choices::UpToD), *want, "{text:?}");
    }
    assert_eq!(gpt_oss_choice(&harmony("", "The answer is G"), Choices::UpToJ), Some('G'));
}

#[test]
fn multiple_choice_compares_with_the_unstripped_ground_truth() {
    assert!(choice_is_correct(Some('B'), "b", Choices::UpToD));
    assert!(!choice_is_correct(Some('B'), "B ", Choices::UpToD));
    assert!(!choice_is_correct(Some('E'), "E", Choices::UpToD));
    assert!(!choice_is_correct(None, "A", Choices::UpToD));
    assert!(!choice_is_correct(Some('A'), "", Choices::UpToD));
}

#[test]
fn aime_takes_the_last_box_or_answer_line_in_range() {
    let cases: &[(&str, Option<u32>)] = &[
        (r"so \boxed{ 033 }", Some(33)),
        (r"\boxed{12} then \boxed{70}", Some(70)),
        (r"\boxed{1000} Answer: 5", None),
        (r"\boxed{12.5}", None),
        ("Answer: 42", Some(42)),
        ("Answer: 42,", Some(42)),
        ("answer:42 ok", Some(42)),
        ("Final Answer: 42", Some(42)),
        ("Answer: 42.", None),
        ("Answer: 12.5", None),
        ("Answer: 42_", None),
        ("**Answer:** 42", None),
        ("Answer: 7\nlater Answer: 9", Some(9)),
        ("Answer: ٤٢", Some(42)),
        ("", None),
    ];
    for (text, want) in cases {
        assert_eq!(aime_answer(text), *want, "{text:?}");
    }
    assert!(aime_is_correct(Some(70), " 070 "));
    assert!(aime_is_correct(Some(10), "1_0"));
    assert!(!aime_is_correct(Some(70), "70.0"));
    assert!(!aime_is_correct(None, "70"));
}

#[test]
fn boxed_math_balances_braces_of_the_last_box() {
    assert_eq!(boxed_math(r"x \boxed{\frac{1}{2}} y"), Some(r"\frac{1}{2}"));
    assert_eq!(boxed_math(r"\boxed{1} and \boxed{ 2 }"), Some("2"));
    assert_eq!(boxed_math(r"\boxed{1} and \boxed{2"), None);
    assert_eq!(boxed_math(r"\boxed{}"), Some(""));
    assert_eq!(boxed_math("none"), None);
}

#[test]
fn code_blocks_as_each_script_finds_them() {
    let text = "```python\nfirst()\n```\n and ```python\nsecond()\n```";
    assert_eq!(deepseek_code(text).as_deref(), Some("first()"));
    assert_eq!(gpt_oss_code(text).as_deref(), Some("second()"));
    assert_eq!(deepseek_code("```Python\nx\n```"), None);
    assert_eq!(gpt_oss_code("```Python\nx = 1\n```").as_deref(), Some("x = 1"));
    let harmony = "<|channel|>analysis<|message|>```python\ndraft()\n```<|end|><|channel|>final<|message|>```py\nfinal()\n```<|return|>";
    assert_eq!(gpt_oss_code(harmony).as_deref(), Some("final()"));
    assert_eq!(gpt_oss_code("no code"), None);
}

#[test]
fn math_answers_normalise_as_prm800k_does() {
    assert_eq!(normalize_answer(r"\text{ 5 }"), "5");
    assert_eq!(normalize_answer(r"\dfrac12"), r"\frac{1}{2}");
    assert_eq!(normalize_answer(r"\frac1{72}"), r"\frac{1}{72}");
    assert_eq!(normalize_answer("0.5"), r"\frac{1}{2}");
    assert_eq!(normalize_answer("-3/4"), r"\frac{-3}{4}");
    assert_eq!(normalize_answer("03/4"), "03/4");
    assert_eq!(normalize_answer(r"x = \sqrt3"), r"\sqrt{3}");
    assert_eq!(normalize_answer(r"\left( 1, 2 \right)"), "(1,2)");
    assert_eq!(normalize_answer(r"10^\circ"), "10");
    // `_strip_string` raises on a trailing `\sqrt`: the unwrapped answer is kept as it is.
    assert_eq!(normalize_answer(r"2\sqrt"), r"2\sqrt");

    assert_eq!(normalize("1,000,000"), "1000000");
    assert_eq!(normalize(r"\$5.00"), "5");
    assert_eq!(normalize("5 degrees"), "5");
    assert_eq!(normalize(r"\frac{3}{4}"), "3/4");
    assert_eq!(normalize(r"2\sqrt{2}"), "2sqrt(2)");
    assert_eq!(normalize(r"7 \frac{3}{4}"), "7+3/4");
    assert_eq!(normalize(r"\text{(B)}"), "(b)");
}

#[test]
fn math_answers_grade_as_prm800k_does() {
    let right = [
        (r"\frac{1}{2}", "0.5"),
        ("1/2", r"\frac12"),
        ("(1, 2)", r"\left(1,2\right)"),
        (r"2\sqrt{2}", r"\sqrt{8}"),
        ("x+1", "1+x"),
        ("5", "5.0"),
        ("1,234", "1234"),
        (r"\pi/2", r"\frac{\pi}{2}"),
    ];
    for (truth, given) in right {
        assert!(grade_answer(given, truth), "{given} for {truth}");
    }
    // Unreduced fractions, an integer answer given as an expression, and wrong tuples are wrong.
    let wrong = [("1/2", "2/4"), ("4", "2+2"), ("(1,2)", "[1,2)"), ("(1,2)", "(1,2,3)"), ("3", "4"), ("x^2", "x^3"), ("5", "")];
    for (truth, given) in wrong {
        assert!(!grade_answer(given, truth), "{given} for {truth}");
    }
}

#[test]
fn right_answers_are_graded_right_by_both_evaluations() {
    let questions = [question("gpqa_diamond", "C"), question("MMLU_PRO", "J"), question("aime25", "70"), question("math500", "\\frac{1}{2}")];
    for q in &questions {
        let answer = right_answer(q).unwrap();
        for reference in [Reference::DeepSeekR1, Reference::GptOss120b] {
            let grader = Grader::of(&q.subset.as_deref().unwrap().to_lowercase(), reference).unwrap();
            assert!(grade(reference, grader, &answer, q.ground_truth.as_deref().unwrap()), "{answer:?} under {reference:?}");
        }
    }
    assert_eq!(right_answer(&question("livecodebench_v6", "abc001")), None);
    assert_eq!(right_answer(&Question { subset: Some("gpqa".into()), ground_truth: None }), None);
}

struct NoCode;
impl CodeJudge for NoCode {
    fn judge(&self, work: &[(String, String)]) -> Result<Vec<bool>, EvalError> {
        Ok(work.iter().map(|(id, code)| id == "lc1" && code.contains("return")).collect())
    }
}

fn entry(qsl_idx: usize, ids: &[i32]) -> AccuracyEntry {
    AccuracyEntry { seq_id: 0, qsl_idx, data: ids.iter().flat_map(|i| i.to_le_bytes()).collect() }
}

fn question(subset: &str, truth: &str) -> Question {
    Question { subset: Some(subset.into()), ground_truth: Some(truth.into()) }
}

/// Answer texts by token id: each logged answer is its text's id repeated.
const TEXTS: [&str; 5] = ["Answer: B", "\\boxed{70}", "Answer: C", "```python\ndef f():\n    return 1\n```", "\\boxed{\\frac{1}{2}}"];

fn decode(ids: &[i32]) -> Result<String, crate::engines::serving::tokenizer::TokenizerError> {
    Ok(TEXTS[ids[0] as usize].to_string())
}

#[test]
fn deepseek_scores_each_sample_once_over_every_sample() {
    let questions = [question("gpqa", "B"), question("aime", "70"), question("mmlu_pro", "D"), question("livecodebench", "lc1"), question("math500", "0.5")];
    let entries = vec![entry(0, &[0, 0]), entry(1, &[1]), entry(2, &[2, 2, 2]), entry(0, &[2]), entry(3, &[3]), entry(4, &[4; 4]), entry(9, &[0])];
    let eval = evaluate(Reference::DeepSeekR1, entries, &questions, &decode, &NoCode).unwrap();
    assert_eq!((eval.samples, eval.correct, eval.tokens), (5, 4, 11));
    let scored = eval.scored();
    assert_eq!(scored.text, "\nResults\n\n{'exact_match': 80.0, 'tokens_per_sample': 2.2, 'num-samples': 5}\n");
    assert_eq!(scored.metrics, vec![("exact_match".to_string(), 80.0), ("TOKENS_PER_SAMPLE".to_string(), 2.2)]);
}

#[test]
fn gpt_oss_weights_each_sub_benchmark_by_its_repeats() {
    let questions = [question("gpqa_diamond", "B"), question("gpqa_diamond", "A"), question("aime25", "70"), question("livecodebench_v6", "lc1")];
    let entries = vec![entry(0, &[0]), entry(1, &[0]), entry(2, &[1]), entry(3, &[3]), entry(0, &[0])];
    let eval = evaluate(Reference::GptOss120b, entries, &questions, &decode, &NoCode).unwrap();
    assert_eq!(eval.per_subset.get("gpqa_diamond"), Some(&(2, 3)));
    // (1/8 + 2/5 + 1/3) / (1/8 + 3/5 + 1/3) * 100
    let want = (1.0 / 8.0 + 2.0 / 5.0 + 1.0 / 3.0) / (1.0 / 8.0 + 3.0 / 5.0 + 1.0 / 3.0) * 100.0;
    assert_eq!(eval.exact_match(), want);
    let text = eval.scored().text;
    assert!(text.contains("\ngpqa_diamond                     2        3        5       0.40     66.67%\n"), "{text}");
    assert!(text.contains("Formula: aime25/8 + gpqa_diamond/5 + livecodebench_v6/3\n"), "{text}");
    assert!(text.ends_with(&format!("Printing for submission_checker:\n\n'exact_match': {want:.3}\n'tokens_per_sample': 1.0\n")), "{text}");
}

#[test]
fn unknown_sub_benchmarks_and_bad_answers_name_the_sample() {
    let bad = evaluate(Reference::GptOss120b, vec![entry(0, &[0])], &[question("trivia", "B")], &decode, &NoCode).unwrap_err().to_string();
    assert!(bad.contains("sample 0") && bad.contains("trivia"), "{bad}");
    let odd = AccuracyEntry { seq_id: 0, qsl_idx: 0, data: vec![1, 2, 3] };
    let bad = evaluate(Reference::DeepSeekR1, vec![odd], &[question("gpqa", "B")], &decode, &NoCode).unwrap_err().to_string();
    assert!(bad.contains("sample 0") && bad.contains("int32"), "{bad}");
    let unnamed = Question { subset: None, ground_truth: Some("B".into()) };
    let eval = evaluate(Reference::DeepSeekR1, vec![entry(0, &[0])], std::slice::from_ref(&unnamed), &decode, &NoCode).unwrap();
    assert_eq!((eval.samples, eval.correct), (1, 0), "deepseek-r1 counts a row without a sub-benchmark, never right");
    assert!(evaluate(Reference::GptOss120b, vec![entry(0, &[0])], &[unnamed], &decode, &NoCode).is_err());
}

/// The official evaluations' own output on generated answers (scripts/make_reasoning_fixtures.py
/// ran eval_accuracy.py of deepseek-r1 and eval_mlperf_accuracy.py of gpt-oss-120b, at
/// mlcommons/inference b66003e1 with openai/prm800k 7ecc794, on these files): the same text here.
mod official {
    use super::*;
    use crate::accuracy::log::read_accuracy_log;
    use crate::benchmarks::llm::dataset::{References, read_questions};
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy/reasoning").join(name)
    }

    fn evaluate_fixture(reference: Reference, key: &str, dataset: &str, log: &str) -> Evaluation {
        let answers: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture("answers.json")).unwrap()).unwrap();
        let texts: Vec<String> = answers[key].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
        let References::Questions(questions) = read_questions(&fixture(dataset)).unwrap().references else { panic!("questions") };
        let decode = |ids: &[i32]| Ok(ids.first().map_or(String::new(), |&i| texts[i as usize].clone()));
        evaluate(reference, read_accuracy_log(&fixture(log)).unwrap(), &questions, &decode, &NoCode).unwrap()
    }

    #[test]
    fn deepseek_r1_prints_what_its_evaluation_prints() {
        let eval = evaluate_fixture(Reference::DeepSeekR1, "deepseek-r1", "deepseek_dataset.pkl", "deepseek_log.json");
        assert_eq!(eval.scored().text, std::fs::read_to_string(fixture("deepseek_accuracy.txt")).unwrap());
    }

    #[test]
    fn deepseek_r1_grades_each_answer_as_its_evaluation_does() {
        let graded: Vec<(String, bool)> = serde_json::from_str(&std::fs::read_to_string(fixture("deepseek_graded.json")).unwrap()).unwrap();
        let References::Questions(questions) = read_questions(&fixture("deepseek_dataset.pkl")).unwrap().references else { panic!("questions") };
        for ((text, official), question) in graded.iter().zip(&questions) {
            let grader = Grader::of(question.subset.as_deref().unwrap(), Reference::DeepSeekR1).unwrap();
            assert_eq!(grade(Reference::DeepSeekR1, grader, text, question.ground_truth.as_deref().unwrap()), *official, "{text:?} for {question:?}");
        }
    }

    #[test]
    fn gpt_oss_prints_what_its_evaluation_prints_then_the_output_length() {
        let eval = evaluate_fixture(Reference::GptOss120b, "gpt-oss-120b", "gpt_oss_dataset.parquet", "gpt_oss_log.json");
        let text = eval.scored().text;
        let official = std::fs::read_to_string(fixture("gpt_oss_accuracy.txt")).unwrap();
        assert_eq!(text, format!("{official}'tokens_per_sample': {}\n", python_float_repr(eval.tokens_per_sample())));
    }
}
