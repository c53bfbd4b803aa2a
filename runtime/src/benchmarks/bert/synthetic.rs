//! The synthetic BERT workload of the CPU-only development system (never submittable): a generated
//! SQuAD-format dev set, vocabulary and BERT model, run through the same tokenizer, tensors, QSL,
//! engine and scorer as the real data.
//!
//! - **Vocabulary**: BERT's special tokens, punctuation, generated words, and each syllable as a
//!   word start and as a `##` continuation, so every generated word tokenizes, the rarer ones into
//!   several WordPieces.
//! - **Dev set**: articles of paragraphs of generated sentences, each paragraph with a few
//!   questions; most paragraphs fit one feature, some are long enough to be split into windows
//!   (the doc-stride path). Questions are added until the set has exactly the round's feature
//!   count, so LoadGen's sample counts are the real ones. Feature lengths (question, context and
//!   the three special tokens) follow SQuAD's ([`REAL_LENGTHS`]), so speed measured on the set is
//!   speed on SQuAD's work.
//! - **Model**: [`crate::benchmarks::bert::model`], MLPerf BERT's interface at a small size.
//! - **Answers**: what the CPU engine predicts for each question (through the scorer's own
//!   `write_predictions`), written into the dev set as its ground truth. F1 on synthetic data thus
//!   measures agreement with the CPU engine, the oracle other engines are checked against: the CPU
//!   engine itself has an exact match of 100 and an F1 just under it (an answer of punctuation
//!   alone normalises to nothing, which `evaluate_v1.1.py`'s F1 counts as 0).
//!
//! Files, in one directory (`<models>/synthetic/squad/`): `vocab.txt`, `dev-v1.1.json`,
//! `bert.onnx`, the three tensors and `squad_features.json` that `preprocess_data` writes for real
//! data, and `manifest.json`. [`ensure`] creates them on first use and reuses them while the
//! manifest matches the generator version, seed, sizes and feature count and every file matches its
//! recorded hash. Everything is a pure function of the seed, except the answers, which come from
//! tract's arithmetic (its kernels differ in the last bits between CPU families). GPU configs add
//! `bert-large-shape.g<version>.onnx` ([`ensure_large_model`]), outside the manifest.

use std::path::{Path, PathBuf};
use std::time::Instant;

use prost::Message;
use serde_json::json;

use super::error::BertError;
use crate::benchmarks::bert::accuracy::{SquadScoreOptions, decode_logits, predict};
use crate::benchmarks::bert::cpu::{CpuBertEngine, response_bytes};
use crate::benchmarks::bert::model::{BertShape, bert};
use crate::benchmarks::bert::squad::{FEATURES_FILE, SquadOptions, TENSOR_FILES, convert_examples_to_features, doc_spans, doc_tokens, parse_squad, preprocess_squad};
use crate::benchmarks::bert::wordpiece::{BertTokenizer, Vocab};
use crate::engines::cpu::parallel_chunks;
use crate::engines::synthetic::manifest;
use crate::engines::synthetic::rng::SplitMix64;

/// Bumped whenever anything generated changes: a manifest of another version regenerates.
pub const GENERATOR_VERSION: u32 = 3;
/// Seed of the words, texts and weights: fixed, so every machine generates the same workload.
pub const SEED: u64 = 20_261_126;
/// Features of SQuAD v1.1's dev set at MLPerf's parameters (every round's `dataset_size`), which
/// the synthetic set mirrors.
pub const DEV_FEATURES: usize = 10_833;
/// The model's sizes, apart from the vocabulary (which the generated vocabulary fixes).
const LAYERS: usize = 2;
const HIDDEN: usize = 64;
const HEADS: usize = 4;
const INTERMEDIATE: usize = 256;
const MAX_POSITIONS: usize = 512;
/// Generated words in the vocabulary, and how many more appear in texts (tokenized into pieces).
const VOCAB_WORDS: usize = 2_000;
const TEXT_WORDS: usize = 3_000;
const CONSONANTS: &[u8] = b"bdfgklmnprstvz";
const VOWELS: &[u8] = b"aeiou";
const QUESTION_WORDS: [&str; 6] = ["what", "who", "where", "when", "which", "how"];
/// Features per parallel labelling work item.
const LABEL_CHUNK: usize = 64;
/// SQuAD v1.1 dev features' lengths in tokens (non-padding positions) at MLPerf's 384 / 128 / 64
/// with the uncased vocabulary, as quantiles: the 0th to 90th percentiles in steps of ten and the
/// maximum of the 708 features of five real articles (Normans, Computational complexity theory,
/// Southern California, Sky (United Kingdom), Victoria (Australia); issue 41's measurement, mean
/// 140.9). Lengths are drawn between these points linearly, except in the top tenth (below).
pub const REAL_LENGTHS: [(f32, f32); 11] =
    [(0.0, 41.0), (0.1, 75.0), (0.2, 92.0), (0.3, 111.0), (0.4, 124.0), (0.5, 133.0), (0.6, 145.0), (0.7, 164.0), (0.8, 182.0), (0.9, 214.0), (1.0, 384.0)];
