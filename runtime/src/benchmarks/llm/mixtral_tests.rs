use super::*;
use crate::accuracy::log::AccuracyEntry;
use crate::accuracy::punkt::Punkt;

#[test]
fn gsm8k_answers_are_read_as_the_script_reads_them() {
    assert_eq!(find_number("First 3 apples, then 5,600 pears. The answer is 5,600. Then 7"), "5,600");
    assert_eq!(find_number("The answer is 4. Or The answer is -2.5 then 9"), "-2.5", "the first number after the last delimiter");
    assert_eq!(find_number("Maybe 12 or 13. The answer is unknown"), "13", "no number after it: the last number anywhere");
    assert_eq!(find_number("10-15 apples"), "-15", "a range reads as two numbers, the second negative");
    assert_eq!(find_number("no digits"), "");
    assert!(gsm8k_is_correct("The answer is 5,600.", "5600"));
    assert!(gsm8k_is_correct("So 18.0 eggs", "18"), "equal as floats");
    assert!(gsm8k_is_correct("It is 7\nQ: what about 9", "7"), "text after \\nQ: is ignored");
    assert!(!gsm8k_is_correct("It is 7\nQ: what about 9", "9"));
    assert!(gsm8k_is_correct("The answer is ٣.", "3"), "Unicode digits, as Python's float() reads them");
    assert!(!gsm8k_is_correct("The answer is 5.", "n/a"), "a ground truth that is not a float matches nothing");
    assert!(!gsm8k_is_correct("nothing", "0"));
    assert!(gsm8k_is_correct("The answer is $1,000.", " 1_000 "), "float() strips white space and reads underscores");
}

#[test]
fn mbxp_solutions_are_cut_and_unescaped_as_the_worker_does() {
    assert_eq!(mbxp::solution(Language::Python, "\n  def f_x():\n    return 1\n```\nExplanation"), "def f_x():\n    return 1\n");
    assert_eq!(mbxp::solution(Language::Cpp, "  int f\\_x() { return 1; }"), "  int f_x() { return 1; }", "only Python is left-stripped");
}

fn entry(seq: usize, qsl: usize, ids: &[i32]) -> AccuracyEntry {
    let data = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
    AccuracyEntry { seq_id: seq as u64, qsl_idx: qsl, data }
}

