//! A model's own tokenizer (a Hugging Face `tokenizer.json`, read by the `tokenizers` crate), both
//! ways and without special tokens: the output ids of serving APIs that stream text only
//! (Dynamo's OpenAI frontend re-tokenized, see the serving client), and the text of logged answers
//! for the LLM accuracy scorers (`batch_decode(..., skip_special_tokens=True)`). Decoding then
//! encoding is not always the identity (a merge the model did not take, normalisation), so
//! re-tokenized ids can differ from those the engine generated; the run's log says so.

use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

/// A tokenizer file that is missing or not a tokenizer, or ids or text it cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizerError {
    #[error("{}: no such tokenizer file; put the model's tokenizer.json there (tokenizer_path, relative to the scratch space's models/): text-only serving APIs and the LLM accuracy scorers read it", path.display())]
    Missing { path: PathBuf },
    #[error("{}: not a Hugging Face tokenizer.json: {reason}", path.display())]
    NotATokenizer { path: PathBuf, reason: String },
    #[error("token id {id} is negative: is the accuracy log int32 token ids?")]
    NegativeId { id: i32 },
    #[error("{}: cannot decode: {reason}", path.display())]
    Decode { path: PathBuf, reason: String },
    #[error("{}: cannot encode the answer: {reason}", path.display())]
    Encode { path: PathBuf, reason: String },
    #[error("{}: token id {id} does not fit LoadGen's int32", path.display())]
    IdTooLarge { path: PathBuf, id: u32 },
}

impl From<TokenizerError> for crate::Error {
    /// The model's tokenizer file, or the ids it is given, are the run's data.
    fn from(e: TokenizerError) -> crate::Error {
        crate::Error::Data(e.to_string())
    }
}

/// A model's tokenizer, loaded once per run.
pub struct HfTokenizer {
    tokenizer: Tokenizer,
    path: PathBuf,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HfTokenizer({})", self.path.display())
    }
}

impl HfTokenizer {
    /// Loads `path`; the error names the file and what is wrong with it.
    pub fn load(path: &Path) -> Result<HfTokenizer, TokenizerError> {
        if !path.is_file() {
            return Err(TokenizerError::Missing { path: path.to_path_buf() });
        }
        let tokenizer = Tokenizer::from_file(path).map_err(|e| TokenizerError::NotATokenizer { path: path.to_path_buf(), reason: e.to_string() })?;
        Ok(HfTokenizer { tokenizer, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text of `ids` without special tokens (`batch_decode(..., skip_special_tokens=True)`).
    pub fn text(&self, ids: &[i32]) -> Result<String, TokenizerError> {
        self.decode(ids, true)
    }

    /// `decode(ids, skip_special_tokens=...)`: gpt-oss's evaluation keeps the harmony markers.
    pub fn decode(&self, ids: &[i32], skip_special_tokens: bool) -> Result<String, TokenizerError> {
        let ids = ids.iter().map(|&id| u32::try_from(id).map_err(|_| TokenizerError::NegativeId { id })).collect::<Result<Vec<u32>, _>>()?;
        self.tokenizer.decode(&ids, skip_special_tokens).map_err(|e| TokenizerError::Decode { path: self.path.clone(), reason: e.to_string() })
    }

    /// The ids of `text`.
    pub fn ids(&self, text: &str) -> Result<Vec<i32>, TokenizerError> {
        let encoding = self.tokenizer.encode(text, false).map_err(|e| TokenizerError::Encode { path: self.path.clone(), reason: e.to_string() })?;
        encoding.get_ids().iter().map(|&id| i32::try_from(id).map_err(|_| TokenizerError::IdTooLarge { path: self.path.clone(), id })).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_text_go_both_ways_and_bad_files_name_themselves() {
        let dir = std::env::temp_dir().join(format!("mlperf-hf-tokenizer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer.json");
        let vocab = r#"{"<unk>": 0, "hello": 1, "world": 2}"#;
        let json = format!(
            r#"{{"version": "1.0", "added_tokens": [], "pre_tokenizer": {{"type": "Whitespace"}}, "model": {{"type": "WordLevel", "vocab": {vocab}, "unk_token": "<unk>"}}}}"#
        );
        std::fs::write(&path, json).unwrap();
        let t = HfTokenizer::load(&path).unwrap();
        assert_eq!(t.ids(" hello world mars").unwrap(), [1, 2, 0], "an unknown word is the unknown token");
        assert_eq!(t.text(&[1, 2]).unwrap(), "hello world");
        assert!(t.text(&[-1]).unwrap_err().to_string().contains("token id -1 is negative"));

        let missing = HfTokenizer::load(&dir.join("nope.json")).unwrap_err().to_string();
        assert!(missing.contains("nope.json") && missing.contains("tokenizer_path"), "{missing}");
        std::fs::write(&path, "{\"model\": 3}").unwrap();
        let broken = HfTokenizer::load(&path).unwrap_err().to_string();
        assert!(broken.contains("tokenizer.json: not a Hugging Face tokenizer.json"), "{broken}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
