//! `mlperf preprocess_data`: raw datasets in the scratch space to the tensors the configs name.

use crate::dataset::imagenet::{ImagenetOptions, preprocess_imagenet_with};
use crate::dataset::scratch::Scratch;
use crate::dataset::squad::{SquadOptions, preprocess_squad};
use mlperf_config::{DatasetSource, Settings};
use std::io::{IsTerminal, Write};

/// Preprocesses one benchmark's data for `settings`; returns a one-line summary.
pub fn preprocess(scratch: &Scratch, benchmark: &str, settings: &Settings) -> Result<String, String> {
    if settings.dataset == Some(DatasetSource::Synthetic) {
        return Ok(format!("{benchmark}: synthetic data is generated from the sample index on first use; nothing to preprocess"));
    }
    match benchmark {
        "resnet50" => {
            let options = ImagenetOptions::from_settings(settings)?;
            let map = scratch.map_path(settings).ok_or("resnet50 configs need map_path")?;
            let out = scratch.tensor_paths(settings).into_iter().next().ok_or("resnet50 configs need tensor_path")?;
            // A contiguous tensor names a file; per-sample output names a directory.
            let out_dir = if out.extension().is_some_and(|e| e == "npy") { out.parent().map(|p| p.to_path_buf()).unwrap_or(out) } else { out };
            let tty = std::io::stderr().is_terminal();
            let report = preprocess_imagenet_with(&scratch.data_dir().join("imagenet"), &map, &out_dir, &options, &|done, total| {
                if tty && (done % 500 == 0 || done == total) {
                    eprint!("\rresnet50: {done}/{total} images");
                    let _ = std::io::stderr().flush();
                }
            })?;
            Ok(format!(
                "resnet50: {} images ({} written, {} kept) -> {} (sample shape {:?})",
                report.samples,
                report.written,
                report.skipped,
                report.output.display(),
                report.sample_shape
            ))
        }
        "bert" => {
            let tensors = scratch.tensor_paths(settings);
            let out_dir = tensors.first().and_then(|p| p.parent()).ok_or("bert configs need tensor_path")?.to_path_buf();
            let vocab = scratch.model_path(settings).and_then(|m| m.parent().map(|d| d.join("vocab.txt"))).unwrap_or_else(|| scratch.models_dir().join("bert/vocab.txt"));
            let seq = settings.bert_opt_seqlen.unwrap_or(384) as usize;
            let report = preprocess_squad(&scratch.data_dir().join("squad/dev-v1.1.json"), &vocab, &out_dir, &SquadOptions { max_seq_length: seq, ..SquadOptions::default() })?;
            Ok(format!("bert: {} questions -> {} features in {} ({:.1} s)", report.examples, report.features, report.out_dir.display(), report.elapsed.as_secs_f64()))
        }
        other => Err(format!("this tool does not preprocess {other}; prepare it as its MLCommons reference implementation describes")),
    }
}
