//! SQuAD v1.1 to BERT features, exactly as the MLPerf reference builds them
//! (`language/bert/create_squad_data.py`: `read_squad_examples` with `is_training=False`, then
//! `convert_examples_to_features` with `max_seq_length=384`, `doc_stride=128`,
//! `max_query_length=64` and `transformers.BertTokenizer`), and as NVIDIA stores them
//! (`code/bert/tensorrt/preprocess_data.py`): `input_ids.npy`, `segment_ids.npy`, `input_mask.npy`,
//! each `int32 [N, 384]` in feature order under `preprocessed_data/squad_tokenized/`. Feature order
//! is the QSL sample order: LoadGen's `qsl_idx` is the feature index.
//!
//! Scoring needs more than the tensors (`accuracy-squad.py` rebuilds the features to get them):
//! which example each feature belongs to, the WordPiece tokens and their original words, and the
//! answers. [`preprocess_squad`] writes that to [`FEATURES_FILE`] next to the tensors, compactly: the
//! per-feature maps `token_to_orig_map` and `token_is_max_context` are recomputed from the doc spans
//! ([`SquadFeatures::token_to_orig`], [`SquadFeatures::token_is_max_context`]), which is how the
//! reference computes them in the first place.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::BertError;
use super::wordpiece::BertTokenizer;
use crate::dataset::npy::{NpyDtype, write_npy};

/// The metadata file [`preprocess_squad`] writes next to the tensors.
pub const FEATURES_FILE: &str = "squad_features.json";
/// The tensor files, in NVIDIA's `tensor_path` order.
pub const TENSOR_FILES: [&str; 3] = ["input_ids.npy", "segment_ids.npy", "input_mask.npy"];
/// [`SquadFeatures::format`] of the files this code writes.
pub const FORMAT: &str = "mlperf squad features v1";
/// First `unique_id` of the reference (`convert_examples_to_features`); ids are consecutive.
pub const FIRST_UNIQUE_ID: u64 = 1_000_000_000;

/// The feature parameters (MLPerf's are the defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SquadOptions {
    pub max_seq_length: usize,
    pub doc_stride: usize,
    pub max_query_length: usize,
}

impl Default for SquadOptions {
    fn default() -> Self {
        SquadOptions { max_seq_length: 384, doc_stride: 128, max_query_length: 64 }
    }
}

/// One question (a `qas` entry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SquadExample {
    /// `qa["id"]`.
    pub id: String,
    pub question: String,
    /// Index into [`SquadDataset::paragraphs`].
    pub paragraph: usize,
    /// The ground-truth answer texts (`qa["answers"][*]["text"]`).
    pub answers: Vec<String>,
}

/// A SQuAD file read like `read_squad_examples`: paragraphs split into whitespace-separated
/// `doc_tokens`, one example per question, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SquadDataset {
    /// The file's `"version"` ("1.1" for SQuAD v1.1).
    pub version: Option<String>,
    /// Each paragraph's `doc_tokens`.
    pub paragraphs: Vec<Vec<String>>,
    pub examples: Vec<SquadExample>,
}

/// `read_squad_examples`' whitespace: space, tab, CR, LF and U+202F.
fn is_squad_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | '\u{202F}')
}

/// Splits a paragraph into `doc_tokens` the way `read_squad_examples` does.
pub fn doc_tokens(context: &str) -> Vec<String> {
    context.split(is_squad_whitespace).filter(|t| !t.is_empty()).map(str::to_string).collect()
}

#[derive(Deserialize)]
struct RawFile {
    version: Option<String>,
    data: Vec<RawArticle>,
}
#[derive(Deserialize)]
struct RawArticle {
    paragraphs: Vec<RawParagraph>,
}
#[derive(Deserialize)]
struct RawParagraph {
    context: String,
    qas: Vec<RawQa>,
}
#[derive(Deserialize)]
struct RawQa {
    id: String,
    question: String,
    #[serde(default)]
    answers: Vec<RawAnswer>,
}
#[derive(Deserialize)]
struct RawAnswer {
    text: String,
}

