//! `generate_engines` for BERT on the GPU: import the ONNX model, lay its weights out, check the
//! plan against the CPU engine (its accuracy oracle) on the first samples, write the plan. Runs
//! never build: a missing, stale or corrupt plan is refused with the command that rebuilds it.

use super::import as bert_import;
use super::layout::{self, BertPlanHeader};
use super::{GpuBertEngine, RunOptions, WORKSPACE_BYTES, matmul, quant};
use crate::benchmarks::bert::cpu::CpuBertEngine;
use crate::engines::cpu::parallel_chunks;
use crate::engines::gpu::GpuError;
use crate::engines::gpu::device;
use crate::engines::gpu::plan::{self, Plan, PlanKey, PlanStatus};
use crate::engines::{ElementType, Engine, SampleSource};
use crate::fsutil::write_atomic;
use prost::Message as _;
use std::path::PathBuf;
use std::sync::Arc;

type Result<T> = std::result::Result<T, GpuError>;

/// The most the plan's logits may differ from the CPU engine's (rms), relative to how much the
/// reference's logits vary between a feature's tokens (rms of their standard deviations): what
/// decides an answer is that variation, not the logits' common offset. A wrong kernel scores
/// near 1 or more. Start and end agreement (each feature's argmax token) is reported, not judged:
/// on a model whose logits are nearly flat, fp16 rounding flips near-ties.
pub const MAX_SPREAD_RELATIVE_ERROR: f64 = 0.1;
/// The least F1 of an int8 plan's answers against the CPU engine's (fp32): 99 % of the fp32 F1,
/// which is 1 against itself (bert-99's accuracy target is 99 % of the reference's). Int8 logits
/// move by more than fp16's, so for them the answers, not the logits, are judged.
pub const MIN_INT8_F1: f64 = 0.99;

/// One BERT plan as a config resolves it.
#[derive(Clone, Debug)]
pub struct BertGpuSpec {
    pub model_path: PathBuf,
    pub plan_path: PathBuf,
    pub options: RunOptions,
    /// fp16, or int8 (bert-99's configs).
    pub precision: ElementType,
}

impl BertGpuSpec {
    /// The key a plan must have on this machine (GPU 0 stands for all).
    pub fn wanted_key(&self) -> Result<PlanKey> {
        let (gpu_name, compute_capability, cuda_driver_version) = device::device_identity(0)?;
        matmul::require_cublaslt()?;
        Ok(PlanKey {
            format_version: plan::FORMAT_VERSION,
            model_sha256: plan::file_sha256(&self.model_path)?,
            gpu_name,
            compute_capability,
            cuda_driver_version,
            cudnn_version: 0,
            cublaslt_version: matmul::version(),
            batch_size: self.options.batch_size,
            precision: self.precision,
            input: format!("int32 3x{} (input_ids, segment_ids, input_mask)", self.options.seq),
            workspace_bytes: WORKSPACE_BYTES as u64,
            // Int8 plans quantize each token's inputs on the GPU at its own scale: no calibration.
            calibration_sha256: String::new(),
        })
    }

    fn import(&self) -> Result<bert_import::Bert> {
        let origin = self.model_path.display().to_string();
        let bytes = std::fs::read(&self.model_path).map_err(|source| GpuError::ModelUnreadable { origin: origin.clone(), source })?;
        let proto = tract_onnx::pb::ModelProto::decode(bytes.as_slice()).map_err(|source| GpuError::NotOnnx { origin: origin.clone(), source })?;
        bert_import::import(&proto).map_err(|e| e.in_model(&origin))
    }

    /// `generate_engines`: reuses an up-to-date plan or builds one, checked against the CPU
    /// engine on the first `checked` samples of `source` (loaded). Returns a line for the user.
    pub fn generate(&self, source: &dyn SampleSource, checked: usize, progress: &mut dyn FnMut(&str)) -> Result<String> {
        let key = self.wanted_key()?;
        let reason = match plan::check(&self.plan_path, &key) {
            PlanStatus::Fresh => return Ok(format!("{}: up to date, reused", self.plan_path.display())),
            PlanStatus::Missing => "no plan yet".to_string(),
            PlanStatus::Stale(diffs) => format!("stale plan ({})", diffs.join("; ")),
            PlanStatus::Corrupt(why) => format!("corrupt plan ({why})"),
        };
        progress(&format!("building {}: {reason}", self.plan_path.display()));
        let origin = self.model_path.display().to_string();
        let bert = self.import()?;
        let (header, blob) = layout::lay_out(&bert, key, origin.clone(), self.precision == ElementType::I8).map_err(|e| e.in_model(&origin))?;
        let s = header.shape;
        progress(&format!(
            "{} layers, hidden {}, {} heads, intermediate {}, vocabulary {}: {:.0} MB of {} weights",
            s.layers,
            s.hidden,
            s.heads,
            s.intermediate,
            s.vocab,
            blob.len() as f64 / 1e6,
            self.precision
        ));
        let mut plan = Plan { header, blob };
        plan.header.verification = self.verify(&plan, source, checked)?;
        progress(&plan.header.verification);
        write_atomic(&self.plan_path, &plan.to_bytes())?;
        Ok(format!("{}: built ({reason}); {}", self.plan_path.display(), plan.header.verification))
    }