/// The top tenth (214 to 384) is drawn as `214 + 170 u^TOP_POWER`: its mean must be about 256 for
/// the whole to average 140.9 (a straight line would give 299 and 145.3).
const TOP_POWER: f32 = 3.0;
/// The real mean, which the generated set keeps within a few tokens.
pub const REAL_MEAN: f64 = 140.9;

/// A feature length drawn from [`REAL_LENGTHS`] at `u` in [0, 1).
fn real_length(u: f32) -> usize {
    let top = REAL_LENGTHS[REAL_LENGTHS.len() - 2];
    if u >= top.0 {
        let t = ((u - top.0) / (1.0 - top.0)).powf(TOP_POWER);
        return (top.1 + (REAL_LENGTHS[REAL_LENGTHS.len() - 1].1 - top.1) * t).round() as usize;
    }
    let i = REAL_LENGTHS.iter().rposition(|&(q, _)| q <= u).unwrap_or(0);
    let ((q0, l0), (q1, l1)) = (REAL_LENGTHS[i], REAL_LENGTHS[i + 1]);
    (l0 + (l1 - l0) * (u - q0) / (q1 - q0)).round() as usize
}

/// One paragraph in this many is long enough for two windows or three (SQuAD's dev set has about
/// 2.5 % more features than questions: 10,833 for 10,570).
const LONG_PARAGRAPHS: u32 = 80;
/// The share of features the long paragraphs' windows make (about 3 %, all in SQuAD's top tail):
/// the other paragraphs draw their lengths below it.
const LONG_SHARE: f32 = 0.03;

/// The files of the synthetic set, all in one directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticSquad {
    pub dir: PathBuf,
}

impl SyntheticSquad {
    pub fn in_dir(dir: &Path) -> SyntheticSquad {
        SyntheticSquad { dir: dir.to_path_buf() }
    }
    pub fn vocab(&self) -> PathBuf {
        self.dir.join("vocab.txt")
    }
    pub fn dev_set(&self) -> PathBuf {
        self.dir.join("dev-v1.1.json")
    }
    pub fn model(&self) -> PathBuf {
        self.dir.join("bert.onnx")
    }
    /// The BERT-Large-shaped model GPU engines run (see [`ensure_large_model`]).
    pub fn large_model(&self) -> PathBuf {
        self.dir.join(format!("bert-large-shape.g{GENERATOR_VERSION}.onnx"))
    }
    pub fn tensors(&self) -> Vec<PathBuf> {
        TENSOR_FILES.iter().map(|f| self.dir.join(f)).collect()
    }
    pub fn features(&self) -> PathBuf {
        self.dir.join(FEATURES_FILE)
    }
    fn manifest(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }
    /// Every generated file, manifest excepted, with its manifest key.
    fn hashed(&self) -> Vec<(PathBuf, String)> {
        let mut files = vec![self.vocab(), self.dev_set(), self.model(), self.features()];
        files.extend(self.tensors());
        files.into_iter().map(|p| (p.clone(), p.file_name().unwrap().to_string_lossy().into_owned())).collect()
    }
}

/// BERT-Large's dimensions (24 layers, 1024 wide, 16 heads, 4096 intermediate, 512 positions).
pub const LARGE: BertShape = BertShape { vocab: 0, hidden: 1024, heads: 16, layers: 24, intermediate: 4096, max_positions: 512 };