/// Where MLPerf's SQuAD v1.1 dev set is published, and its size and SHA-256 there (as dataset
/// loaders pin that URL's file): features made from another file are not MLPerf's.
pub const DEV_SET_URL: &str = "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json";
const DEV_SET_BYTES: u64 = 4_854_279;
const DEV_SET_SHA256: &str = "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9";

/// The file at `path` as the published dev set, its SHA-256 for the data check's report; another
/// file (a partial download, an edited copy) is refused, saying how to get the published one.
pub fn check_dev_set(path: &Path) -> Result<String, BertError> {
    let found = crate::fsutil::file_digests(path)?;
    if found.bytes == DEV_SET_BYTES && found.sha256 == DEV_SET_SHA256 {
        return Ok(format!("{} bytes, sha256 {} as published", found.bytes, found.sha256));
    }
    Err(BertError::UnpublishedDevSet { path: path.to_path_buf(), bytes: found.bytes, sha256: found.sha256, published: (DEV_SET_BYTES, DEV_SET_SHA256), url: DEV_SET_URL })
}

/// Reads a SQuAD JSON file (`dev-v1.1.json`).
pub fn read_squad(path: &Path) -> Result<SquadDataset, BertError> {
    let text = std::fs::read_to_string(path).map_err(|source| BertError::Read { path: path.to_path_buf(), source })?;
    parse_squad(&text).map_err(|e| BertError::InFile { path: path.to_path_buf(), source: Box::new(e) })
}

/// [`read_squad`] on text.
pub fn parse_squad(text: &str) -> Result<SquadDataset, BertError> {
    let raw: RawFile = serde_json::from_str(text).map_err(BertError::NotSquad)?;
    let mut ds = SquadDataset { version: raw.version, paragraphs: Vec::new(), examples: Vec::new() };
    for article in raw.data {
        for p in article.paragraphs {
            let paragraph = ds.paragraphs.len();
            ds.paragraphs.push(doc_tokens(&p.context));
            for qa in p.qas {
                ds.examples.push(SquadExample { id: qa.id, question: qa.question, paragraph, answers: qa.answers.into_iter().map(|a| a.text).collect() });
            }
        }
    }
    Ok(ds)
}

/// A paragraph's tokens: the original words and their WordPiece tokens (`all_doc_tokens`), with
/// each WordPiece token's word (`tok_to_orig_index`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParagraphTokens {
    pub doc_tokens: Vec<String>,
    pub sub_tokens: Vec<String>,
    pub tok_to_orig: Vec<u32>,
}

/// What scoring needs of an example.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExampleMeta {
    /// `qas_id`.
    pub id: String,
    pub paragraph: u32,
    /// WordPiece tokens of the (truncated) question: the document starts at `query_len + 2`.
    pub query_len: u32,
    pub answers: Vec<String>,
}

/// One feature (one QSL sample): a window of its example's paragraph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureMeta {
    pub example: u32,
    /// The doc span: WordPiece tokens `span_start..span_start + span_len` of the paragraph.
    pub span_start: u32,
    pub span_len: u32,
}

/// The feature metadata file: everything `accuracy-squad.py` takes from its rebuilt features.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SquadFeatures {
    pub format: String,
    pub options: SquadOptions,
    pub paragraphs: Vec<ParagraphTokens>,
    pub examples: Vec<ExampleMeta>,
    pub features: Vec<FeatureMeta>,
}

/// The three `[N, max_seq_length]` tensors, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureTensors {
    pub rows: usize,
    pub seq_len: usize,
    pub input_ids: Vec<i32>,
    pub segment_ids: Vec<i32>,
    pub input_mask: Vec<i32>,
}

impl FeatureTensors {
    /// Row `i` of (input_ids, segment_ids, input_mask).
    pub fn row(&self, i: usize) -> (&[i32], &[i32], &[i32]) {
        let r = i * self.seq_len..(i + 1) * self.seq_len;
        (&self.input_ids[r.clone()], &self.segment_ids[r.clone()], &self.input_mask[r])
    }
}

