//! A model's own tokenizer (a Hugging Face `tokenizer.json`, read by the `tokenizers` crate), both
//! ways and without special tokens: the output ids of serving APIs that stream text only
//! (Dynamo's OpenAI frontend re-tokenized, see the serving client), and the text of logged answers
//! for the LLM accuracy scorers (`batch_decode(..., skip_special_tokens=True)`). Decoding then
//! encoding is not always the identity (a merge the model did not take, normalisation), so
//! re-tokenized ids can differ from those the engine generated; the run's log says so.

use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

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
    pub fn load(path: &Path) -> Result<HfTokenizer, String> {
        if !path.is_file() {
            return Err(format!(
                "{}: no such tokenizer file; put the model's tokenizer.json there (tokenizer_path, relative to the scratch space's models/): text-only serving APIs and the LLM accuracy scorers read it",
                path.display()
            ));
        }
        let tokenizer = Tokenizer::from_file(path).map_err(|e| format!("{}: not a Hugging Face tokenizer.json: {e}", path.display()))?;
        Ok(HfTokenizer { tokenizer, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text of `ids` without special tokens (`batch_decode(..., skip_special_tokens=True)`).
    pub fn text(&self, ids: &[i32]) -> Result<String, String> {
        self.decode(ids, true)
    }

    /// `decode(ids, skip_special_tokens=...)`: gpt-oss's evaluation keeps the harmony markers.
    pub fn decode(&self, ids: &[i32], skip_special_tokens: bool) -> Result<String, String> {
        let ids = ids
            .iter()
            .map(|&id| u32::try_from(id).map_err(|_| format!("token id {id} is negative: is the accuracy log int32 token ids?")))
            .collect::<Result<Vec<u32>, String>>()?;
        self.tokenizer.decode(&ids, skip_special_tokens).map_err(|e| format!("{}: cannot decode: {e}", self.path.display()))
    }

    /// The ids of `text`.
    pub fn ids(&self, text: &str) -> Result<Vec<i32>, String> {
        let encoding = self.tokenizer.encode(text, false).map_err(|e| format!("{}: cannot encode the answer: {e}", self.path.display()))?;
        encoding.get_ids().iter().map(|&id| i32::try_from(id).map_err(|_| format!("{}: token id {id} does not fit LoadGen's int32", self.path.display()))).collect()
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
        assert!(t.text(&[-1]).unwrap_err().contains("token id -1 is negative"));

        let missing = HfTokenizer::load(&dir.join("nope.json")).unwrap_err();
        assert!(missing.contains("nope.json") && missing.contains("tokenizer_path"), "{missing}");
        std::fs::write(&path, "{\"model\": 3}").unwrap();
        let broken = HfTokenizer::load(&path).unwrap_err();
        assert!(broken.contains("tokenizer.json: not a Hugging Face tokenizer.json"), "{broken}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
