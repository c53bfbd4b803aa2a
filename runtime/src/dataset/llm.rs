//! The LLM benchmarks' official datasets, read as MLCommons publishes them (no preprocessing, no
//! Python): each sample's prompt as token ids (the reference tokenized them; SUTs send them
//! verbatim) and its reference answer, which the accuracy scorer compares with.
//!
//! | benchmark | file under `data/<benchmark>/` | format | read here |
//! |---|---|---|---|
//! | llama3.1-8b | `cnn_eval.json` (13,368) | JSON array: `instruction`, `input`, `tok_input`, `output` | yes |
//! | llama3.1-8b-edge | `sample_cnn_eval_5000.json` (5,000) | the same | yes |
//! | llama2-70b | `open_orca_gpt4_tokenized_llama.sampled_24576.pkl` (24,576) | pandas pickle: `tok_input`, `output` | yes |
//! | deepseek-r1 | `mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl` (4,388) | pandas pickle: `tok_input`, `ground_truth` | yes |
//! | gpt-oss-120b | `perf/perf_eval_ref.parquet` (6,396) | parquet | not yet |
//!
//! MLCommons publishes no checksums beside the files: its downloader checks each file's MD5
//! against a list kept in the same bucket. The data check prints each present file's SHA-256 so
//! two machines can compare theirs. Pickles are read by [`super::pandas`] (gzip-compressed or not,
//! so a `.pkl` left compressed by the download reads too).

use crate::dataset::pandas;
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
    /// A pandas DataFrame pickle: prompts in `tok_input`, references in column `reference`.
    PandasPickle { reference: &'static str },
    /// Parquet files.
    Parquet,
}

/// One benchmark's official dataset file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetFile {
    pub benchmark: &'static str,
    /// The file's name as published.
    pub file: &'static str,
    pub format: Format,
    /// The MLCommons metadata URI the downloader fetches it with.
    pub uri: &'static str,
}

/// Every LLM dataset this tool knows, per benchmark.
pub const FILES: [DatasetFile; 5] = [
    DatasetFile {
        benchmark: "llama3.1-8b",
        file: "cnn_eval.json",
        format: Format::CnnDailyMailJson,
        uri: "https://inference.mlcommons-storage.org/metadata/llama3-1-8b-cnn-eval.uri",
    },
    DatasetFile {
        benchmark: "llama3.1-8b-edge",
        file: "sample_cnn_eval_5000.json",
        format: Format::CnnDailyMailJson,
        uri: "https://inference.mlcommons-storage.org/metadata/llama3-1-8b-sample-cnn-eval-5000.uri",
    },
    DatasetFile {
        benchmark: "llama2-70b",
        file: "open_orca_gpt4_tokenized_llama.sampled_24576.pkl",
        format: Format::PandasPickle { reference: "output" },
        uri: "https://inference.mlcommons-storage.org/metadata/llama-2-70b-open-orca-dataset.uri",
    },
    DatasetFile {
        benchmark: "deepseek-r1",
        file: "mlperf_deepseek_r1_dataset_4388_fp8_eval.pkl",
        format: Format::PandasPickle { reference: "ground_truth" },
        uri: "https://inference.mlcommons-storage.org/metadata/deepseek-r1-datasets-fp8-eval.uri",
    },
    DatasetFile {
        benchmark: "gpt-oss-120b",
        file: "perf/perf_eval_ref.parquet",
        format: Format::Parquet,
        uri: "https://inference.mlcommons-storage.org/metadata/gpt-oss-data.uri",
    },
];