/// The doc spans of a document of `doc_len` WordPiece tokens: windows of at most `max_tokens`
/// tokens, each starting `min(length, doc_stride)` after the previous, until one reaches the end.
pub fn doc_spans(doc_len: usize, max_tokens: usize, doc_stride: usize) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    while start < doc_len {
        let length = (doc_len - start).min(max_tokens);
        spans.push((start, length));
        if start + length == doc_len {
            break;
        }
        start += length.min(doc_stride);
    }
    spans
}

/// `_check_is_max_context`: whether span `cur` gives token `position` the most context, scored
/// `min(left, right) + 0.01 * span length`, the first best span winning ties.
pub fn check_is_max_context(spans: &[(usize, usize)], cur: usize, position: usize) -> bool {
    let mut best: Option<(f64, usize)> = None;
    for (i, &(start, length)) in spans.iter().enumerate() {
        let end = start + length - 1;
        if position < start || position > end {
            continue;
        }
        let score = (position - start).min(end - position) as f64 + 0.01 * length as f64;
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, i));
        }
    }
    best.map(|(_, i)| i) == Some(cur)
}

/// `convert_examples_to_features(..., is_training=False)`: the metadata and the tensors.
pub fn convert_examples_to_features(ds: &SquadDataset, tokenizer: &BertTokenizer, opts: &SquadOptions) -> Result<(SquadFeatures, FeatureTensors), BertError> {
    let mut paragraphs = Vec::with_capacity(ds.paragraphs.len());
    for words in &ds.paragraphs {
        let mut p = ParagraphTokens { doc_tokens: words.clone(), sub_tokens: Vec::new(), tok_to_orig: Vec::new() };
        for (i, word) in words.iter().enumerate() {
            for sub in tokenizer.tokenize(word) {
                p.tok_to_orig.push(i as u32);
                p.sub_tokens.push(sub);
            }
        }
        paragraphs.push(p);
    }
    let l = opts.max_seq_length;
    let mut t = FeatureTensors { rows: 0, seq_len: l, input_ids: Vec::new(), segment_ids: Vec::new(), input_mask: Vec::new() };
    let mut examples = Vec::with_capacity(ds.examples.len());
    let mut features = Vec::new();
    let ids = |tokens: &[&str]| tokenizer.convert_tokens_to_ids(tokens);
    for (ei, ex) in ds.examples.iter().enumerate() {
        let mut query = tokenizer.tokenize(&ex.question);
        query.truncate(opts.max_query_length);
        let max_tokens = l as i64 - query.len() as i64 - 3;
        if max_tokens < 1 {
            return Err(BertError::NoRoom { max_seq_length: l, query: query.len(), example: ex.id.clone() });
        }
        let para = &paragraphs[ex.paragraph];
        let spans = doc_spans(para.sub_tokens.len(), max_tokens as usize, opts.doc_stride);
        for &(start, length) in &spans {
            let mut tokens: Vec<&str> = Vec::with_capacity(l);
            tokens.push("[CLS]");
            tokens.extend(query.iter().map(String::as_str));
            tokens.push("[SEP]");
            let doc_start = tokens.len();
            tokens.extend(para.sub_tokens[start..start + length].iter().map(String::as_str));
            tokens.push("[SEP]");
            let n = tokens.len();
            t.input_ids.extend(ids(&tokens).into_iter().map(|v| v as i32));
            t.input_ids.resize(t.input_ids.len() + l - n, 0);
            t.segment_ids.extend((0..l).map(|i| i32::from(i >= doc_start && i < n)));
            t.input_mask.extend((0..l).map(|i| i32::from(i < n)));
            t.rows += 1;
            features.push(FeatureMeta { example: ei as u32, span_start: start as u32, span_len: length as u32 });
        }
        examples.push(ExampleMeta { id: ex.id.clone(), paragraph: ex.paragraph as u32, query_len: query.len() as u32, answers: ex.answers.clone() });
    }
    let meta = SquadFeatures { format: FORMAT.to_string(), options: *opts, paragraphs, examples, features };
    Ok((meta, t))
}