#[test]
fn the_evaluation_counts_repeats_in_gen_num_and_stops_where_the_script_does() {
    let punkt = Punkt::load(&std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy/punkt_tab/english")).unwrap();
    let tasks = vec![
        Task::OpenOrca { reference: "The cat sat on the mat.".into() },
        Task::Gsm8k { answer: "4".into() },
        Task::Mbxp { language: "python".into(), entry_point: "add".into(), test_code: "def check(candidate):\n    assert candidate(1, 2) == 3\n".into() },
        Task::Mbxp { language: "java".into(), entry_point: "add".into(), test_code: "class Main {}".into() },
    ];
    let texts = ["The cat sat on the mat.", "The answer is 4.", "def add(a, b):\n    return a + b\n```", "class X {}"];
    let decode = |ids: &[i32]| Ok(texts[ids[0] as usize].to_string());
    let log = || vec![entry(0, 0, &[0, 0]), entry(1, 1, &[1, 1, 1]), entry(2, 0, &[0]), entry(3, 2, &[2]), entry(4, 3, &[3, 3])];
    let score = evaluate(log(), &tasks, &decode, &punkt, &Mbxp::default()).unwrap();
    assert_eq!((score.gen_num, score.gen_tok_len, score.gsm8k), (5, 8, 100.0));
    let mbxp = score.mbxp.as_ref().unwrap();
    assert_eq!((mbxp.passed, mbxp.run), (1, 1), "the java answer is left out");
    let line = score.result_line();
    assert!(line.starts_with("{'rouge1': 100.0, 'rouge2': 100.0, 'rougeL': 100.0, 'rougeLsum': 100.0, 'gsm8k': 100.0, 'mbxp': 100.0, 'gen_len': 23,"), "{line}");
    assert!(line.ends_with("'gen_num': 5, 'gen_tok_len': 8, 'tokens_per_sample': 1.6}"), "{line}");
    assert!(score.accuracy_txt().contains("\n 100.00% pass@1\n{'python': 1} {'python': 1}\n\nResults\n\n{'rouge1'"), "{}", score.accuracy_txt());

    let only_java = vec![entry(0, 1, &[1]), entry(1, 3, &[3])];
    let err = evaluate(only_java, &tasks, &decode, &punkt, &Mbxp::default()).unwrap_err().to_string();
    assert!(err.contains("1 MBXP answers are all in languages the evaluation does not run"), "{err}");
    let err = evaluate(vec![entry(0, 0, &[0])], &tasks, &decode, &punkt, &Mbxp::default()).unwrap_err().to_string();
    assert!(err.contains("no GSM8K answer"), "{err}");
    let err = evaluate(vec![entry(0, 9, &[0])], &tasks, &decode, &punkt, &Mbxp::default()).unwrap_err().to_string();
    assert_eq!(err, "sample 9: past the dataset's 4 samples");
    let no_mbxp = evaluate(vec![entry(0, 1, &[1])], &tasks, &decode, &punkt, &Mbxp::default()).unwrap();
    assert_eq!(no_mbxp.result_line(), "{'gsm8k': 100.0, 'mbxp': 0, 'gen_len': 0, 'gen_num': 1, 'gen_tok_len': 1, 'tokens_per_sample': 1.0}", "no OpenOrca: no ROUGE keys");
}

/// The official evaluation's output on the fixtures of `tests/fixtures/accuracy/mixed/` (made by
/// `scripts/make_mixed_eval_fixtures.py`: `evaluate-accuracy.py` and `evaluate_mbxp.py` of
/// mlcommons/inference b66003e1 with mxeval e09974f, g++ 12 and node 20 with lodash, on these
/// files): the same results here.
mod official {
    use super::*;
    use crate::accuracy::log::read_accuracy_log;
    use crate::benchmarks::llm::dataset::{Format, References, read};
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy/mixed").join(name)
    }

    /// What the script prints from its `Results` heading on.
    fn results(text: &str) -> &str {
        &text[text.find("\nResults\n").expect("a Results heading")..]
    }

    #[test]
    fn mixtral_scores_what_its_evaluation_scores() {
        let answers: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture("answers.json")).unwrap()).unwrap();
        let texts: Vec<String> = answers["mixtral-8x7b"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
        let References::Tasks(tasks) = read(&fixture("mixtral_dataset.pkl"), Format::MixtralTasks).unwrap().references else { panic!("tasks") };
        let decode = |ids: &[i32]| Ok(texts[ids[0] as usize].clone());
        let punkt = Punkt::load(&fixture("../punkt_tab/english")).unwrap();
        // The programs run where a stand-in lodash (`node_modules/lodash`, isEqual only) is found.
        let work_dir = std::env::temp_dir().join(format!("mlperf-mbxp-official-{}", std::process::id()));
        std::fs::create_dir_all(work_dir.join("node_modules/lodash")).unwrap();
        std::fs::copy(fixture("node_modules/lodash/index.js"), work_dir.join("node_modules/lodash/index.js")).unwrap();
        let judge = Mbxp { work_dir: work_dir.clone(), ..Mbxp::default() };
        let score = evaluate(read_accuracy_log(&fixture("mixtral_log.json")).unwrap(), &tasks, &decode, &punkt, &judge);
        std::fs::remove_dir_all(&work_dir).unwrap();
        if std::process::Command::new("node").arg("--version").output().is_err() {
            let err = score.unwrap_err().to_string();
            assert!(err.contains("javascript answers (2 in this log) run with `node`"), "without node the evaluation names it: {err}");
            return;
        }
        let score = score.unwrap();
        let official = std::fs::read_to_string(fixture("mixtral_accuracy.txt")).unwrap();
        assert_eq!(results(&score.accuracy_txt()), results(&official));
        assert!(official.contains(&format!("\n {:.2}% pass@1\n", score.mbxp.as_ref().unwrap().rate())), "{official}");
        let verdicts: std::collections::BTreeMap<String, bool> = serde_json::from_str(&std::fs::read_to_string(fixture("mixtral_mbxp.json")).unwrap()).unwrap();
        for (language, passed, run) in &score.mbxp.as_ref().unwrap().per_language {
            let official: Vec<bool> = verdicts.iter().filter(|(k, _)| k.starts_with(&format!("{}_", language.tag()))).map(|(_, v)| *v).collect();
            assert_eq!((*passed, *run), (official.iter().filter(|&&v| v).count(), official.len()), "{language:?}");
        }
    }
}