impl DatasetFile {
    pub fn of(benchmark: &str) -> Option<&'static DatasetFile> {
        FILES.iter().find(|f| f.benchmark == benchmark)
    }

    /// Where the data check and the workload look for it.
    pub fn path(&self, scratch: &Scratch) -> PathBuf {
        scratch.data_dir().join(self.benchmark).join(self.file)
    }

    /// The command that fetches it into its place.
    pub fn fetch_command(&self, scratch: &Scratch) -> String {
        format!("{DOWNLOADER} -d {} {}", scratch.data_dir().join(self.benchmark).display(), self.uri)
    }

    /// The data check's entry: present or not, its SHA-256 when present, and how to fetch it.
    pub fn item(&self, scratch: &Scratch) -> Item {
        let path = self.path(scratch);
        let remedy = format!("Fetch it with the MLCommons downloader (it checks the MD5s MLCommons publishes with it):\n  {}", self.fetch_command(scratch));
        let mut item = Item::new(ItemKind::Dataset, &format!("{} dataset ({})", self.benchmark, self.file), path.clone(), remedy);
        if path.is_file() {
            item.detail = Some(match crate::fsutil::sha256_file(&path) {
                Ok((bytes, digest)) => format!("{bytes} bytes, sha256 {digest}"),
                Err(e) => e,
            });
        }
        item
    }

    /// Reads the samples.
    pub fn read(&self, scratch: &Scratch) -> Result<LlmSamples, String> {
        let path = self.path(scratch);
        if !path.is_file() {
            return Err(format!("{}: the {} dataset is missing; fetch it with\n  {}", path.display(), self.benchmark, self.fetch_command(scratch)));
        }
        match self.format {
            Format::CnnDailyMailJson => read_cnn_dailymail_json(&path),
            Format::PandasPickle { reference } => read_pandas_pickle(&path, reference),
            Format::Parquet => Err(format!(
                "{}: this build cannot read the {} dataset's format (parquet) yet; run with --dataset=synthetic (generated prompts, never submittable)",
                path.display(),
                self.benchmark,
            )),
        }
    }
}

/// A dataset's samples in order (index = LoadGen's sample index).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSamples {
    pub prompts: Vec<Vec<i32>>,
    /// The reference answer of each sample.
    pub references: Vec<String>,
}

#[derive(Deserialize)]
struct CnnEntry {
    tok_input: Vec<i64>,
    output: String,
}

/// `cnn_eval.json` / `sample_cnn_eval_5000.json` as `download_cnndm.py` writes them.
pub fn read_cnn_dailymail_json(path: &Path) -> Result<LlmSamples, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let entries: Vec<serde_json::Value> =
        serde_json::from_str(&text).map_err(|e| format!("{}:{}:{}: not the CNN/DailyMail dataset's JSON array: {e}", path.display(), e.line(), e.column()))?;
    let mut samples = LlmSamples { prompts: Vec::with_capacity(entries.len()), references: Vec::with_capacity(entries.len()) };
    for (index, value) in entries.into_iter().enumerate() {
        let entry: CnnEntry = serde_json::from_value(value)
            .map_err(|e| format!("{}: sample {index}: {e} (each entry needs tok_input, a list of token ids, and output, the reference summary)", path.display()))?;
        samples.prompts.push(prompt_ids(&entry.tok_input).map_err(|e| format!("{}: sample {index}: {e}", path.display()))?);
        samples.references.push(entry.output);
    }
    Ok(samples)
}

/// A pickled DataFrame's `tok_input` (lists or numpy arrays of ids) and `reference` (strings).
pub fn read_pandas_pickle(path: &Path, reference: &str) -> Result<LlmSamples, String> {
    let frame = pandas::read_pickle(path)?;
    let column = |name: &str| frame.column(name).map_err(|e| format!("{}: {e}", path.display()));
    let (tok_input, references) = (column("tok_input")?, column(reference)?);
    let mut samples = LlmSamples { prompts: Vec::with_capacity(frame.rows), references: Vec::with_capacity(frame.rows) };
    for (index, (ids, text)) in tok_input.iter().zip(references).enumerate() {
        let at = |what: String| format!("{}: sample {index}: {what}", path.display());
        let ids = pandas::ints(ids).map_err(|e| at(format!("tok_input is {e}")))?;
        samples.prompts.push(prompt_ids(&ids).map_err(at)?);
        samples.references.push(text.as_str().ok_or_else(|| at(format!("{reference} is a {}, not a string", text.kind())))?.to_string());
    }
    Ok(samples)
}