impl SquadFeatures {
    /// Reads a metadata file written by [`preprocess_squad`].
    pub fn load(path: &Path) -> Result<SquadFeatures, BertError> {
        let in_file = |e| BertError::InFile { path: path.to_path_buf(), source: Box::new(e) };
        let file = std::fs::File::open(path).map_err(|source| BertError::Open { path: path.to_path_buf(), source })?;
        let meta: SquadFeatures = serde_json::from_reader(std::io::BufReader::new(file)).map_err(|e| in_file(BertError::NotFeatures(e)))?;
        if meta.format != FORMAT {
            return Err(in_file(BertError::FeatureFormat { found: meta.format, expected: FORMAT }));
        }
        meta.validate().map_err(in_file)?;
        Ok(meta)
    }

    /// Cross-references are in range and features of one example are consecutive (the order
    /// `convert_examples_to_features` produces, which the scorer's grouping relies on).
    pub fn validate(&self) -> Result<(), BertError> {
        for (i, p) in self.paragraphs.iter().enumerate() {
            if p.sub_tokens.len() != p.tok_to_orig.len() || p.tok_to_orig.iter().any(|&w| w as usize >= p.doc_tokens.len()) {
                return Err(BertError::Features(format!("paragraph {i}: inconsistent token maps")));
            }
        }
        for (i, e) in self.examples.iter().enumerate() {
            if e.paragraph as usize >= self.paragraphs.len() {
                return Err(BertError::Features(format!("example {i} ({}): paragraph {} out of range", e.id, e.paragraph)));
            }
        }
        let mut last = 0;
        for (i, f) in self.features.iter().enumerate() {
            let ex = self.examples.get(f.example as usize).ok_or_else(|| BertError::Features(format!("feature {i}: example {} out of range", f.example)))?;
            if f.example < last {
                return Err(BertError::Features(format!("feature {i}: features of example {} are not consecutive", f.example)));
            }
            last = f.example;
            let doc = self.paragraphs[ex.paragraph as usize].sub_tokens.len();
            if f.span_len == 0 || (f.span_start + f.span_len) as usize > doc {
                return Err(BertError::Features(format!("feature {i}: span {}+{} outside its {doc}-token document", f.span_start, f.span_len)));
            }
            if (ex.query_len + f.span_len + 3) as usize > self.options.max_seq_length {
                return Err(BertError::Features(format!("feature {i}: longer than max_seq_length {}", self.options.max_seq_length)));
            }
        }
        Ok(())
    }

    /// Writes the metadata as JSON.
    pub fn save(&self, path: &Path) -> Result<(), BertError> {
        let text = serde_json::to_vec(self).map_err(|source| BertError::Encode { path: path.to_path_buf(), source })?;
        Ok(crate::fsutil::write_atomic(path, &text)?)
    }

    /// The reference's `unique_id` of feature `i`.
    pub fn unique_id(&self, i: usize) -> u64 {
        FIRST_UNIQUE_ID + i as u64
    }

    /// The features of each example, in example order (`example_index_to_features`).
    pub fn features_by_example(&self) -> Vec<Range<usize>> {
        let mut out = vec![0..0; self.examples.len()];
        let mut i = 0;
        while i < self.features.len() {
            let e = self.features[i].example as usize;
            let start = i;
            while i < self.features.len() && self.features[i].example as usize == e {
                i += 1;
            }
            out[e] = start..i;
        }
        out
    }

    /// The paragraph tokens of feature `i`'s example.
    pub fn paragraph_of(&self, i: usize) -> &ParagraphTokens {
        &self.paragraphs[self.examples[self.features[i].example as usize].paragraph as usize]
    }

    /// Position of the first document token in feature `i` (`len(query_tokens) + 2`).
    pub fn doc_offset(&self, i: usize) -> usize {
        self.examples[self.features[i].example as usize].query_len as usize + 2
    }

    /// `len(feature.tokens)`: `[CLS]` query `[SEP]` span `[SEP]`.
    pub fn token_count(&self, i: usize) -> usize {
        self.doc_offset(i) + self.features[i].span_len as usize + 1
    }

