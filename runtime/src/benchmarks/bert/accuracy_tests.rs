//! Tests of the SQuAD scorer on a tiny generated dataset with hand-computed predictions, exact
//! match and F1.

use super::*;
use crate::benchmarks::bert::squad::{SquadOptions, convert_examples_to_features, parse_squad};
use crate::benchmarks::bert::wordpiece::{BertTokenizer, Vocab};

/// ids: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 the=4 cat=5 sat=6 on=7 mat=8 who=9 ?=10 .=11 dog=12
/// ran=13 far=14 ##s=15 where=16 did=17 ,=18
fn meta() -> SquadFeatures {
    let tok = BertTokenizer::new(Vocab::from_tokens([
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "who", "?", ".", "dog", "ran", "far", "##s", "where", "did", ",",
    ]))
    .unwrap();
    let squad = r#"{"version": "1.1", "data": [{"paragraphs": [
        {"context": "The cat sat on the mat.", "qas": [
            {"id": "q1", "question": "Who sat?", "answers": [{"text": "The cat"}, {"text": "cat"}]},
            {"id": "q3", "question": "Where?", "answers": [{"text": "on the mat"}]}]},
        {"context": "The dogs ran far, far away.", "qas": [
            {"id": "q2", "question": "Where did the dog run?", "answers": [{"text": "far, far away"}]}]}]}]}"#;
    let (meta, _) = convert_examples_to_features(&parse_squad(squad).unwrap(), &tok, &SquadOptions::default()).unwrap();
    meta
}

/// Logits of one feature as LoadGen logs them: `[384, 2]` (start, end) per token, float32, with
/// `start` at position `s` and `end` at `e` set high and everything else 0.
fn logits(s: usize, e: usize) -> Vec<u8> {
    (0..384).flat_map(|p| [if p == s { 10.0f32 } else { 0.0 }, if p == e { 10.0f32 } else { 0.0 }]).flat_map(f32::to_le_bytes).collect()
}

fn write_log(name: &str, entries: &[(usize, Vec<u8>)]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mlperf-acc-squad-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body: Vec<String> = entries
        .iter()
        .enumerate()
        .map(|(i, (q, d))| format!("{{ \"seq_id\" : {i}, \"qsl_idx\" : {q}, \"data\" : \"{}\" }}", d.iter().map(|b| format!("{b:02X}")).collect::<String>()))
        .collect();
    let path = dir.join("mlperf_log_accuracy.json");
    std::fs::write(&path, format!("[\n{}\n]\n", body.join(",\n"))).unwrap();
    path
}