/// A prompt's token ids as the SUT sends them: not empty, each an int32.
fn prompt_ids(ids: &[i64]) -> Result<Vec<i32>, String> {
    if ids.is_empty() {
        return Err("tok_input is empty".into());
    }
    ids.iter().map(|&id| i32::try_from(id).map_err(|_| format!("token id {id} does not fit int32"))).collect()
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
        assert_eq!(samples.prompts.len(), samples.references.len());
        assert_eq!(samples.prompts[0][0], 128000, "tok_input starts with Llama 3's <|begin_of_text|>");
        assert!(samples.references[3].contains("ü"), "non-ASCII text survives");
    }

    #[test]
    fn missing_and_corrupt_files_name_the_file_and_the_sample() {
        let dir = std::env::temp_dir().join(format!("mlperf-llm-dataset-{}", std::process::id()));
        let scratch = Scratch::new(&dir);
        let file = DatasetFile::of("llama3.1-8b").unwrap();
        let missing = file.read(&scratch).unwrap_err();
        assert!(missing.contains("data/llama3.1-8b/cnn_eval.json") && missing.contains("llama3-1-8b-cnn-eval.uri") && missing.contains("mlc-r2-downloader"), "{missing}");
        assert!(!file.item(&scratch).present);

        std::fs::create_dir_all(file.path(&scratch).parent().unwrap()).unwrap();
        std::fs::write(file.path(&scratch), "[{\"tok_input\": [1, 2], \"output\": \"a\"},\n {\"tok_input\": [1, 2]}]").unwrap();
        let no_output = file.read(&scratch).unwrap_err();
        assert!(no_output.contains("sample 1: missing field `output`"), "{no_output}");
        std::fs::write(file.path(&scratch), "[{\"tok_input\": [1, 99999999999], \"output\": \"a\"}]").unwrap();
        assert!(file.read(&scratch).unwrap_err().contains("sample 0: token id 99999999999 does not fit int32"));
        std::fs::write(file.path(&scratch), "[{\"tok_input\": [1, 2], \"output\": \"a\"},\n {\"tok_input\": [1").unwrap();
        let truncated = file.read(&scratch).unwrap_err();
        assert!(truncated.contains("cnn_eval.json:2:") && truncated.contains("not the CNN/DailyMail dataset's JSON array"), "{truncated}");
        let item = file.item(&scratch);
        assert!(item.present && item.detail.as_deref().unwrap().contains("sha256 "), "{item:?}");

        let pickle = DatasetFile::of("llama2-70b").unwrap();
        std::fs::create_dir_all(pickle.path(&scratch).parent().unwrap()).unwrap();
        std::fs::write(pickle.path(&scratch), b"\x80\x05").unwrap();
        let err = pickle.read(&scratch).unwrap_err();
        assert!(err.contains("open_orca_gpt4_tokenized_llama.sampled_24576.pkl: not a readable pickle"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_open_orca_pickle_reads_its_prompts_and_references() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/datasets/open_orca_tiny.pkl");
        let samples = read_pandas_pickle(&path, "output").unwrap();
        assert_eq!(samples.prompts.len(), 4);
        assert_eq!(samples.prompts[0][0], 1, "Llama 2's BOS first");
        assert_eq!(samples.references[1], "Guten Morgen.");
        let err = read_pandas_pickle(&path, "ground_truth").unwrap_err();
        assert!(err.contains("open_orca_tiny.pkl: no column \"ground_truth\"") && err.contains("tok_output"), "{err}");
        let err = read_pandas_pickle(&path, "tok_output").unwrap_err();
        assert!(err.contains("open_orca_tiny.pkl: sample 0: tok_output is a list, not a string"), "{err}");
    }
}