    /// `feature.token_to_orig_map.get(position)`: the word of a document token (None for `[CLS]`,
    /// the question, the separators and padding).
    pub fn token_to_orig(&self, i: usize, position: usize) -> Option<usize> {
        let f = &self.features[i];
        let k = position.checked_sub(self.doc_offset(i))?;
        (k < f.span_len as usize).then(|| self.paragraph_of(i).tok_to_orig[f.span_start as usize + k] as usize)
    }

    /// `feature.tokens[position]` for a document position.
    pub fn doc_token(&self, i: usize, position: usize) -> Option<&str> {
        let f = &self.features[i];
        let k = position.checked_sub(self.doc_offset(i))?;
        (k < f.span_len as usize).then(|| self.paragraph_of(i).sub_tokens[f.span_start as usize + k].as_str())
    }

    /// `feature.token_is_max_context.get(position, False)`; `example_features` are the features
    /// of feature `i`'s example ([`SquadFeatures::features_by_example`]).
    pub fn token_is_max_context(&self, i: usize, example_features: &Range<usize>, position: usize) -> bool {
        let f = &self.features[i];
        let Some(k) = position.checked_sub(self.doc_offset(i)) else { return false };
        if k >= f.span_len as usize {
            return false;
        }
        let spans: Vec<(usize, usize)> = self.features[example_features.clone()].iter().map(|f| (f.span_start as usize, f.span_len as usize)).collect();
        check_is_max_context(&spans, i - example_features.start, f.span_start as usize + k)
    }
}

/// What [`preprocess_squad`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct SquadReport {
    pub examples: usize,
    pub features: usize,
    pub out_dir: PathBuf,
    pub elapsed: Duration,
}