/// The BERT-Large-shaped model of the set, generated on first use: MLPerf BERT's interface and
/// size, the set's vocabulary, seeded weights. GPU engines run it so that their speed is BERT-
/// Large's; its answers are not the set's ground truth (the 2-layer model's are), so its accuracy
/// runs fail their target: it is for performance and for checking an engine against the CPU
/// engine on the same model.
pub fn ensure_large_model(set: &SyntheticSquad, log: &mut dyn FnMut(&str)) -> Result<PathBuf, BertError> {
    let path = set.large_model();
    if path.is_file() {
        return Ok(path);
    }
    let vocab = std::fs::read_to_string(set.vocab()).map_err(|source| BertError::SyntheticVocab { path: set.vocab(), source })?;
    let shape = BertShape { vocab: vocab.lines().count(), ..LARGE };
    log(&format!("generating {} ({shape:?})", path.display()));
    crate::fsutil::write_atomic(&path, &bert(&shape, SEED).encode_to_vec())?;
    Ok(path)
}

/// What to generate: [`SyntheticSpec::standard`] for runs; tests shrink `features`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticSpec {
    pub seed: u64,
    /// Features (QSL samples) in the set.
    pub features: usize,
    pub options: SquadOptions,
    /// Threads for labelling (0: one per available core).
    pub threads: usize,
}

impl SyntheticSpec {
    /// The standard set: the dev set's feature count, MLPerf's feature parameters.
    pub fn standard() -> SyntheticSpec {
        SyntheticSpec { seed: SEED, features: DEV_FEATURES, options: SquadOptions::default(), threads: 0 }
    }
}

/// Creates the synthetic set in `set.dir` unless a matching one is there; progress to `log`.
pub fn ensure(set: &SyntheticSquad, spec: &SyntheticSpec, log: &mut dyn FnMut(&str)) -> Result<(), BertError> {
    match check_existing(set, spec) {
        Ok(()) => return Ok(()),
        Err(why) => log(&format!("generating the synthetic SQuAD set in {} ({why})", set.dir.display())),
    }
    manifest::invalidate(&set.manifest())?;
    let started = Instant::now();
    let words = Words::new(spec.seed);
    let vocab = words.vocab();
    crate::fsutil::write_atomic(&set.vocab(), (vocab.join("\n") + "\n").as_bytes())?;
    let tokenizer = BertTokenizer::new(Vocab::from_tokens(vocab.iter().cloned()))?;
    let articles = generate_articles(&words, &tokenizer, spec);
    let shape = BertShape { vocab: vocab.len(), hidden: HIDDEN, heads: HEADS, layers: LAYERS, intermediate: INTERMEDIATE, max_positions: MAX_POSITIONS };
    let model = bert(&shape, spec.seed).encode_to_vec();
    crate::fsutil::write_atomic(&set.model(), &model)?;

    // Label: the CPU engine's answer to each question becomes its ground truth.
    let unanswered = render_dev_set(&articles, &[]);
    let ds = parse_squad(&unanswered)?;
    let (meta, tensors) = convert_examples_to_features(&ds, &tokenizer, &spec.options)?;
    if meta.features.len() != spec.features {
        return Err(BertError::Generator(format!("generated {} features, wanted {}", meta.features.len(), spec.features)));
    }
    let engine = CpuBertEngine::load(&set.model(), spec.options.max_seq_length)?;
    let threads = if spec.threads > 0 { spec.threads } else { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) };
    let options = SquadScoreOptions::default();
    let logits = parallel_chunks(0..meta.features.len(), threads, LABEL_CHUNK, |chunk| {
        chunk
            .map(|i| {
                let (ids, segments, mask) = tensors.row(i);
                let sample: Vec<u8> = ids.iter().chain(segments).chain(mask).flat_map(|v| v.to_le_bytes()).collect();
                let (start, end) = engine.logits(&sample)?;
                decode_logits(&response_bytes(&start, &end), spec.options.max_seq_length, &options).map(Some)
            })
            .collect()
    })?;
    let answers: Vec<String> = predict(&meta, &logits, &options).into_iter().map(|(_, text)| text).collect();
    crate::fsutil::write_atomic(&set.dev_set(), render_dev_set(&articles, &answers).as_bytes())?;
    let report = preprocess_squad(&set.dev_set(), &set.vocab(), &set.dir, &spec.options)?;
    if report.features != spec.features {
        return Err(BertError::Generator(format!("{} features after labelling, {} before", report.features, spec.features)));
    }
    log(&format!("{} questions, {} features, {} WordPieces in the vocabulary ({:.1} s)", report.examples, report.features, vocab.len(), started.elapsed().as_secs_f64()));

    let fields = json!({
        "generator": "mlperf-runtime synthetic SQuAD v1.1 + BERT",
        "generator_version": GENERATOR_VERSION,
        "seed": spec.seed,
        "features": spec.features,
        "options": spec.options,
        "model": format!("{shape:?}"),
    });
    Ok(manifest::write(&set.manifest(), fields, &set.hashed())?)
}

