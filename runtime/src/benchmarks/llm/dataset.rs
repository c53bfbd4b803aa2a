//! The LLM benchmarks' official datasets, read as MLCommons publishes them (no preprocessing, no
//! Python): each sample's prompt as token ids (the reference tokenized them; SUTs send them
//! verbatim) and what its answer is scored against: a reference text (summarisation, ROUGE) or a
//! question's sub-benchmark and ground truth (the reasoning benchmarks, exact match).
//!
//! | benchmark | file under `data/<benchmark>/` | format |
//! |---|---|---|
//! | llama3.1-8b | `cnn_eval.json` (13,368) | JSON array: `instruction`, `input`, `tok_input`, `output` |
//! | llama3.1-8b-edge | `sample_cnn_eval_5000.json` (5,000) | the same |
//! | llama2-70b | `open_orca_gpt4_tokenized_llama.sampled_24576.pkl` (24,576) | pandas pickle: `tok_input`, `output` |
//! | deepseek-r1 | `mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl` (4,388) | pandas pickle: `tok_input`, `dataset`, `ground_truth` |
//! | mixtral-8x7b | `09292024_mixtral_15k_mintoken2_v1.pkl` (15,000) | pandas pickle: `tok_input`, `dataset` (OpenOrca, GSM8K, MBXP), `id`, `gt_output` |
//! | llama3.1-405b | `mlperf_llama3.1_405b_dataset_8313_processed_fp16_eval.pkl` (8,313) | pandas pickle: `tok_input`, `metric`, `gt_output` |
//! | gpt-oss-120b | `perf/perf_eval_ref.parquet` (6,396), accuracy `acc/acc_eval_inputs.parquet` (4,395), TEST07 `acc/acc_eval_compliance_gpqa.parquet` (990) | parquet: `input_tokens` (or `tok_input`), `dataset`, `ground_truth` |
//!
//! MLCommons publishes no checksums beside the files: its downloader checks each file's MD5
//! against a list kept in the same bucket. Where a file's MD5 is published elsewhere (llama2-70b,
//! mixtral-8x7b, llama3.1-405b: [`DatasetFile::md5`]), the data check flags a file that differs
//! and a run on it is marked non-submittable, naming the file; every present file's SHA-256 is
//! printed so two machines can compare theirs. DataFrames are read by [`crate::dataset::pandas`] (pickles,
//! gzip-compressed or not, so a `.pkl` left compressed by the download reads too) or
//! [`crate::dataset::parquet`], told apart by their first bytes: the reference scripts accept either.

pub use crate::benchmarks::llm::error::{LlmDataError, SampleProblem};
use crate::benchmarks::llm::llama3_405b::{Metric, Target};
use crate::benchmarks::llm::mixtral::Task;
use crate::benchmarks::llm::reasoning::Question;
use crate::dataset::SampleSet;
use crate::dataset::pandas::{self, DataFrame};
use crate::dataset::parquet;
use crate::dataset::pickle::Value;
use crate::dataset::scratch::{Item, ItemKind, Scratch};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The MLCommons R2 downloader, as the reference READMEs give it.
const DOWNLOADER: &str = "bash <(curl -s https://raw.githubusercontent.com/mlcommons/r2-downloader/refs/heads/main/mlc-r2-downloader.sh)";

/// How a dataset file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A JSON array of `{instruction, input, tok_input, output}` (CNN/DailyMail for Llama 3.1).
    CnnDailyMailJson,
    /// A DataFrame: prompts in `tok_input`, reference texts in column `reference`.
    ReferenceTexts { reference: &'static str },
    /// A DataFrame of questions: prompts in `tok_input` (or gpt-oss's `input_tokens`), the
    /// sub-benchmark in `dataset`, the answer in `ground_truth`.
    Questions,
    /// mixtral-8x7b's DataFrame: prompts in `tok_input`, the task in `dataset`, MBXP's language
    /// and entry point in `id`, the reference, answer or test code in `gt_output`.
    MixtralTasks,
    /// llama3.1-405b's DataFrame: prompts in `tok_input`, each row's metric in `metric`, its
    /// label in `gt_output`.
    MetricTargets,
}