impl SquadReport {
    pub fn render(&self) -> String {
        format!(
            "{} questions -> {} features in {} ({}, {}), {:.1} s",
            self.examples,
            self.features,
            self.out_dir.display(),
            TENSOR_FILES.join(", "),
            FEATURES_FILE,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Tokenizes `dev_json` with `vocab` and writes `input_ids.npy`, `segment_ids.npy`,
/// `input_mask.npy` (int32 `[N, max_seq_length]`) and [`FEATURES_FILE`] into `out_dir`.
pub fn preprocess_squad(dev_json: &Path, vocab: &Path, out_dir: &Path, opts: &SquadOptions) -> Result<SquadReport, BertError> {
    let start = Instant::now();
    let ds = read_squad(dev_json)?;
    let tokenizer = BertTokenizer::from_file(vocab)?;
    let (meta, t) = convert_examples_to_features(&ds, &tokenizer, opts)?;
    let shape = [t.rows, t.seq_len];
    let as_bytes = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    for (name, data) in TENSOR_FILES.iter().zip([&t.input_ids, &t.segment_ids, &t.input_mask]) {
        write_npy(&out_dir.join(name), NpyDtype::I32, &shape, &as_bytes(data))?;
    }
    meta.save(&out_dir.join(FEATURES_FILE))?;
    Ok(SquadReport { examples: meta.examples.len(), features: meta.features.len(), out_dir: out_dir.to_path_buf(), elapsed: start.elapsed() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::bert::wordpiece::Vocab;
    use crate::dataset::npy::read_npy;

    /// ids: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 the=4 cat=5 sat=6 on=7 mat=8 who=9 ?=10 .=11
    /// dog=12 ran=13 far=14 ##s=15 where=16 did=17 ,=18
    fn tokenizer() -> BertTokenizer {
        BertTokenizer::new(Vocab::from_tokens([
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "who", "?", ".", "dog", "ran", "far", "##s", "where", "did", ",",
        ]))
        .unwrap()
    }

    const SQUAD: &str = r#"{"version": "1.1", "data": [{"title": "T", "paragraphs": [
        {"context": "The cat sat on the mat.", "qas": [
            {"id": "q1", "question": "Who sat?", "answers": [{"text": "The cat", "answer_start": 0}, {"text": "cat", "answer_start": 4}]}]},
        {"context": "The dogs ran far,\u202Ffar zebra.", "qas": [
            {"id": "q2", "question": "Where did the dog run on the mat?", "answers": [{"text": "far", "answer_start": 14}]}]}
    ]}]}"#;

    #[test]
    fn reads_examples_like_read_squad_examples() {
        let ds = parse_squad(SQUAD).unwrap();
        assert_eq!(ds.version.as_deref(), Some("1.1"));
        assert_eq!(ds.paragraphs[0], ["The", "cat", "sat", "on", "the", "mat."]);
        // U+202F separates words too.
        assert_eq!(ds.paragraphs[1], ["The", "dogs", "ran", "far,", "far", "zebra."]);
        assert_eq!(ds.examples.len(), 2);
        assert_eq!((ds.examples[1].id.as_str(), ds.examples[1].paragraph), ("q2", 1));
        assert_eq!(ds.examples[0].answers, ["The cat", "cat"]);
        assert!(parse_squad("{\"data\": 3}").unwrap_err().to_string().contains("not a SQuAD file"));
    }

    #[test]
    fn doc_spans_slide_by_the_stride() {
        assert_eq!(doc_spans(5, 10, 2), vec![(0, 5)]);
        assert_eq!(doc_spans(10, 4, 3), vec![(0, 4), (3, 4), (6, 4)]);
        assert_eq!(doc_spans(7, 4, 5), vec![(0, 4), (4, 3)]); // the step is min(length, stride)
        assert_eq!(doc_spans(0, 4, 2), vec![]);
        // Token 4 lies in span 1 only (left 1, right 2).
        let spans = doc_spans(10, 4, 3);
        assert!(check_is_max_context(&spans, 1, 4));
        // Token 3: span 0 (left 3, right 0) -> 0.04; span 1 (left 0, right 3) -> 0.04: the first wins.
        assert!(check_is_max_context(&spans, 0, 3) && !check_is_max_context(&spans, 1, 3));
    }

    #[test]
    fn features_match_hand_computed_ids() {
        let ds = parse_squad(SQUAD).unwrap();
        let tok = tokenizer();
        let opts = SquadOptions { max_seq_length: 12, doc_stride: 2, max_query_length: 4 };
        let (meta, t) = convert_examples_to_features(&ds, &tok, &opts).unwrap();

        // Paragraph 0 WordPiece: the cat sat on the mat . (the word "mat." gives "mat" ".").
        assert_eq!(meta.paragraphs[0].sub_tokens, ["the", "cat", "sat", "on", "the", "mat", "."]);
        assert_eq!(meta.paragraphs[0].tok_to_orig, [0, 1, 2, 3, 4, 5, 5]);
        // Paragraph 1: the dog ##s ran far , far [UNK] . ("zebra" is not in the vocab).
        assert_eq!(meta.paragraphs[1].sub_tokens, ["the", "dog", "##s", "ran", "far", ",", "far", "[UNK]", "."]);

        // q1 "Who sat?" -> who sat ? (3 tokens); room for 12 - 3 - 3 = 6 doc tokens, 7 needed:
        // spans (0, 6) and (2, 5) (the start advances min(6, stride 2) = 2).
        // q2 "Where did the dog run on the mat?" -> where did the dog [UNK] on the mat ? truncated
        // to 4: where did the dog; room for 5 doc tokens of 9: spans (0,5) (2,5) (4,5).
        let spans: Vec<(u32, u32, u32)> = meta.features.iter().map(|f| (f.example, f.span_start, f.span_len)).collect();
        assert_eq!(spans, vec![(0, 0, 6), (0, 2, 5), (1, 0, 5), (1, 2, 5), (1, 4, 5)]);
        assert_eq!(t.rows, 5);
        assert_eq!(meta.examples[1].query_len, 4);

        // Feature 0: [CLS] who sat ? [SEP] the cat sat on the mat [SEP] = 2 9 6 10 3 4 5 6 7 4 8 3.
        let (ids, seg, mask) = t.row(0);
        assert_eq!(ids, [2, 9, 6, 10, 3, 4, 5, 6, 7, 4, 8, 3]);
        assert_eq!(seg, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(mask, [1; 12]);
        // Feature 1: [CLS] who sat ? [SEP] sat on the mat . [SEP] [PAD] (padded with 0s).
        let (ids, seg, mask) = t.row(1);
        assert_eq!(ids, [2, 9, 6, 10, 3, 6, 7, 4, 8, 11, 3, 0]);
        assert_eq!(seg, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0]);
        assert_eq!(mask, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
        // Feature 4: [CLS] where did the dog [SEP] far , far [UNK] . [SEP].
        let (ids, seg, _) = t.row(4);
        assert_eq!(ids, [2, 16, 17, 4, 12, 3, 14, 18, 14, 1, 11, 3]);
        assert_eq!(seg, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]);

        // token_to_orig_map and token_is_max_context, recomputed from the spans.
        let by_ex = meta.features_by_example();
        assert_eq!(by_ex, vec![0..2, 2..5]);
        assert_eq!(meta.token_count(0), 12);
        assert_eq!(meta.token_to_orig(0, 4), None); // [SEP]
        assert_eq!(meta.token_to_orig(0, 5), Some(0)); // "the"
        assert_eq!(meta.token_to_orig(1, 9), Some(5)); // "." of "mat."
        assert_eq!(meta.token_to_orig(1, 10), None); // final [SEP]
        assert_eq!(meta.doc_token(1, 5), Some("sat"));
        // Doc token 2 ("sat"): span 0 left 2 right 3 -> 2.06; span 1 left 0 right 4 -> 0.05.
        assert!(meta.token_is_max_context(0, &by_ex[0], 7));
        assert!(!meta.token_is_max_context(1, &by_ex[0], 5));
        // Doc token 5 ("mat"): span 0 left 5 right 0 -> 0.06; span 1 left 3 right 1 -> 1.05.
        assert!(!meta.token_is_max_context(0, &by_ex[0], 10));
        assert!(meta.token_is_max_context(1, &by_ex[0], 8));
        assert!(!meta.token_is_max_context(0, &by_ex[0], 1)); // the question
        meta.validate().unwrap();
    }

    #[test]
    fn preprocess_writes_nvidia_files_and_metadata() {
        let dir = std::env::temp_dir().join(format!("mlperf-squad-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("dev-v1.1.json"), SQUAD).unwrap();
        let vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "who", "?", ".", "dog", "ran", "far", "##s", "where", "did", ","];
        std::fs::write(dir.join("vocab.txt"), vocab.join("\n") + "\n").unwrap();
        let out = dir.join("squad_tokenized");
        let r = preprocess_squad(&dir.join("dev-v1.1.json"), &dir.join("vocab.txt"), &out, &SquadOptions::default()).unwrap();
        assert_eq!((r.examples, r.features), (2, 2));
        assert!(r.render().contains("2 questions -> 2 features"));
        let ids = read_npy(&out.join("input_ids.npy")).unwrap();
        assert_eq!((ids.header.dtype, ids.header.shape.clone()), (NpyDtype::I32, vec![2, 384]));
        let first: Vec<i32> = ids.data()[..12 * 4].chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(first, [2, 9, 6, 10, 3, 4, 5, 6, 7, 4, 8, 11]);
        for name in ["segment_ids.npy", "input_mask.npy"] {
            assert_eq!(read_npy(&out.join(name)).unwrap().header.shape, vec![2, 384]);
        }
        let meta = SquadFeatures::load(&out.join(FEATURES_FILE)).unwrap();
        assert_eq!(meta.examples[0].answers, ["The cat", "cat"]);
        assert_eq!(meta.unique_id(1), 1_000_000_001);
        std::fs::write(dir.join("bad.json"), "{\"format\": \"other\"}").unwrap();
        assert!(SquadFeatures::load(&dir.join("bad.json")).unwrap_err().to_string().contains("bad.json"));
    }
}