#[test]
fn scores_hand_computed_predictions() {
    let m = meta();
    // Features: 0 = q1 ([CLS] who sat ? [SEP] the cat sat on the mat . [SEP]: doc at 5),
    // 1 = q3 ([CLS] where ? [SEP] ...: doc at 4), 2 = q2 ([CLS] where did the dog [UNK] ? [SEP]
    // the dog ##s ran far , far [UNK] . [SEP]: doc at 8).
    assert_eq!((m.doc_offset(0), m.doc_offset(1), m.doc_offset(2)), (5, 4, 8));
    // q1: "the cat" (positions 5-6). Logged twice: the later entry wins (a dict in the script), so
    // the first, pointing at "mat", is overridden.
    // q2: "far , far" (positions 12-14) -> get_final_text maps it onto the words "far, far".
    // q3: not logged -> "empty".
    let log = write_log("hand", &[(0, logits(10, 10)), (2, logits(12, 14)), (0, logits(5, 6))]);
    let s = score_squad_meta(&log, &m, &SquadScoreOptions::default()).unwrap();
    assert_eq!(s.predictions, vec![("q1".to_string(), "The cat".to_string()), ("q3".to_string(), "empty".to_string()), ("q2".to_string(), "far, far".to_string())]);
    // EM: q1 only -> 100 / 3. F1: q1 1.0; q2 "far far" vs "far far away": precision 1, recall 2/3,
    // F1 0.8; q3 0 -> 100 * 1.8 / 3 = 60.
    assert_eq!((s.exact_match, s.f1), (100.0 / 3.0, 60.0));
    assert_eq!(s.accuracy_line(), r#"{"exact_match": 33.333333333333336, "f1": 60.0}"#);
    assert_eq!(s.accuracy_txt(), "{\"exact_match\": 33.333333333333336, \"f1\": 60.0}\n");
    assert_eq!((s.questions, s.features_logged, s.features_total, s.entries), (3, 2, 3, 3));
    assert_eq!(s.predictions_json(), "{\n    \"q1\": \"The cat\",\n    \"q3\": \"empty\",\n    \"q2\": \"far, far\"\n}\n");
}

#[test]
fn candidates_obey_the_reference_filters() {
    let m = meta();
    // Best start in the question (position 1) is no answer: the next best start/end pair inside
    // the document wins. Position 1's start logit is the highest; position 7 ("sat") next.
    let mut start = vec![0.0f32; 384];
    let mut end = vec![0.0f32; 384];
    start[1] = 50.0; // "who": not in the document
    start[7] = 9.0; // "sat"
    end[7] = 9.0;
    end[6] = 40.0; // "cat" before "sat": end < start for start 7, valid only for starts <= 6
    end[12] = 30.0; // the final [SEP]: not in the document
    let data: Vec<u8> = (0..384).flat_map(|p| [start[p], end[p]]).flat_map(f32::to_le_bytes).collect();
    let log = write_log("filters", &[(0, data)]);
    let s = score_squad_meta(&log, &m, &SquadScoreOptions::default()).unwrap();
    // Candidates: (7, 7) = 18; (s, 6) for starts 5, 6 at 0 + 40 = 40 -> (5, 6) "the cat" (position 5
    // precedes 6 among the tied 0-logit starts).
    assert_eq!(s.predictions[0].1, "The cat");
    // Answers longer than max_answer_length are dropped.
    let short = SquadScoreOptions { max_answer_length: 1, ..SquadScoreOptions::default() };
    let s = score_squad_meta(&log, &m, &short).unwrap();
    // Length-1 candidates: (6, 6) = 0 + 40 (start 6 is among the 20 best, a 0 tie).
    assert_eq!(s.predictions[0].1, "cat");
}

#[test]
fn dtypes_layouts_and_short_sequences() {
    let m = meta();
    // float16, transposed ([2, seq]), and only 13 positions logged (the rest padded with -10000).
    let rows = 13;
    let mut values = vec![half::f16::from_f32(0.0); 2 * rows];
    values[5] = half::f16::from_f32(8.0); // start row 5
    values[rows + 6] = half::f16::from_f32(8.0); // end row 6
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let log = write_log("f16", &[(0, data)]);
    let opts = SquadScoreOptions { dtype: LogDtype::Float16, output_transposed: true, ..SquadScoreOptions::default() };
    assert_eq!(score_squad_meta(&log, &m, &opts).unwrap().predictions[0].1, "The cat");
    // Errors name the entry.
    let bad = write_log("bad", &[(0, vec![0; 6])]);
    assert!(score_squad_meta(&bad, &m, &SquadScoreOptions::default()).unwrap_err().to_string().contains("entry 0 (qsl_idx 0): 6 bytes are not pairs"));
    let outside = write_log("outside", &[(7, logits(5, 6))]);
    assert!(score_squad_meta(&outside, &m, &SquadScoreOptions::default()).unwrap_err().to_string().contains("qsl_idx 7 but the features file has 3 features"));
    let long = write_log("long", &[(0, vec![0; 385 * 8])]);
    assert!(score_squad_meta(&long, &m, &SquadScoreOptions::default()).unwrap_err().to_string().contains("385 logit pairs"));
}

#[test]
fn empty_log_predicts_empty_everywhere() {
    let m = meta();
    let dir = std::env::temp_dir().join(format!("mlperf-acc-squad-{}-empty", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("log.json"), "[\n]\n").unwrap();
    let s = score_squad_meta(&dir.join("log.json"), &m, &SquadScoreOptions::default()).unwrap();
    assert_eq!(s.accuracy_line(), r#"{"exact_match": 0.0, "f1": 0.0}"#);
}

#[test]
fn final_text_projection() {
    let b = BasicTokenizer::google(true);
    // The reference's example: the prediction drops "'s" that the original word carries.
    assert_eq!(get_final_text("steve smith", "Steve Smith's", &b), "Steve Smith");
    // Accents are stripped in the prediction but kept in the answer.
    assert_eq!(get_final_text("cafe", "Café.", &b), "Café");
    // Not found, or misaligned lengths: the whole original span.
    assert_eq!(get_final_text("dog", "The cat", &b), "The cat");
    assert_eq!(get_final_text("1895", "(1895-1943).", &b), "1895");
}

#[test]
fn normalization_and_metrics_match_evaluate_v1_1() {
    assert_eq!(normalize_answer("The  Cat!"), "cat");
    assert_eq!(normalize_answer("an apple a day, the end"), "apple day end");
    assert_eq!(normalize_answer("theater anthem"), "theater anthem");
    assert_eq!(normalize_answer("A-B"), "ab"); // punctuation goes first
    // Word boundaries are Unicode-aware: "the" after "ü" is not an article.
    assert_eq!(normalize_answer("Über-the a"), "überthe");
    assert!(exact_match_score("the Eiffel tower", "Eiffel Tower."));
    assert_eq!(f1_score("far far", "far far away"), 0.8);
    assert_eq!(f1_score("a", "the"), 0.0); // both normalise to nothing
    assert_eq!(f1_score("x y y", "y y z"), 2.0 * (2.0 / 3.0) * (2.0 / 3.0) / (2.0 / 3.0 + 2.0 / 3.0));
}

#[test]
fn python_json_strings() {
    assert_eq!(python_json_string("café 😀 \u{7f} \"q\""), r#""caf\u00e9 \ud83d\ude00 \u007f \"q\"""#);
}