/// One benchmark's official dataset files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetFile {
    pub benchmark: &'static str,
    /// The performance set's file, as published; the accuracy set's too unless it has its own.
    pub file: &'static str,
    /// The accuracy set's file, where it is not the performance set's.
    pub accuracy_file: Option<&'static str>,
    /// TEST07's compliance set, for a benchmark that audits with one.
    pub test07_file: Option<&'static str>,
    pub format: Format,
    /// The MLCommons metadata URI the downloader fetches them with.
    pub uri: &'static str,
    /// The performance file's MD5 as published, where known.
    pub md5: Option<&'static str>,
}

const fn one_file(benchmark: &'static str, file: &'static str, format: Format, uri: &'static str) -> DatasetFile {
    DatasetFile { benchmark, file, accuracy_file: None, test07_file: None, format, uri, md5: None }
}

/// Every LLM dataset this tool knows, per benchmark.
pub const FILES: [DatasetFile; 7] = [
    one_file("llama3.1-8b", "cnn_eval.json", Format::CnnDailyMailJson, "https://inference.mlcommons-storage.org/metadata/llama3-1-8b-cnn-eval.uri"),
    one_file("llama3.1-8b-edge", "sample_cnn_eval_5000.json", Format::CnnDailyMailJson, "https://inference.mlcommons-storage.org/metadata/llama3-1-8b-sample-cnn-eval-5000.uri"),
    // The MD5s of the uncompressed pickles, as submitters' harnesses check them (AMD's v5.x
    // resource checker lists all three; the mixtral one also in a download script beside it).
    DatasetFile {
        md5: Some("5fe8be0a7ce5c3c9a028674fd24b00d5"),
        ..one_file(
            "llama2-70b",
            "open_orca_gpt4_tokenized_llama.sampled_24576.pkl",
            Format::ReferenceTexts { reference: "output" },
            "https://inference.mlcommons-storage.org/metadata/llama-2-70b-open-orca-dataset.uri",
        )
    },
    one_file(
        "deepseek-r1",
        "mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl",
        Format::Questions,
        "https://inference.mlcommons-storage.org/metadata/deepseek-r1-datasets-fp8-eval.uri",
    ),
    DatasetFile {
        md5: Some("ded6c711288c9bbca02929855557b8c1"),
        ..one_file(
            "mixtral-8x7b",
            "09292024_mixtral_15k_mintoken2_v1.pkl",
            Format::MixtralTasks,
            "https://inference.mlcommons-storage.org/metadata/mixtral-8x7b-validation-dataset.uri",
        )
    },
    DatasetFile {
        md5: Some("25d9f2085bbcacb07554cd7f4af303c9"),
        ..one_file(
            "llama3.1-405b",
            "mlperf_llama3.1_405b_dataset_8313_processed_fp16_eval.pkl",
            Format::MetricTargets,
            "https://inference.mlcommons-storage.org/metadata/llama3-1-405b-dataset-8313.uri",
        )
    },
    DatasetFile {
        benchmark: "gpt-oss-120b",
        file: "perf/perf_eval_ref.parquet",
        accuracy_file: Some("acc/acc_eval_inputs.parquet"),
        test07_file: Some("acc/acc_eval_compliance_gpqa.parquet"),
        format: Format::Questions,
        uri: "https://inference.mlcommons-storage.org/metadata/gpt-oss-data.uri",
        md5: None,
    },
];

