//! The language models (llama2-70b, llama3.1-8b and its edge variant, llama3.1-405b, mixtral-8x7b,
//! deepseek-r1, gpt-oss-120b): one family, since all of them are prompts of token ids answered by
//! a serving engine over HTTP (`engine = "serving"`, see [`crate::engines::serving`]). What
//! differs between them is data: the round's sample counts and output limit, and the dataset.
//!
//! Runs of `dataset = "synthetic"` send generated prompts (ids in a Llama-sized vocabulary, 128
//! to 1,024 tokens, fixed per sample index) and are never submittable; `dataset = "real"` sends
//! the official dataset's prompts ([`crate::benchmarks::llm::dataset`]: the run's sample set, read from the
//! files MLCommons publishes). Answers are scored as the reference evaluations do: llama2-70b
//! and llama3.1-8b by ROUGE ([`crate::benchmarks::llm::summarization`]), deepseek-r1 and gpt-oss-120b by
//! exact match ([`crate::benchmarks::llm::reasoning`], LiveCodeBench code run by
//! [`crate::benchmarks::llm::code_judge`]), mixtral-8x7b by ROUGE, GSM8K and MBXP code
//! ([`crate::benchmarks::llm::mixtral`]) and llama3.1-405b by each row's metric
//! ([`crate::benchmarks::llm::llama3_405b`]).

pub mod answers;
pub mod code_judge;
pub mod dataset;
mod error;
pub mod llama3_405b;
pub mod math_grader;
pub mod mbxp;
pub mod mixtral;
pub mod reasoning;
pub mod sandbox;
pub mod stand_in;
pub mod summarization;

use super::{Benchmark, Drive, ServingWork, Workload, WorkloadSpec, no_engine, serving_options};
use crate::accuracy::Scored;
use crate::accuracy::log::read_accuracy_log;
use crate::accuracy::punkt::{self, Punkt};
use crate::benchmarks::llm::error::EvalError;
use crate::dataset::SampleSet;
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::{DataReport, Scratch};
use crate::engines::serving::api::{Payload, Respond};
use crate::engines::serving::stand_in::ReferenceAnswers;
use crate::engines::serving::tokenizer::HfTokenizer;
use crate::error::Error;
use crate::submittable::NonSubmittable;
use code_judge::LiveCodeBench;
use dataset::{DatasetFile, References};
use mbxp::Mbxp;
use mlperf_config::{DatasetSource, EngineKind, Settings};
use std::path::Path;
use std::sync::Arc;
use summarization::ResultStyle;

/// Which reference evaluation scores the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference {
    DeepSeekR1,
    GptOss120b,
}

impl Reference {
    /// deepseek-r1's evaluation decodes answers without special tokens; gpt-oss's keeps its
    /// harmony markers, which its parsers look for.
    pub fn skips_special_tokens(self) -> bool {
        self == Reference::DeepSeekR1
    }
}

/// One language model of the catalog.
pub struct Llm {
    id: &'static str,
    evaluation: Evaluation,
}

/// How a model's answers are scored: its reference evaluation.
#[derive(Debug, Clone, Copy)]
enum Evaluation {
    /// ROUGE against reference texts, printed as the named script prints it.
    Summaries(ResultStyle),
    /// Exact match against questions' ground truths.
    ExactMatch(Reference),
    /// mixtral-8x7b's OpenOrca, GSM8K and MBXP tasks.
    Mixtral,
    /// llama3.1-405b's per-row metrics.
    LongContext,
}

pub static LLAMA2_70B: Llm = Llm { id: "llama2-70b", evaluation: Evaluation::Summaries(ResultStyle::Llama2) };
pub static LLAMA3_1_8B: Llm = Llm { id: "llama3.1-8b", evaluation: Evaluation::Summaries(ResultStyle::Llama31) };
pub static LLAMA3_1_8B_EDGE: Llm = Llm { id: "llama3.1-8b-edge", evaluation: Evaluation::Summaries(ResultStyle::Llama31) };
pub static LLAMA3_1_405B: Llm = Llm { id: "llama3.1-405b", evaluation: Evaluation::LongContext };
pub static MIXTRAL_8X7B: Llm = Llm { id: "mixtral-8x7b", evaluation: Evaluation::Mixtral };
pub static DEEPSEEK_R1: Llm = Llm { id: "deepseek-r1", evaluation: Evaluation::ExactMatch(Reference::DeepSeekR1) };
pub static GPT_OSS_120B: Llm = Llm { id: "gpt-oss-120b", evaluation: Evaluation::ExactMatch(Reference::GptOss120b) };