/// Reuse check: the manifest matches `spec` and this generator, and every file its hash.
fn check_existing(set: &SyntheticSquad, spec: &SyntheticSpec) -> Result<(), manifest::ManifestError> {
    let wanted = [("generator_version", json!(GENERATOR_VERSION)), ("seed", json!(spec.seed)), ("features", json!(spec.features)), ("options", json!(spec.options))];
    manifest::check(&set.manifest(), &wanted, &set.hashed()).map(|_| ())
}

/// The generated words: the first [`VOCAB_WORDS`] are in the vocabulary.
struct Words {
    words: Vec<String>,
    seed: u64,
}

impl Words {
    fn new(seed: u64) -> Words {
        let mut rng = SplitMix64::derive(seed, "words", 0);
        let mut seen = std::collections::HashSet::new();
        let mut words = Vec::with_capacity(TEXT_WORDS);
        while words.len() < TEXT_WORDS {
            let syllables = rng.range(2, 4) as usize;
            let word: String = (0..syllables).map(|_| syllable(&mut rng)).collect();
            if seen.insert(word.clone()) {
                words.push(word);
            }
        }
        Words { words, seed }
    }

    /// The vocabulary file's tokens, in id order ([PAD] is 0, as BERT's).
    fn vocab(&self) -> Vec<String> {
        let mut v: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?"].iter().map(|s| s.to_string()).collect();
        v.extend(QUESTION_WORDS.iter().map(|s| s.to_string()));
        for &c in CONSONANTS {
            for &vowel in VOWELS {
                let s = String::from_utf8(vec![c, vowel]).unwrap();
                v.push(format!("##{s}"));
                v.push(s);
            }
        }
        let known: std::collections::HashSet<String> = v.iter().cloned().collect();
        v.extend(self.words[..VOCAB_WORDS].iter().filter(|w| !known.contains(*w)).cloned());
        v
    }

    /// A word of text: common words (the vocabulary's) four times as often as rare ones.
    fn pick(&self, rng: &mut SplitMix64) -> &str {
        let pool = if rng.range(0, 4) == 0 { TEXT_WORDS } else { VOCAB_WORDS };
        &self.words[rng.range(0, pool as u32 - 1) as usize]
    }

    /// Sentences of 5 to 14 words until the text has `tokens` WordPieces (the last sentence cut
    /// short to end there, give or take a word's pieces).
    fn context(&self, rng: &mut SplitMix64, tokenizer: &BertTokenizer, tokens: usize) -> String {
        let (mut text, mut count) = (Vec::new(), 0);
        let (mut in_sentence, mut sentence) = (0, rng.range(5, 14));
        while count < tokens {
            let mut word = self.pick(rng).to_string();
            if in_sentence == 0 {
                word[..1].make_ascii_uppercase();
            }
            in_sentence += 1;
            // The full stop is a piece of its own.
            if in_sentence == sentence || count + tokenizer.tokenize(&word).len() + 1 >= tokens {
                word.push('.');
                (in_sentence, sentence) = (0, rng.range(5, 14));
            }
            count += tokenizer.tokenize(&word).len();
            text.push(word);
        }
        text.join(" ")
    }

    /// A sentence of `lo..=hi` words, capitalised, ending in `end`.
    fn sentence(&self, rng: &mut SplitMix64, lo: u32, hi: u32, end: &str) -> String {
        let n = rng.range(lo, hi) as usize;
        let mut s: Vec<String> = (0..n).map(|_| self.pick(rng).to_string()).collect();
        if rng.range(0, 3) == 0 && n > 4 {
            s[n / 2].push(',');
        }
        let mut text = s.join(" ");
        text[..1].make_ascii_uppercase();
        text + end
    }
}