impl DatasetFile {
    pub fn of(benchmark: &str) -> Option<&'static DatasetFile> {
        FILES.iter().find(|f| f.benchmark == benchmark)
    }

    /// The file holding `set`.
    pub fn file_of(&self, set: SampleSet) -> &'static str {
        match set {
            SampleSet::Performance => self.file,
            SampleSet::Accuracy => self.accuracy_file.unwrap_or(self.file),
            SampleSet::Test07 => self.test07_file.unwrap_or(self.file),
        }
    }

    /// Where the data check and the workload look for `set`.
    pub fn path(&self, scratch: &Scratch, set: SampleSet) -> PathBuf {
        scratch.data_dir().join(self.benchmark).join(self.file_of(set))
    }

    /// The command that fetches them into their place.
    pub fn fetch_command(&self, scratch: &Scratch) -> String {
        format!("{DOWNLOADER} -d {} {}", scratch.data_dir().join(self.benchmark).display(), self.uri)
    }

    /// The data check's entries, one per file: present or not, its SHA-256 when present, and how
    /// to fetch it.
    pub fn items(&self, scratch: &Scratch) -> Vec<Item> {
        let files = [Some(self.file), self.accuracy_file, self.test07_file];
        files.into_iter().flatten().map(|file| self.item(scratch, file)).collect()
    }

    fn item(&self, scratch: &Scratch, file: &str) -> Item {
        let path = scratch.data_dir().join(self.benchmark).join(file);
        let remedy = format!("Fetch it with the MLCommons downloader (it checks the MD5s MLCommons publishes with it):\n  {}", self.fetch_command(scratch));
        let mut item = Item::new(ItemKind::Dataset, &format!("{} dataset ({file})", self.benchmark), path.clone(), remedy);
        if path.is_file() {
            let published = if file == self.file { self.md5 } else { None };
            let (present, detail) = match (crate::fsutil::file_digests(&path), published) {
                (Err(e), _) => (false, e.to_string()),
                (Ok(d), None) => (true, format!("{} bytes, sha256 {}", d.bytes, d.sha256)),
                (Ok(d), Some(md5)) if d.md5 == md5 => (true, format!("{} bytes, sha256 {}, md5 {md5} as published", d.bytes, d.sha256)),
                (Ok(d), Some(md5)) => (false, format!("{} bytes, md5 {}, but the published file's is {md5}: a partial download or another file", d.bytes, d.md5)),
            };
            (item.present, item.detail) = (present, Some(detail));
        }
        item
    }

    /// Why `set`'s file is not the official one, when its published MD5 is known and differs:
    /// the run goes on, marked non-submittable with this reason.
    pub fn unofficial(&self, scratch: &Scratch, set: SampleSet) -> Result<Option<String>, LlmDataError> {
        let Some(md5) = self.md5.filter(|_| self.file_of(set) == self.file) else { return Ok(None) };
        let path = self.path(scratch, set);
        let (_, actual) = crate::fsutil::md5_file(&path).map_err(LlmDataError::Checksum)?;
        Ok((actual != md5).then(|| format!("{}: md5 {actual}, not the published file's {md5}: not the official {} dataset", path.display(), self.benchmark)))
    }

    /// Reads the samples of `set`.
    pub fn read(&self, scratch: &Scratch, set: SampleSet) -> Result<LlmSamples, LlmDataError> {
        let path = self.path(scratch, set);
        if !path.is_file() {
            return Err(LlmDataError::Missing { path, benchmark: self.benchmark, fetch: self.fetch_command(scratch) });
        }
        read(&path, self.format)
    }
}

/// Reads the dataset file `path`, written in `format`.
pub fn read(path: &Path, format: Format) -> Result<LlmSamples, LlmDataError> {
    match format {
        Format::CnnDailyMailJson => read_cnn_dailymail_json(path),
        Format::ReferenceTexts { reference } => read_reference_texts(path, reference),
        Format::Questions => read_questions(path),
        Format::MixtralTasks => mixtral_tasks(path, &read_frame(path)?),
        Format::MetricTargets => metric_targets(path, &read_frame(path)?),
    }
}

/// Any LLM dataset file, its format told by its content: a JSON array (CNN/DailyMail), or a
/// DataFrame with reference texts in `output` (OpenOrca), metrics in `metric` (llama3.1-405b),
/// labels in `gt_output` (mixtral-8x7b), else one of questions.
pub fn read_any(path: &Path) -> Result<LlmSamples, LlmDataError> {
    let mut first = [0u8; 1];
    if std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut first)).is_ok() && first[0] == b'[' {
        return read_cnn_dailymail_json(path);
    }
    let frame = read_frame(path)?;
    let has = |column: &str| frame.column(column).is_ok();
    match () {
        _ if has("output") => reference_texts(path, &frame, "output"),
        _ if has("metric") => metric_targets(path, &frame),
        _ if has("gt_output") => mixtral_tasks(path, &frame),
        _ => questions(path, &frame),
    }
}

