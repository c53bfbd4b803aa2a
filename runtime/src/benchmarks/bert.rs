//! BERT-Large on SQuAD v1.1: the data a run needs (dev set, vocabulary, tokenized tensors, feature
//! metadata, model) and `preprocess_data`, which tokenizes the dev set as the reference does. No
//! engine runs BERT in this build yet.

use super::{Benchmark, Workload, WorkloadSpec, no_engine};
use crate::dataset::scratch::{DataReport, Item, ItemKind, Scratch, preprocess_command};
use crate::dataset::squad::{FEATURES_FILE, SquadOptions, preprocess_squad};
use mlperf_config::Settings;
use std::path::PathBuf;

pub struct Bert;

/// Where MLCommons publishes the files the configs name, by file name.
fn model_download(file: &str) -> Option<&'static str> {
    match file {
        "bert_large_v1_1_fake_quant.onnx" => Some("https://zenodo.org/record/3750364/files/bert_large_v1_1_fake_quant.onnx (MLCommons BERT-Large, int8 fake-quantized ONNX)"),
        "bert_large_v1_1.onnx" | "model.onnx" => Some("https://zenodo.org/record/3733910/files/model.onnx (MLCommons BERT-Large, fp32 ONNX)"),
        _ => None,
    }
}

/// The vocabulary: next to the model, as MLCommons ships it.
fn vocab_path(scratch: &Scratch, settings: &Settings) -> PathBuf {
    scratch.model_path(settings).and_then(|m| m.parent().map(|d| d.join("vocab.txt"))).unwrap_or_else(|| scratch.models_dir().join("bert/vocab.txt"))
}

impl Benchmark for Bert {
    fn id(&self) -> &'static str {
        "bert"
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        let mut report = DataReport::new(scratch, self.id(), settings);
        let dev = scratch.data_dir().join("squad/dev-v1.1.json");
        let vocab = vocab_path(scratch, settings);
        let raw = Item::new(
            ItemKind::Dataset,
            "SQuAD v1.1 dev set",
            dev.clone(),
            format!("Download https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json\nand save it as {}", dev.display()),
        );
        let vocab_item = Item::new(
            ItemKind::Vocab,
            "BERT vocabulary",
            vocab.clone(),
            format!("Download https://zenodo.org/record/3733910/files/vocab.txt (MLCommons BERT-Large, uncased)\nand save it as {}", vocab.display()),
        );
        let preprocess = if raw.present && vocab_item.present {
            format!("Run `{}`", preprocess_command(self.id()))
        } else {
            format!("Get the SQuAD dev set and the vocabulary (above), then run `{}`", preprocess_command(self.id()))
        };
        report.items.push(raw);
        report.items.push(vocab_item);
        let tensors = scratch.tensor_paths(settings);
        for path in &tensors {
            report.items.push(Item::new(ItemKind::Preprocessed, "tokenized SQuAD tensor", path.clone(), preprocess.clone()));
        }
        if let Some(dir) = tensors.first().and_then(|p| p.parent()) {
            report.items.push(Item::new(ItemKind::Metadata, "SQuAD feature metadata (for scoring)", dir.join(FEATURES_FILE), preprocess.clone()));
        }
        if let Some(model) = scratch.model_path(settings) {
            let download = model.file_name().and_then(|f| f.to_str()).and_then(model_download);
            report.items.push(Item::model("BERT-Large model", model, download));
        }
        report
    }

    fn preprocess(&self, scratch: &Scratch, settings: &Settings) -> Result<String, String> {
        let tensors = scratch.tensor_paths(settings);
        let out_dir = tensors.first().and_then(|p| p.parent()).ok_or("bert configs need tensor_path")?.to_path_buf();
        let seq = settings.bert_opt_seqlen.unwrap_or(384) as usize;
        let options = SquadOptions { max_seq_length: seq, ..SquadOptions::default() };
        let report = preprocess_squad(&scratch.data_dir().join("squad/dev-v1.1.json"), &vocab_path(scratch, settings), &out_dir, &options)?;
        Ok(format!("bert: {} questions -> {} features in {} ({:.1} s)", report.examples, report.features, report.out_dir.display(), report.elapsed.as_secs_f64()))
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, crate::Error> {
        Err(no_engine(self.id(), spec.settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_every_file() {
        let r = std::env::temp_dir().join(format!("mlperf-bert-data-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&r);
        let s = Scratch::new(&r);
        let settings = Settings {
            model_path: Some("bert/bert_large_v1_1_fake_quant.onnx".into()),
            tensor_path: Some("squad_tokenized/input_ids.npy,squad_tokenized/segment_ids.npy,squad_tokenized/input_mask.npy".into()),
            ..Settings::default()
        };
        let report = Bert.data(&s, &settings);
        let paths: Vec<String> = report.items.iter().map(|i| i.path.strip_prefix(&r).unwrap().display().to_string()).collect();
        assert_eq!(
            paths,
            [
                "data/squad/dev-v1.1.json",
                "models/bert/vocab.txt",
                "preprocessed_data/squad_tokenized/input_ids.npy",
                "preprocessed_data/squad_tokenized/segment_ids.npy",
                "preprocessed_data/squad_tokenized/input_mask.npy",
                "preprocessed_data/squad_tokenized/squad_features.json",
                "models/bert/bert_large_v1_1_fake_quant.onnx"
            ]
        );
        let text = report.render();
        assert!(text.contains("rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json"));
        assert!(text.contains("zenodo.org/record/3750364/files/bert_large_v1_1_fake_quant.onnx"));
        assert!(text.contains("zenodo.org/record/3733910/files/vocab.txt"));
        std::fs::create_dir_all(r.join("data/squad")).unwrap();
        std::fs::write(r.join("data/squad/dev-v1.1.json"), "{}").unwrap();
        std::fs::create_dir_all(r.join("models/bert")).unwrap();
        std::fs::write(r.join("models/bert/vocab.txt"), "[UNK]\n").unwrap();
        let report = Bert.data(&s, &settings);
        assert_eq!(report.items[2].remedy, "Run `mlperf preprocess_data --benchmarks=bert`");
        std::fs::remove_dir_all(&r).unwrap();
    }
}