/// Synthetic prompts: vocabulary and length range (Llama 2's vocabulary, OpenOrca's input limit).
const SYNTHETIC_VOCAB: u64 = 32_000;
const SYNTHETIC_LENGTHS: (u64, u64) = (128, 1024);

impl Benchmark for Llm {
    fn id(&self) -> &'static str {
        self.id
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        let mut report = DataReport::new(scratch, self.id, settings);
        match (settings.dataset, DatasetFile::of(self.id)) {
            (Some(DatasetSource::Synthetic), _) => report.notes.push("synthetic prompts are generated from their index; no dataset file is read".into()),
            (_, Some(file)) => report.items.extend(file.items(scratch)),
            (_, None) => report.notes.push(format!("this build knows no official dataset file of {}", self.id)),
        }
        if let (Some(DatasetSource::Real) | None, Evaluation::ExactMatch(reference)) = (settings.dataset, self.evaluation) {
            report.items.extend(LiveCodeBench::new(scratch, reference).items());
        }
        report.items.extend(DataReport::model_items(scratch, settings));
        report
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error> {
        let settings = spec.settings;
        if settings.engine != Some(EngineKind::Serving) {
            return Err(no_engine(self.id, settings));
        }
        let options = serving_options(settings, self.id, spec.output_limit)?;
        if settings.dataset == Some(DatasetSource::Synthetic) {
            let library = SampleLibrary::generated(&format!("synthetic {} prompts", self.id), spec.total_samples, spec.performance_samples, 0, |_| Vec::new());
            let work = ServingWork { options, request: Arc::new(|i| Payload::Tokens(synthetic_prompt(i))), respond: Respond::TOKEN_IDS };
            return Ok(Workload { drive: Drive::Serving(work), library: Arc::new(library), synthetic: true, caveats: Vec::new() });
        }
        let file = DatasetFile::of(self.id)
            .ok_or_else(|| Error::Config(format!("this build knows no official {} dataset; run with --dataset=synthetic (generated prompts, never submittable)", self.id)))?;
        let scratch = Scratch::from_env();
        let samples = file.read(&scratch, spec.set)?;
        let caveats: Vec<NonSubmittable> = file.unofficial(&scratch, spec.set)?.into_iter().map(|finding| NonSubmittable::UnofficialData { finding }).collect();
        if samples.prompts.len() != spec.total_samples {
            return Err(Error::Data(format!(
                "{}: {} samples, but the round's {} {} set has {}: is it the right file?",
                file.path(&scratch, spec.set).display(),
                samples.prompts.len(),
                self.id,
                spec.set.name(),
                spec.total_samples
            )));
        }
        let prompts: Arc<Vec<Arc<[i32]>>> = Arc::new(samples.prompts.into_iter().map(Arc::from).collect());
        let name = format!("{} {}", self.id, file.file_of(spec.set));
        let library = SampleLibrary::generated(&name, spec.total_samples, spec.performance_samples, 0, |_| Vec::new());
        let work = ServingWork { options, request: Arc::new(move |i| Payload::Tokens(prompts[i].clone())), respond: Respond::TOKEN_IDS };
        Ok(Workload { drive: Drive::Serving(work), library: Arc::new(library), synthetic: false, caveats })
    }

    /// The dataset of the run's set and its prompt count (through `open`, which also loads a
    /// text-only API's tokenizer) and, for a scored run of real data, the tokenizer and the
    /// sentence splitter its scorer reads: a truncated `tokenizer.json` is found before the engine
    /// loads its weights, not after every sample has run.
    fn preflight(&self, spec: &WorkloadSpec, scored: bool) -> Result<(), Error> {
        if spec.settings.engine != Some(EngineKind::Serving) {
            // Nothing is launched for it: the run's child refuses the config, and the table says so.
            return Ok(());
        }
        let work = self.open(spec)?;
        if scored && !work.synthetic {
            self.scoring_tokenizer(spec.settings)?;
            if !matches!(self.evaluation, Evaluation::ExactMatch(_)) {
                punkt::find_english_model()?;
            }
        }
        Ok(())
    }