/// A dataset's samples in order (index = LoadGen's sample index).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSamples {
    pub prompts: Vec<Vec<i32>>,
    pub references: References,
}

/// What each sample's answer is scored against.
#[derive(Debug, Clone, PartialEq)]
pub enum References {
    /// Reference answers (summarisation).
    Texts(Vec<String>),
    /// Questions with their ground truths (exact match).
    Questions(Vec<Question>),
    /// mixtral-8x7b's OpenOrca, GSM8K and MBXP tasks.
    Tasks(Vec<Task>),
    /// llama3.1-405b's labels, each with its metric.
    Targets(Vec<Target>),
}

impl References {
    pub fn len(&self) -> usize {
        match self {
            References::Texts(t) => t.len(),
            References::Questions(q) => q.len(),
            References::Tasks(t) => t.len(),
            References::Targets(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Deserialize)]
struct CnnEntry {
    tok_input: Vec<i64>,
    output: String,
}

/// `cnn_eval.json` / `sample_cnn_eval_5000.json` as `download_cnndm.py` writes them.
pub fn read_cnn_dailymail_json(path: &Path) -> Result<LlmSamples, LlmDataError> {
    let text = std::fs::read_to_string(path).map_err(|source| LlmDataError::Unreadable { path: path.to_path_buf(), source })?;
    let entries: Vec<serde_json::Value> =
        serde_json::from_str(&text).map_err(|source| LlmDataError::NotJsonArray { path: path.to_path_buf(), line: source.line(), column: source.column(), source })?;
    let (mut prompts, mut references) = (Vec::with_capacity(entries.len()), Vec::with_capacity(entries.len()));
    for (index, value) in entries.into_iter().enumerate() {
        let entry: CnnEntry = serde_json::from_value(value).map_err(|source| LlmDataError::CnnEntry { path: path.to_path_buf(), index, source })?;
        prompts.push(prompt_ids(&entry.tok_input).map_err(|problem| sample(path, index, problem))?);
        references.push(entry.output);
    }
    Ok(LlmSamples { prompts, references: References::Texts(references) })
}

/// A DataFrame file: parquet when it starts with parquet's magic bytes, else a pandas pickle.
pub fn read_frame(path: &Path) -> Result<DataFrame, LlmDataError> {
    let mut magic = [0u8; 4];
    let is_parquet = std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic)).is_ok() && &magic == parquet::MAGIC;
    if is_parquet { parquet::read_parquet(path) } else { pandas::read_pickle(path) }.map_err(LlmDataError::Frame)
}

/// The error of sample `index` of `path`.
fn sample(path: &Path, index: usize, problem: SampleProblem) -> LlmDataError {
    LlmDataError::Sample { path: path.to_path_buf(), index, problem }
}

/// A frame's column `name`; the error names the file.
fn column<'f>(path: &Path, frame: &'f DataFrame, name: &str) -> Result<&'f [Value], LlmDataError> {
    frame.column(name).map_err(|e| LlmDataError::Column { path: path.to_path_buf(), reason: e.to_string() })
}

/// Each row's prompt ids from `column`; errors name the file and the sample.
fn frame_prompts(path: &Path, frame: &DataFrame, name: &str) -> Result<Vec<Vec<i32>>, LlmDataError> {
    let cells = column(path, frame, name)?;
    cells
        .iter()
        .enumerate()
        .map(|(index, ids)| {
            let ids = pandas::ints(ids).map_err(|e| SampleProblem::PromptCell { column: name.to_string(), reason: e.to_string() }).and_then(|ids| prompt_ids(&ids));
            ids.map_err(|problem| sample(path, index, problem))
        })
        .collect()
}

/// A DataFrame's `tok_input` (lists or numpy arrays of ids) and `reference` (strings).
pub fn read_reference_texts(path: &Path, reference: &str) -> Result<LlmSamples, LlmDataError> {
    reference_texts(path, &read_frame(path)?, reference)
}