fn syllable(rng: &mut SplitMix64) -> String {
    let c = CONSONANTS[rng.range(0, CONSONANTS.len() as u32 - 1) as usize];
    let v = VOWELS[rng.range(0, VOWELS.len() as u32 - 1) as usize];
    String::from_utf8(vec![c, v]).unwrap()
}

struct Paragraph {
    context: String,
    /// `(id, question)`.
    questions: Vec<(String, String)>,
}

/// Paragraphs (grouped in articles of up to 8) with questions, exactly `spec.features` features.
fn generate_articles(words: &Words, tokenizer: &BertTokenizer, spec: &SyntheticSpec) -> Vec<Vec<Paragraph>> {
    let mut rng = SplitMix64::derive(words.seed, "squad", 0);
    let opts = &spec.options;
    let mut remaining = spec.features;
    let mut paragraphs: Vec<Paragraph> = Vec::new();
    let mut question_id = 0u64;
    while remaining > 0 {
        let questions: Vec<String> = (0..rng.range(1, 5))
            .map(|_| {
                let wh = QUESTION_WORDS[rng.range(0, QUESTION_WORDS.len() as u32 - 1) as usize];
                format!("{} {}", wh, words.sentence(&mut rng, 3, 9, "?").to_ascii_lowercase())
            })
            .collect();
        let query: usize = questions.iter().map(|q| tokenizer.tokenize(q).len().min(opts.max_query_length)).sum::<usize>() / questions.len();
        // The paragraph's features get a length drawn from SQuAD's (give or take their questions'
        // lengths); a few paragraphs are long enough for several windows (the doc-stride path).
        let doc_tokens_wanted = if rng.range(1, LONG_PARAGRAPHS) == 1 {
            rng.range(380, 520) as usize
        } else {
            real_length(rng.unit() * (1.0 - LONG_SHARE)).min(opts.max_seq_length).saturating_sub(query + 3).max(2)
        };
        let context = words.context(&mut rng, tokenizer, doc_tokens_wanted);
        let doc_len: usize = doc_tokens(&context).iter().map(|w| tokenizer.tokenize(w).len()).sum();
        let mut p = Paragraph { context, questions: Vec::new() };
        for question in questions {
            let query = tokenizer.tokenize(&question).len().min(opts.max_query_length);
            let windows = doc_spans(doc_len, opts.max_seq_length - query - 3, opts.doc_stride).len();
            if windows > remaining {
                break;
            }
            remaining -= windows;
            question_id += 1;
            p.questions.push((format!("{:024x}", SplitMix64::derive(words.seed, "id", question_id).next_u64()), question));
        }
        if !p.questions.is_empty() {
            paragraphs.push(p);
        }
    }
    let mut articles = Vec::new();
    let mut rest = paragraphs.into_iter().peekable();
    while rest.peek().is_some() {
        articles.push(rest.by_ref().take(8).collect());
    }
    articles
}

