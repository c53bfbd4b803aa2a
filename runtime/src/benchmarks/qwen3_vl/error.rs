//! The qwen3-vl family's error: catalogue files that are missing, unreadable or not laid out as
//! Hugging Face publishes them, images in no known format, and accuracy logs that cannot be scored.
//! Every kind is [`crate::Error::Data`] (exit 4), with the file, row or sample and what to do.

use crate::accuracy::AccuracyError;
use std::path::PathBuf;

/// Where the catalogue comes from, for errors about it.
pub(super) const REMEDY: &str = "download the Hugging Face dataset's parquet files (Shopify/product-catalogue at d5c517c5 for Offline and Server, \
     nvidia/Shopify-product-catalogue-8k at 2bc8c6c4 for Interactive) into this directory, e.g. `huggingface-cli download --repo-type dataset \
     --revision <rev> <repo> --local-dir <dir>`";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Qwen3VlError {
    #[error("{}: no parquet files of the product catalogue; {REMEDY}", dir.display())]
    NoFiles { dir: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// The `parquet` crate cannot read the file (or a row of it, where `at` says).
    #[error("{}: {}not a readable parquet file: {reason}", path.display(), at.as_ref().map(|at| format!("{at}: ")).unwrap_or_default())]
    Parquet { path: PathBuf, at: Option<String>, reason: String },
    #[error("{}: no column `{column}` (the file has {found}); is it the product catalogue? {REMEDY}", path.display())]
    MissingColumn { path: PathBuf, column: &'static str, found: String },
    /// A cell that is not what the catalogue holds there (`expected`: "a string").
    #[error("{}: row {row}, column `{column}`: {found} where the catalogue has {expected}", path.display())]
    Cell { path: PathBuf, row: usize, column: &'static str, expected: &'static str, found: String },
    #[error("{}: row {row}, column `product_image`: the image starts with bytes [{head}], which is no format this tool sends (JPEG, PNG, GIF, WEBP, BMP, TIFF)", path.display())]
    UnknownImage { path: PathBuf, row: usize, head: String },
    #[error("{}: {found} products, but the round's {set} has {expected}: are these the right files? {REMEDY}", dir.display())]
    Count { dir: PathBuf, found: usize, expected: usize, set: &'static str },
    /// A logged response that is not UTF-8 text (the reference's `bytes.decode("utf-8")` fails).
    #[error("sample {qsl_idx}: the response is not UTF-8 text ({source}); was the log written by a qwen3-vl run?")]
    NotUtf8 { qsl_idx: usize, source: std::string::FromUtf8Error },
    #[error(transparent)]
    Log(#[from] AccuracyError),
}

impl From<Qwen3VlError> for crate::Error {
    fn from(e: Qwen3VlError) -> crate::Error {
        crate::Error::Data(e.to_string())
    }
}