/// [`read_reference_texts`] of a frame read from `path`.
fn reference_texts(path: &Path, frame: &DataFrame, reference: &str) -> Result<LlmSamples, LlmDataError> {
    let references = string_column(path, frame, reference)?;
    let prompts = frame_prompts(path, frame, "tok_input")?;
    Ok(LlmSamples { prompts, references: References::Texts(references) })
}

/// A DataFrame of questions: prompts (`tok_input`, else `input_tokens`, as the gpt-oss reference
/// prefers), `dataset` and `ground_truth` (a string, or a number as Python's `str()` of it).
pub fn read_questions(path: &Path) -> Result<LlmSamples, LlmDataError> {
    questions(path, &read_frame(path)?)
}

/// [`read_questions`] of a frame read from `path`.
fn questions(path: &Path, frame: &DataFrame) -> Result<LlmSamples, LlmDataError> {
    let prompt_column = if frame.column("tok_input").is_ok() { "tok_input" } else { "input_tokens" };
    let prompts = frame_prompts(path, frame, prompt_column)?;
    let (subsets, truths) = (column(path, frame, "dataset")?, column(path, frame, "ground_truth")?);
    let mut questions = Vec::with_capacity(frame.rows);
    for (index, (subset, truth)) in subsets.iter().zip(truths).enumerate() {
        let at = |problem: SampleProblem| sample(path, index, problem);
        let subset = match subset {
            Value::None => None,
            v => Some(v.as_str().ok_or_else(|| at(SampleProblem::Subset { kind: v.kind() }))?.to_string()),
        };
        let ground_truth = match truth {
            Value::None => None,
            Value::Float(f) if f.is_nan() => None,
            Value::Float(f) => Some(crate::accuracy::python_float_repr(*f)),
            v => Some(match v.as_int() {
                Some(i) => i.to_string(),
                None => v.as_str().ok_or_else(|| at(SampleProblem::GroundTruth { kind: v.kind() }))?.to_string(),
            }),
        };
        questions.push(Question { subset, ground_truth });
    }
    Ok(LlmSamples { prompts, references: References::Questions(questions) })
}

/// A DataFrame's string column `name`; errors name the file and the sample.
fn string_column(path: &Path, frame: &DataFrame, name: &str) -> Result<Vec<String>, LlmDataError> {
    let cells = column(path, frame, name)?;
    cells
        .iter()
        .enumerate()
        .map(|(index, v)| v.as_str().map(str::to_string).ok_or_else(|| sample(path, index, SampleProblem::NotString { column: name.to_string(), kind: v.kind() })))
        .collect()
}

/// mixtral-8x7b's tasks: `dataset` "OpenOrca" and "GSM8K" by name, any other MBXP, as its
/// evaluation tells them apart.
fn mixtral_tasks(path: &Path, frame: &DataFrame) -> Result<LlmSamples, LlmDataError> {
    let prompts = frame_prompts(path, frame, "tok_input")?;
    let (kinds, ids, labels) = (string_column(path, frame, "dataset")?, string_column(path, frame, "id")?, string_column(path, frame, "gt_output")?);
    let tasks = kinds
        .into_iter()
        .zip(ids)
        .zip(labels)
        .enumerate()
        .map(|(index, ((kind, id), label))| match kind.as_str() {
            "OpenOrca" => Ok(Task::OpenOrca { reference: label }),
            "GSM8K" => Ok(Task::Gsm8k { answer: label }),
            _ => match id.split_once('_') {
                Some((language, entry_point)) => Ok(Task::Mbxp { language: language.into(), entry_point: entry_point.into(), test_code: label }),
                None => Err(sample(path, index, SampleProblem::MbxpId { id })),
            },
        })
        .collect::<Result<_, _>>()?;
    Ok(LlmSamples { prompts, references: References::Tasks(tasks) })
}

