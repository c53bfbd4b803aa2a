//! What the stand-in serving engine (`engines::serving::stand_in`) answers for a language model's
//! dataset: each prompt's reference answer, so a run against it scores as a perfect model would and
//! rehearses the accuracy and submission chain end to end.

use super::dataset::{LlmDataError, References, SampleProblem, read_any};
use super::{llama3_405b, mixtral, reasoning};
use crate::engines::serving::stand_in::ReferenceAnswers;
use crate::engines::serving::tokenizer::HfTokenizer;
use std::collections::HashMap;
use std::path::Path;

/// The reference answers of an LLM dataset file, tokenized with the model's tokenizer: a
/// summarisation set's reference texts, or for a set of questions or tasks an answer its
/// evaluation counts right ([`reasoning::right_answer`], [`mixtral::right_answer`],
/// [`llama3_405b::right_answer`]; programs to write have none).
pub fn reference_answers(dataset: &Path, tokenizer: &Path) -> Result<ReferenceAnswers, LlmDataError> {
    let samples = read_any(dataset)?;
    let answers: Vec<Option<String>> = match samples.references {
        References::Texts(texts) => texts.into_iter().map(Some).collect(),
        References::Questions(questions) => questions.iter().map(reasoning::right_answer).collect(),
        References::Tasks(tasks) => tasks.iter().map(mixtral::right_answer).collect(),
        References::Targets(targets) => targets.iter().map(llama3_405b::right_answer).collect(),
    };
    let tokenizer = HfTokenizer::load(tokenizer)?;
    let mut by_prompt = HashMap::with_capacity(samples.prompts.len());
    for (index, (prompt, answer)) in samples.prompts.into_iter().zip(answers).enumerate() {
        if let Some(answer) = answer {
            let ids = tokenizer.ids(&answer).map_err(|e| LlmDataError::Sample { path: dataset.to_path_buf(), index, problem: SampleProblem::Encode(e) })?;
            by_prompt.insert(prompt, ids);
        }
    }
    Ok(ReferenceAnswers::new(by_prompt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::serving::stand_in::StandInOptions;
    use mlperf_config::ServingApi;
    use std::sync::Arc;

    #[test]
    fn reference_answers_replace_the_generated_ones_for_the_datasets_prompts() {
        let dir = std::env::temp_dir().join(format!("mlperf-stand-in-references-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let own = StandInOptions { vocab: 50, ..StandInOptions::default() };
        std::fs::write(dir.join("tokenizer.json"), own.tokenizer_json()).unwrap();
        let dataset = dir.join("cnn_eval.json");
        std::fs::write(&dataset, r#"[{"tok_input": [1, 2, 3], "output": "t5 t7 t9"}, {"tok_input": [4], "output": "t1"}]"#).unwrap();
        let references = reference_answers(&dataset, &dir.join("tokenizer.json")).unwrap();
        // The same through the seam `serve_stand_in --benchmark` calls; a tokenizer is needed.
        let seam = crate::benchmarks::family("llama3.1-8b");
        assert_eq!(seam.stand_in_answers(&dataset, Some(&dir.join("tokenizer.json"))).unwrap(), references);
        assert!(seam.stand_in_answers(&dataset, None).unwrap_err().to_string().contains("--tokenizer"));
        let none = crate::benchmarks::family("resnet50").stand_in_answers(&dataset, None).unwrap_err().to_string();
        assert!(none.contains("no reference answers for resnet50"), "{none}");
        let o = StandInOptions { references: Some(Arc::new(references)), ..own.clone() };
        assert_eq!(o.answer(&[1, 2, 3], 100), [5, 7, 9]);
        assert_eq!(o.answer(&[1, 2, 3], 2), [5, 7], "the request's limit still caps it");
        assert_eq!(o.answer(&[9, 9], 100), own.answer(&[9, 9], 100), "a prompt outside the dataset gets the generated answer");
        let err = StandInOptions { api: ServingApi::CompletionsText, ..o }.validate().unwrap_err().to_string();
        assert!(err.contains("completions-text"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
