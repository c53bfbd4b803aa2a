//! Output ids of dialects that stream text only (Dynamo's OpenAI frontend): the answer's text
//! encoded again with the model's own tokenizer (a Hugging Face `tokenizer.json`, read by the
//! `tokenizers` crate), without special tokens. Decoding then encoding is not always the
//! identity (a merge the model did not take, normalisation), so the ids can differ from those the
//! engine generated; the run's log says the ids were re-tokenized and with which file.

use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

/// A model's tokenizer, loaded once per run.
pub struct Retokenizer {
    tokenizer: Tokenizer,
    path: PathBuf,
}

impl std::fmt::Debug for Retokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Retokenizer({})", self.path.display())
    }
}

impl Retokenizer {
    /// Loads `path`; the error names the file and what is wrong with it.
    pub fn load(path: &Path) -> Result<Retokenizer, String> {
        if !path.is_file() {
            return Err(format!(
                "{}: no such tokenizer file; text-only serving APIs (completions-text) need the model's tokenizer.json there (tokenizer_path, relative to the scratch space's models/)",
                path.display()
            ));
        }
        let tokenizer = Tokenizer::from_file(path).map_err(|e| format!("{}: not a Hugging Face tokenizer.json: {e}", path.display()))?;
        Ok(Retokenizer { tokenizer, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text of `ids` without special tokens (`batch_decode(..., skip_special_tokens=True)`).
    pub fn text(&self, ids: &[i32]) -> Result<String, String> {
        let ids = ids
            .iter()
            .map(|&id| u32::try_from(id).map_err(|_| format!("token id {id} is negative: is the accuracy log int32 token ids?")))
            .collect::<Result<Vec<u32>, String>>()?;
        self.tokenizer.decode(&ids, true).map_err(|e| format!("{}: cannot decode: {e}", self.path.display()))
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
    use crate::engines::serving::stand_in::StandInOptions;

    #[test]
    fn text_becomes_the_tokenizers_ids_and_bad_files_name_themselves() {
        let dir = std::env::temp_dir().join(format!("mlperf-retokenize-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer.json");
        let stand_in = StandInOptions { vocab: 50, ..StandInOptions::default() };
        std::fs::write(&path, stand_in.tokenizer_json()).unwrap();
        let t = Retokenizer::load(&path).unwrap();
        let answer = stand_in.answer(&[1, 2, 3], 100);
        let text: String = answer.iter().map(|id| format!(" t{id}")).collect();
        assert_eq!(t.ids(&text).unwrap(), answer, "the stand-in's text re-tokenizes to the ids it generated");
        assert_eq!(t.ids("t7 mars").unwrap(), [7, 0], "an unknown word is the unknown token");

        let missing = Retokenizer::load(&dir.join("nope.json")).unwrap_err();
        assert!(missing.contains("nope.json") && missing.contains("tokenizer_path"), "{missing}");
        std::fs::write(&path, "{\"model\": 3}").unwrap();
        let broken = Retokenizer::load(&path).unwrap_err();
        assert!(broken.contains("tokenizer.json: not a Hugging Face tokenizer.json"), "{broken}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