    /// The reference evaluations: answers decoded with the model's tokenizer, scored against the
    /// set's references ([`crate::benchmarks::llm::summarization`]) or questions
    /// ([`crate::benchmarks::llm::reasoning`]).
    fn score(&self, settings: &Settings, accuracy_log: &Path, set: SampleSet) -> Result<Scored, Error> {
        let no_scorer = || Error::Config(format!("no accuracy scorer for {} in this build yet; the answers are kept in {}", self.id, accuracy_log.display()));
        let scratch = Scratch::from_env();
        let file = DatasetFile::of(self.id).ok_or_else(no_scorer)?;
        let references = file.read(&scratch, set)?.references;
        let tokenizer = self.scoring_tokenizer(settings)?;
        let entries = read_accuracy_log(accuracy_log)?;
        let in_log = |e: EvalError| Error::from(e).context(accuracy_log.display());
        let punkt = || Punkt::load(&punkt::find_english_model()?);
        let text = |ids: &[i32]| tokenizer.text(ids);
        match (references, self.evaluation) {
            (References::Texts(references), Evaluation::Summaries(style)) => {
                let answers = summarization::first_answers(entries, &references, &text).map_err(in_log)?;
                Ok(summarization::score(&punkt()?, &answers).scored(style))
            }
            (References::Tasks(tasks), Evaluation::Mixtral) => Ok(mixtral::evaluate(entries, &tasks, &text, &punkt()?, &Mbxp::default()).map_err(in_log)?.scored()),
            (References::Targets(targets), Evaluation::LongContext) => Ok(llama3_405b::evaluate(entries, &targets, &text, &punkt()?).map_err(in_log)?.scored()),
            (References::Questions(questions), Evaluation::ExactMatch(reference)) => {
                let decode = |ids: &[i32]| tokenizer.decode(ids, reference.skips_special_tokens());
                let judge = LiveCodeBench::new(&scratch, reference);
                let evaluation = reasoning::evaluate(reference, entries, &questions, &decode, &judge).map_err(in_log)?;
                Ok(evaluation.scored())
            }
            _ => Err(no_scorer()),
        }
    }

    /// The dataset's prompts answered with their references, as the model's token ids.
    fn stand_in_answers(&self, dataset: &Path, tokenizer: Option<&Path>) -> Result<ReferenceAnswers, Error> {
        let tokenizer = tokenizer.ok_or_else(|| {
            Error::Usage(format!("serve_stand_in --benchmark={} --reference_answers: the LLMs' answers are token ids; name the model's tokenizer.json with --tokenizer", self.id))
        })?;
        Ok(stand_in::reference_answers(dataset, tokenizer)?)
    }
}

impl Llm {
    /// The model's tokenizer, which the scorers decode answers with.
    fn scoring_tokenizer(&self, settings: &Settings) -> Result<HfTokenizer, Error> {
        let path = Scratch::from_env()
            .tokenizer_path(settings)
            .ok_or_else(|| Error::Config(format!("scoring {} decodes its answers with the model's tokenizer: set tokenizer_path", self.id)))?;
        Ok(HfTokenizer::load(&path)?)
    }
}

/// The generated prompt of sample `index`.
pub fn synthetic_prompt(index: usize) -> Arc<[i32]> {
    let mut state = (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d;
    let mut next = || {
        // xorshift64*: cheap, deterministic, good enough for token ids.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let (lo, hi) = SYNTHETIC_LENGTHS;
    let len = lo + next() % (hi - lo + 1);
    (0..len).map(|_| (next() % SYNTHETIC_VOCAB) as i32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_prompts_are_fixed_per_index_and_within_the_vocabulary_and_lengths() {
        let a = synthetic_prompt(7);
        assert_eq!(a, synthetic_prompt(7));
        assert_ne!(a, synthetic_prompt(8));
        let lengths: Vec<usize> = (0..100).map(|i| synthetic_prompt(i).len()).collect();
        assert!(lengths.iter().all(|&n| (128..=1024).contains(&n)) && lengths.iter().any(|&n| n != lengths[0]));
        assert!(a.iter().all(|&id| (0..32_000).contains(&id)));
    }

    #[test]
    fn the_data_check_of_a_reasoning_model_lists_its_sets_and_livecodebench_problems() {
        let scratch = Scratch::new("/nonexistent-scratch");
        let settings = Settings { dataset: Some(DatasetSource::Real), ..Settings::default() };
        let report = GPT_OSS_120B.data(&scratch, &settings);
        let datasets: Vec<String> = report.items.iter().filter(|i| i.kind == crate::dataset::scratch::ItemKind::Dataset).map(|i| i.path.display().to_string()).collect();
        assert_eq!(datasets.len(), 3 + 6, "{datasets:?}");
        assert!(
            datasets[2].ends_with("gpt-oss-120b/acc/acc_eval_compliance_gpqa.parquet") && datasets[8].ends_with("livecodebench/code_generation_lite/test6.jsonl"),
            "{datasets:?}"
        );
        let deepseek = DEEPSEEK_R1.data(&scratch, &settings);
        assert_eq!(deepseek.items.iter().filter(|i| i.path.to_string_lossy().contains("livecodebench")).count(), 1, "release v1: test.jsonl");
    }
}