/// The dev set as SQuAD v1.1 JSON; `answers[i]` is question `i`'s (in file order), none if empty.
fn render_dev_set(articles: &[Vec<Paragraph>], answers: &[String]) -> String {
    let mut next = 0;
    let data: Vec<serde_json::Value> = articles
        .iter()
        .enumerate()
        .map(|(a, paragraphs)| {
            let paragraphs: Vec<serde_json::Value> = paragraphs
                .iter()
                .map(|p| {
                    let qas: Vec<serde_json::Value> = p
                        .questions
                        .iter()
                        .map(|(id, question)| {
                            let answer = answers.get(next).map(|text| json!({"text": text, "answer_start": p.context.find(text.as_str()).map_or(-1, |i| i as i64)}));
                            next += 1;
                            json!({"id": id, "question": question, "answers": answer.into_iter().collect::<Vec<_>>()})
                        })
                        .collect();
                    json!({"context": p.context, "qas": qas})
                })
                .collect();
            json!({"title": format!("Synthetic_{a}"), "paragraphs": paragraphs})
        })
        .collect();
    json!({"version": "1.1", "data": data}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::bert::accuracy::score_squad;
    use crate::dataset::npy::read_npy;

    /// The standard set's feature lengths (what the engines' work scales with) follow SQuAD's:
    /// every decile of [`REAL_LENGTHS`] within 4 tokens, the mean within 3 of the real 140.9.
    #[test]
    fn feature_lengths_follow_squad_s() {
        let spec = SyntheticSpec::standard();
        let words = Words::new(spec.seed);
        let tokenizer = BertTokenizer::new(Vocab::from_tokens(words.vocab())).unwrap();
        let opts = &spec.options;
        let mut lengths = Vec::new();
        for p in generate_articles(&words, &tokenizer, &spec).iter().flatten() {
            let doc_len: usize = doc_tokens(&p.context).iter().map(|w| tokenizer.tokenize(w).len()).sum();
            for (_, question) in &p.questions {
                let query = tokenizer.tokenize(question).len().min(opts.max_query_length);
                lengths.extend(doc_spans(doc_len, opts.max_seq_length - query - 3, opts.doc_stride).iter().map(|&(_, len)| len + query + 3));
            }
        }
        assert_eq!(lengths.len(), DEV_FEATURES);
        lengths.sort_unstable();
        let mean = lengths.iter().sum::<usize>() as f64 / lengths.len() as f64;
        let deciles: Vec<usize> = (0..10).map(|d| lengths[d * lengths.len() / 10]).collect();
        let wanted: Vec<usize> = REAL_LENGTHS[..10].iter().map(|&(_, l)| l as usize).collect();
        println!("mean {mean:.1}, deciles {deciles:?} (SQuAD: {REAL_MEAN}, {wanted:?}), max {}", lengths[lengths.len() - 1]);
        assert!(deciles.iter().zip(&wanted).all(|(&d, &w)| d.abs_diff(w) <= 4), "deciles {deciles:?}, SQuAD's {wanted:?}");
        assert!((mean - REAL_MEAN).abs() <= 3.0, "mean {mean:.1}");
        assert_eq!(lengths[lengths.len() - 1], opts.max_seq_length);
    }

    #[test]
    fn a_small_set_has_its_feature_count_and_the_cpu_engine_agrees_with_its_answers() {
        let dir = std::env::temp_dir().join(format!("mlperf-synthetic-squad-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let set = SyntheticSquad::in_dir(&dir);
        let spec = SyntheticSpec { features: 60, threads: 2, ..SyntheticSpec::standard() };
        let mut lines = Vec::new();
        ensure(&set, &spec, &mut |l| lines.push(l.to_string())).unwrap();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let ids = read_npy(&set.tensors()[0]).unwrap();
        assert_eq!(ids.header.shape, [60, 384]);
        let meta = crate::benchmarks::bert::squad::SquadFeatures::load(&set.features()).unwrap();
        assert!(meta.examples.len() < 60, "some paragraphs are split into several windows");
        assert!(meta.examples.iter().all(|e| e.answers.len() == 1 && !e.answers[0].is_empty()));
        // Reused while it matches; regenerated when a file changes.
        ensure(&set, &spec, &mut |l| lines.push(l.to_string())).unwrap();
        assert_eq!(lines.len(), 2);
        std::fs::write(set.vocab(), "[PAD]\n").unwrap();
        ensure(&set, &spec, &mut |l| lines.push(l.to_string())).unwrap();
        assert!(lines[2].contains("vocab.txt differs from the manifest"), "{lines:?}");

        // The CPU engine's answers, logged as a run logs them, score 100.
        let engine = CpuBertEngine::load(&set.model(), 384).unwrap();
        let log = dir.join("mlperf_log_accuracy.json");
        let mut entries = Vec::new();
        let rows = |name: &PathBuf| read_npy(name).unwrap().data().to_vec();
        let (i, s, m) = (rows(&set.tensors()[0]), rows(&set.tensors()[1]), rows(&set.tensors()[2]));
        for f in 0..60 {
            let r = f * 384 * 4..(f + 1) * 384 * 4;
            let sample: Vec<u8> = [&i[r.clone()], &s[r.clone()], &m[r]].concat();
            let (start, end) = engine.logits(&sample).unwrap();
            let hex: String = response_bytes(&start, &end).iter().map(|b| format!("{b:02X}")).collect();
            entries.push(format!("{{\"seq_id\": {f}, \"qsl_idx\": {f}, \"data\": \"{hex}\"}}"));
        }
        std::fs::write(&log, format!("[\n{}\n]\n", entries.join(",\n"))).unwrap();
        let score = score_squad(&log, &set.features(), &SquadScoreOptions::default()).unwrap();
        assert_eq!((score.exact_match, score.features_logged), (100.0, 60));
        assert!(score.f1 > 90.0, "{score:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
