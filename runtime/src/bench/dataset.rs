//! `mlperf bench dataset`: reading an LLM dataset pickle into prompts and references with
//! [`crate::dataset::pandas`], against pandas reading the same file in Python (what the reference
//! harnesses do: `pd.read_pickle`, then the `tok_input` lists and the reference column). Reported:
//! the median time of the repeats and each process's peak resident memory.

use super::BenchError;
use crate::benchmarks::llm::dataset::read_reference_texts;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct DatasetBenchOptions {
    pub file: PathBuf,
    /// The column of reference answers (`output` for OpenOrca and CNN/DailyMail).
    pub reference_column: String,
    pub repeats: usize,
    /// Python interpreter of the comparator (needs pandas).
    pub python: String,
}

/// One side's measurement.
struct Side {
    median_s: f64,
    peak_rss_mib: f64,
    samples: usize,
    prompt_tokens: usize,
}

/// The comparator: the reference harnesses' way of loading the file.
const PANDAS_READER: &str = r#"
import resource, statistics, sys, time
import pandas as pd
path, column, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = []
for _ in range(repeats):
    start = time.perf_counter()
    df = pd.read_pickle(path)
    prompts = [[int(t) for t in ids] for ids in df["tok_input"]]
    references = df[column].tolist()
    times.append(time.perf_counter() - start)
print(statistics.median(times), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(prompts), sum(map(len, prompts)))
"#;

pub fn run(options: &DatasetBenchOptions) -> Result<String, BenchError> {
    if options.repeats == 0 {
        return Err(BenchError::NoRepeats);
    }
    let ours = ours(options)?;
    let theirs = pandas(options)?;
    if (theirs.samples, theirs.prompt_tokens) != (ours.samples, ours.prompt_tokens) {
        return Err(BenchError::Disagree { ours: (ours.samples, ours.prompt_tokens), theirs: (theirs.samples, theirs.prompt_tokens) });
    }
    let bytes = std::fs::metadata(&options.file).map(|m| m.len()).unwrap_or(0);
    let mut out = format!(
        "reading {} ({:.1} MB, {} samples, {} prompt tokens) into prompts and references, median of {}\n\n",
        options.file.display(),
        bytes as f64 / 1e6,
        ours.samples,
        ours.prompt_tokens,
        options.repeats
    );
    out.push_str("| reader | time vs pandas | seconds | peak RSS (MiB) |\n|---|---|---|---|\n");
    for (name, side) in [("(a) dataset::pandas (this binary)", &ours), ("(b) pandas.read_pickle (Python)", &theirs)] {
        out.push_str(&format!("| {name} | {:.2} | {:.3} | {:.0} |\n", side.median_s / theirs.median_s, side.median_s, side.peak_rss_mib));
    }
    Ok(out)
}

fn ours(options: &DatasetBenchOptions) -> Result<Side, BenchError> {
    let mut times = Vec::with_capacity(options.repeats);
    let mut counts = (0, 0);
    for _ in 0..options.repeats {
        let start = Instant::now();
        let samples = read_reference_texts(&options.file, &options.reference_column)?;
        times.push(start.elapsed().as_secs_f64());
        counts = (samples.prompts.len(), samples.prompts.iter().map(Vec::len).sum());
    }
    times.sort_by(f64::total_cmp);
    Ok(Side { median_s: times[times.len() / 2], peak_rss_mib: own_peak_rss_kib()? / 1024.0, samples: counts.0, prompt_tokens: counts.1 })
}

/// This process's peak resident set (VmHWM), in KiB.
fn own_peak_rss_kib() -> Result<f64, BenchError> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(BenchError::ProcStatus)?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).ok_or(BenchError::NoPeakRss)
}

fn pandas(options: &DatasetBenchOptions) -> Result<Side, BenchError> {
    let output = std::process::Command::new(&options.python)
        .args(["-c", PANDAS_READER])
        .arg(&options.file)
        .arg(&options.reference_column)
        .arg(options.repeats.to_string())
        .output()
        .map_err(|source| BenchError::ComparatorSpawn { python: options.python.clone(), source })?;
    if !output.status.success() {
        return Err(BenchError::ComparatorFailed { python: options.python.clone(), stderr: String::from_utf8_lossy(&output.stderr).trim().to_string() });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<f64> = text.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    let [median_s, rss_kib, samples, tokens] = fields[..] else { return Err(BenchError::ComparatorOutput(text.into_owned())) };
    Ok(Side { median_s, peak_rss_mib: rss_kib / 1024.0, samples: samples as usize, prompt_tokens: tokens as usize })
}