/// llama3.1-405b's labels and metrics.
fn metric_targets(path: &Path, frame: &DataFrame) -> Result<LlmSamples, LlmDataError> {
    let prompts = frame_prompts(path, frame, "tok_input")?;
    let (metrics, labels) = (string_column(path, frame, "metric")?, string_column(path, frame, "gt_output")?);
    let targets = metrics
        .into_iter()
        .zip(labels)
        .enumerate()
        .map(|(index, (metric, label))| {
            let metric = Metric::of(&metric).ok_or_else(|| sample(path, index, SampleProblem::Metric { metric: metric.clone() }))?;
            Ok(Target { metric, label })
        })
        .collect::<Result<_, LlmDataError>>()?;
    Ok(LlmSamples { prompts, references: References::Targets(targets) })
}

/// A prompt's token ids as the SUT sends them: not empty, each an int32.
fn prompt_ids(ids: &[i64]) -> Result<Vec<i32>, SampleProblem> {
    if ids.is_empty() {
        return Err(SampleProblem::EmptyPrompt);
    }
    ids.iter().map(|&id| i32::try_from(id).map_err(|_| SampleProblem::IdRange { id })).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/datasets/cnn_eval_tiny.json")
    }

    #[test]
    fn the_published_json_structure_reads_in_order() {
        let samples = read_cnn_dailymail_json(&fixture()).unwrap();
        assert_eq!(samples.prompts.len(), 4);
        let References::Texts(references) = samples.references else { panic!("reference texts") };
        assert_eq!(samples.prompts.len(), references.len());
        assert_eq!(samples.prompts[0][0], 128000, "tok_input starts with Llama 3's <|begin_of_text|>");
        assert!(references[3].contains("ü"), "non-ASCII text survives");
    }

    #[test]
    fn missing_and_corrupt_files_name_the_file_and_the_sample() {
        let dir = std::env::temp_dir().join(format!("mlperf-llm-dataset-{}", std::process::id()));
        let scratch = Scratch::new(&dir);
        let file = DatasetFile::of("llama3.1-8b").unwrap();
        let missing = file.read(&scratch, SampleSet::Performance).unwrap_err().to_string();
        assert!(missing.contains("data/llama3.1-8b/cnn_eval.json") && missing.contains("llama3-1-8b-cnn-eval.uri") && missing.contains("mlc-r2-downloader"), "{missing}");
        assert!(!file.items(&scratch)[0].present);

        std::fs::create_dir_all(file.path(&scratch, SampleSet::Performance).parent().unwrap()).unwrap();
        std::fs::write(file.path(&scratch, SampleSet::Performance), "[{\"tok_input\": [1, 2], \"output\": \"a\"},\n {\"tok_input\": [1, 2]}]").unwrap();
        let no_output = file.read(&scratch, SampleSet::Performance).unwrap_err().to_string();
        assert!(no_output.contains("sample 1: missing field `output`"), "{no_output}");
        std::fs::write(file.path(&scratch, SampleSet::Performance), "[{\"tok_input\": [1, 99999999999], \"output\": \"a\"}]").unwrap();
        assert!(file.read(&scratch, SampleSet::Performance).unwrap_err().to_string().contains("sample 0: token id 99999999999 does not fit int32"));
        std::fs::write(file.path(&scratch, SampleSet::Performance), "[{\"tok_input\": [1, 2], \"output\": \"a\"},\n {\"tok_input\": [1").unwrap();
        let truncated = file.read(&scratch, SampleSet::Performance).unwrap_err().to_string();
        assert!(truncated.contains("cnn_eval.json:2:") && truncated.contains("not the CNN/DailyMail dataset's JSON array"), "{truncated}");
        let item = &file.items(&scratch)[0];
        assert!(item.present && item.detail.as_deref().unwrap().contains("sha256 "), "{item:?}");

        let pickle = DatasetFile::of("llama2-70b").unwrap();
        std::fs::create_dir_all(pickle.path(&scratch, SampleSet::Accuracy).parent().unwrap()).unwrap();
        std::fs::write(pickle.path(&scratch, SampleSet::Accuracy), b"\x80\x05").unwrap();
        let err = pickle.read(&scratch, SampleSet::Accuracy).unwrap_err().to_string();
        assert!(err.contains("open_orca_gpt4_tokenized_llama.sampled_24576.pkl: not a readable pickle"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_that_is_not_the_published_one_is_flagged_and_named() {
        let dir = std::env::temp_dir().join(format!("mlperf-llm-md5-{}", std::process::id()));
        let scratch = Scratch::new(&dir);
        let mixtral = DatasetFile::of("mixtral-8x7b").unwrap();
        let path = mixtral.path(&scratch, SampleSet::Accuracy);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy/mixed/mixtral_dataset.pkl"), &path).unwrap();
        let item = &mixtral.items(&scratch)[0];
        let detail = item.detail.as_deref().unwrap();
        assert!(!item.present && detail.contains("but the published file's is ded6c711288c9bbca02929855557b8c1: a partial download or another file"), "{item:?}");
        let caveat = mixtral.unofficial(&scratch, SampleSet::Performance).unwrap().unwrap();
        assert!(caveat.contains("09292024_mixtral_15k_mintoken2_v1.pkl: md5 ") && caveat.contains("not the official mixtral-8x7b dataset"), "{caveat}");
        assert_eq!(read(&path, mixtral.format).unwrap().prompts.len(), 37, "a generated file of the published structure still reads");
        let gpt_oss = DatasetFile::of("gpt-oss-120b").unwrap();
        assert_eq!(gpt_oss.unofficial(&scratch, SampleSet::Test07).unwrap(), None, "no MD5 known: nothing to compare");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_open_orca_pickle_reads_its_prompts_and_references() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/datasets/open_orca_tiny.pkl");
        let samples = read_reference_texts(&path, "output").unwrap();
        assert_eq!(samples.prompts.len(), 4);
        assert_eq!(samples.prompts[0][0], 1, "Llama 2's BOS first");
        let References::Texts(references) = samples.references else { panic!("reference texts") };
        assert_eq!(references[1], "Guten Morgen.");
        let err = read_reference_texts(&path, "ground_truth").unwrap_err().to_string();
        assert!(err.contains("open_orca_tiny.pkl: no column \"ground_truth\"") && err.contains("tok_output"), "{err}");
        let err = read_reference_texts(&path, "tok_output").unwrap_err().to_string();
        assert!(err.contains("open_orca_tiny.pkl: sample 0: tok_output is a list, not a string"), "{err}");
    }

    #[test]
    fn question_frames_read_from_pickles_and_parquet_alike() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy/reasoning");
        let deepseek = read_questions(&dir.join("deepseek_dataset.pkl")).unwrap();
        let References::Questions(questions) = &deepseek.references else { panic!("questions") };
        assert_eq!((deepseek.prompts.len(), questions.len()), (33, 33));
        assert_eq!(deepseek.prompts[2], [1, 2, 5]);
        assert_eq!(questions[0], Question { subset: Some("gpqa".into()), ground_truth: Some("B".into()) });
        assert_eq!(questions[11].ground_truth.as_deref(), Some("70"), "an integer ground truth reads as Python's str() of it");
        let gpt_oss = read_questions(&dir.join("gpt_oss_dataset.parquet")).unwrap();
        let References::Questions(questions) = &gpt_oss.references else { panic!("questions") };
        assert_eq!(gpt_oss.prompts[1], [5, 6, 8], "gpt-oss's input_tokens column");
        assert_eq!(questions[8], Question { subset: Some("aime25".into()), ground_truth: Some("70".into()) });
        let err = read_questions(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/datasets/open_orca_tiny.pkl")).unwrap_err().to_string();
        assert!(err.contains("open_orca_tiny.pkl: no column \"dataset\""), "{err}");
        let truncated = std::env::temp_dir().join(format!("mlperf-truncated-{}.parquet", std::process::id()));
        let bytes = std::fs::read(dir.join("gpt_oss_dataset.parquet")).unwrap();
        std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
        let err = read_questions(&truncated).unwrap_err().to_string();
        assert!(err.contains("not a readable parquet file"), "{err}");
        std::fs::remove_file(truncated).unwrap();
    }
}