    /// The GPU's logits against the CPU engine's on samples `0..checked`.
    fn verify(&self, plan: &Plan<BertPlanHeader>, source: &dyn SampleSource, checked: usize) -> Result<String> {
        let indices: Vec<usize> = (0..checked).collect();
        let mut gpu = Vec::new();
        GpuBertEngine::open(0, plan, RunOptions { streams: 1, ..self.options })?.answer_all(&indices, source, &mut gpu)?;
        let cpu = Arc::new(CpuBertEngine::load(&self.model_path, self.options.seq).map_err(|e| GpuError::Other(e.to_string()))?);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(checked.max(1));
        let reference = parallel_chunks(0..checked, threads, checked.div_ceil(threads).max(1), |range| {
            let mut out = Vec::new();
            cpu.infer(&range.collect::<Vec<_>>(), source, &mut out)?;
            Ok(out)
        })
        .map_err(|e: crate::engines::EngineError| GpuError::Other(e.to_string()))?;
        judge(&gpu, &reference, self.precision == ElementType::I8)
    }

    /// The plan on each of `devices` GPUs. A missing, stale or corrupt plan is an error that
    /// names the command that rebuilds it.
    pub fn open(&self, devices: usize) -> std::result::Result<Vec<Arc<dyn Engine>>, crate::Error> {
        let data = |e: GpuError| crate::Error::Data(e.to_string());
        let key = self.wanted_key().map_err(data)?;
        plan::require_fresh(&self.plan_path, &key)?;
        let loaded: Plan<BertPlanHeader> = Plan::load(&self.plan_path)?;
        Ok(GpuBertEngine::open_all(devices, &loaded, self.options)?)
    }
}

/// A little-endian f32 `[length, 2]` response as `[start, end]` pairs.
fn pairs(response: &[u8]) -> Vec<[f32; 2]> {
    response.chunks_exact(8).map(|b| std::array::from_fn(|k| f32::from_le_bytes(b[4 * k..4 * k + 4].try_into().expect("4 bytes")))).collect()
}

/// The plan's responses against the CPU engine's: logit error relative to the logits' spread
/// between tokens (judged for fp16), the answers' F1 (judged for `int8`), start and end agreement
/// (reported).
fn judge(gpu: &[Vec<u8>], cpu: &[Vec<u8>], int8: bool) -> Result<String> {
    let mut agreement = quant::Agreement::default();
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        if g.len() != c.len() {
            return Err(GpuError::Build(format!("sample {i}: the GPU answered {} logits, the CPU engine {}", g.len() / 4, c.len() / 4)));
        }
        agreement.add(&pairs(g), &pairs(c));
    }
    let line = format!("checked against the CPU engine on {} features: {agreement}", agreement.features);
    let relative = agreement.relative_error();
    let failed = if int8 { agreement.f1() < MIN_INT8_F1 } else { relative > MAX_SPREAD_RELATIVE_ERROR || !relative.is_finite() };
    if failed {
        let fix = if int8 { format!("; int8 needs answers' F1 >= {MIN_INT8_F1}: `--precision=fp16` runs the fp16 plan instead") } else { String::new() };
        return Err(GpuError::Build(format!("the GPU BERT plan disagrees with the CPU engine: {line}{fix}")));
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(pairs: &[(f32, f32)]) -> Vec<u8> {
        pairs.iter().flat_map(|(s, e)| s.to_le_bytes().into_iter().chain(e.to_le_bytes())).collect()
    }

    #[test]
    fn the_error_against_the_spread_between_tokens_decides_the_verdict() {
        let cpu = vec![response(&[(0.1, 2.0), (3.0, 0.5), (0.2, 0.1)]); 10];
        let close = vec![response(&[(0.1, 2.001), (3.001, 0.5), (0.2, 0.1)]); 10];
        let line = judge(&close, &cpu, false).unwrap();
        assert!(line.contains("start agrees 10/10, end 10/10"), "{line}");
        // A near-tie flipped by rounding is reported, not failed.
        let tie = vec![response(&[(3.0, 2.0), (3.0001, 0.5), (0.2, 0.1)]); 10];
        let near = vec![response(&[(3.0001, 2.0), (3.0, 0.5), (0.2, 0.1)]); 10];
        assert!(judge(&near, &tie, false).unwrap().contains("start agrees 0/10"));
        let noisy = vec![response(&[(0.1, 2.5), (3.5, 0.5), (0.2, 0.1)]); 10];
        assert!(judge(&noisy, &cpu, false).unwrap_err().to_string().contains("of their spread between tokens"));
        // Logits offset by a constant are as wrong as their offset, however large the logits.
        let flat = vec![response(&[(100.0, 100.0), (100.01, 100.0), (100.0, 100.01)]); 10];
        let shifted = vec![response(&[(100.01, 100.01), (100.02, 100.01), (100.01, 100.02)]); 10];
        assert!(judge(&shifted, &flat, false).is_err());
        // Int8 plans are judged by their answers: noisy logits with the same answers pass, a
        // moved answer fails.
        assert!(judge(&noisy, &cpu, true).unwrap().contains("answers' F1 1.0000"));
        let moved = vec![response(&[(3.5, 2.0), (0.1, 0.5), (0.2, 2.2)]); 10];
        assert!(judge(&moved, &cpu, true).unwrap_err().to_string().contains("answers' F1 0.0000"));
        let short = vec![response(&[(0.1, 2.0)]); 10];
        assert!(judge(&short, &cpu, false).unwrap_err().to_string().contains("the GPU answered 2 logits, the CPU engine 6"));
    }
}
