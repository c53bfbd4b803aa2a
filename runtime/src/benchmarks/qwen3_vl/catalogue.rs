//! The Shopify product catalogue as Hugging Face publishes it: parquet files (`data/train-*.parquet`,
//! `data/test-*.parquet`) whose rows are products, read as `load_dataset(..., split="train+test")`
//! concatenates them (train files first, each split's files in name order).
//!
//! Columns (the reference notebook's `dataset.features`): `product_title`, `product_description`
//! (strings), `product_image` (the `datasets` Image struct `{bytes, path}`),
//! `potential_product_categories` (a list of strings), `ground_truth_category`,
//! `ground_truth_brand` (strings) and `ground_truth_is_secondhand` (a bool).
//!
//! Rows are read one at a time with only the columns asked for (the `parquet` crate's record
//! reader with a projection), and each image's bytes are kept once, as the file stores them: 48,289
//! products hold about 6.4 GB of images, which must not exist twice.

use super::error::Qwen3VlError;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use parquet::schema::types::Type;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const TITLE: &str = "product_title";
const DESCRIPTION: &str = "product_description";
const IMAGE: &str = "product_image";
const CATEGORIES: &str = "potential_product_categories";
const TRUE_CATEGORY: &str = "ground_truth_category";
const TRUE_BRAND: &str = "ground_truth_brand";
const TRUE_SECONDHAND: &str = "ground_truth_is_secondhand";

/// What the model should answer for a product.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truth {
    pub category: String,
    pub brand: String,
    pub is_secondhand: bool,
}

/// A product's image: the stored file's bytes and their format.
#[derive(Debug, Clone)]
pub struct ProductImage {
    pub format: ImageFormat,
    pub bytes: Arc<[u8]>,
}

/// One row of the catalogue.
#[derive(Debug, Clone)]
pub struct Product {
    pub title: String,
    pub description: String,
    pub categories: Vec<String>,
    pub image: ProductImage,
    pub truth: Truth,
}

/// The parquet files of one published set, in the order `load_dataset` concatenates them.
#[derive(Debug, Clone)]
pub struct Catalogue {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
}

impl Catalogue {
    /// The parquet files under `dir` (or its `data/`, as the Hugging Face repository has them).
    pub fn find(dir: &Path) -> Result<Catalogue, Qwen3VlError> {
        let mut files = Vec::new();
        for folder in [dir.to_path_buf(), dir.join("data")] {
            let Ok(entries) = std::fs::read_dir(&folder) else { continue };
            for entry in entries {
                let path = entry.map_err(|source| Qwen3VlError::Read { path: folder.clone(), source })?.path();
                if path.extension().is_some_and(|e| e == "parquet") {
                    files.push(path);
                }
            }
        }
        if files.is_empty() {
            return Err(Qwen3VlError::NoFiles { dir: dir.to_path_buf() });
        }
        // `split="train+test"`: the train split's files, then the test split's.
        let split = |p: &PathBuf| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            (
                if name.starts_with("train") {
                    0
                } else if name.starts_with("test") {
                    1
                } else {
                    2
                },
                name,
            )
        };
        files.sort_by_key(split);
        Ok(Catalogue { dir: dir.to_path_buf(), files })
    }

    /// Every product with its image.
    pub fn products(&self) -> Result<Vec<Product>, Qwen3VlError> {
        let columns = [TITLE, DESCRIPTION, CATEGORIES, TRUE_CATEGORY, TRUE_BRAND, TRUE_SECONDHAND, IMAGE];
        let mut products = Vec::new();
        for file in &self.files {
            for_each_row(file, &columns, &mut |row, cells| {
                let cell = Cells { path: file, row };
                let mut cells = cells.into_iter();
                let mut next = || cells.next().unwrap_or(Field::Null);
                products.push(Product {
                    title: cell.string(TITLE, next())?,
                    description: cell.string(DESCRIPTION, next())?,
                    categories: cell.strings(CATEGORIES, next())?,
                    truth: Truth { category: cell.string(TRUE_CATEGORY, next())?, brand: cell.string(TRUE_BRAND, next())?, is_secondhand: cell.boolean(TRUE_SECONDHAND, next())? },
                    image: cell.image(next())?,
                });
                Ok(())
            })?;
        }
        Ok(products)
    }

    /// Every product's ground truth (no images are read).
    pub fn truths(&self) -> Result<Vec<Truth>, Qwen3VlError> {
        let columns = [TRUE_CATEGORY, TRUE_BRAND, TRUE_SECONDHAND];
        let mut truths = Vec::new();
        for file in &self.files {
            for_each_row(file, &columns, &mut |row, cells| {
                let cell = Cells { path: file, row };
                let mut cells = cells.into_iter();
                let mut next = || cells.next().unwrap_or(Field::Null);
                truths.push(Truth {
                    category: cell.string(TRUE_CATEGORY, next())?,
                    brand: cell.string(TRUE_BRAND, next())?,
                    is_secondhand: cell.boolean(TRUE_SECONDHAND, next())?,
                });
                Ok(())
            })?;
        }
        Ok(truths)
    }
}

/// Calls `f` with each row's cells of `columns` (in that order), one row at a time.
fn for_each_row(path: &Path, columns: &[&'static str], f: &mut dyn FnMut(usize, Vec<Field>) -> Result<(), Qwen3VlError>) -> Result<(), Qwen3VlError> {
    let parquet = |at: Option<String>, reason: String| Qwen3VlError::Parquet { path: path.to_path_buf(), at, reason };
    let file = std::fs::File::open(path).map_err(|source| Qwen3VlError::Read { path: path.to_path_buf(), source })?;
    let reader = SerializedFileReader::new(file).map_err(|e| parquet(None, e.to_string()))?;
    let root = reader.metadata().file_metadata().schema_descr().root_schema();
    let fields = root.get_fields();
    let mut projected = Vec::with_capacity(columns.len());
    for &column in columns {
        let field = fields.iter().find(|f| f.name() == column).ok_or_else(|| Qwen3VlError::MissingColumn {
            path: path.to_path_buf(),
            column,
            found: fields.iter().map(|f| format!("`{}`", f.name())).collect::<Vec<_>>().join(", "),
        })?;
        projected.push(field.clone());
    }
    let projection = Type::group_type_builder(root.name()).with_fields(projected).build().map_err(|e| parquet(None, e.to_string()))?;
    let rows = reader.get_row_iter(Some(projection)).map_err(|e| parquet(None, e.to_string()))?;
    for (index, row) in rows.enumerate() {
        let row = row.map_err(|e| parquet(Some(format!("row {index}")), e.to_string()))?;
        f(index, row.into_columns().into_iter().map(|(_, cell)| cell).collect())?;
    }
    Ok(())
}

/// Reads the cells of one row, with errors naming the file, row and column.
struct Cells<'a> {
    path: &'a Path,
    row: usize,
}

impl Cells<'_> {
    fn wrong(&self, column: &'static str, expected: &'static str, found: &Field) -> Qwen3VlError {
        let found = match found {
            Field::Null => "null".to_string(),
            other => format!("{other:?}").chars().take(60).collect(),
        };
        Qwen3VlError::Cell { path: self.path.to_path_buf(), row: self.row, column, expected, found }
    }

    fn string(&self, column: &'static str, cell: Field) -> Result<String, Qwen3VlError> {
        match cell {
            Field::Str(s) => Ok(s),
            other => Err(self.wrong(column, "a string", &other)),
        }
    }

    fn strings(&self, column: &'static str, cell: Field) -> Result<Vec<String>, Qwen3VlError> {
        match cell {
            Field::ListInternal(list) => list
                .elements()
                .iter()
                .map(|e| match e {
                    Field::Str(s) => Ok(s.clone()),
                    other => Err(self.wrong(column, "a list of strings", other)),
                })
                .collect(),
            other => Err(self.wrong(column, "a list of strings", &other)),
        }
    }

    fn boolean(&self, column: &'static str, cell: Field) -> Result<bool, Qwen3VlError> {
        match cell {
            Field::Bool(b) => Ok(b),
            other => Err(self.wrong(column, "a bool", &other)),
        }
    }

    /// The `datasets` Image struct's `bytes`.
    fn image(&self, cell: Field) -> Result<ProductImage, Qwen3VlError> {
        const EXPECTED: &str = "an image struct {bytes, path} with the file's bytes";
        let Field::Group(group) = cell else { return Err(self.wrong(IMAGE, EXPECTED, &cell)) };
        let bytes = group.into_columns().into_iter().find(|(name, _)| name == "bytes").map(|(_, cell)| cell);
        match bytes {
            Some(Field::Bytes(bytes)) => {
                let bytes: Arc<[u8]> = Arc::from(bytes.data());
                Ok(ProductImage { format: ImageFormat::of_image(&bytes, self.path, self.row)?, bytes })
            }
            Some(other) => Err(self.wrong(IMAGE, EXPECTED, &other)),
            None => Err(self.wrong(IMAGE, EXPECTED, &Field::Null)),
        }
    }
}

/// An image file's format as PIL names it (`Image.format`), from its leading bytes; the reference
/// puts this name in the `data:image/<FORMAT>;base64,` URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Jpeg,
    Png,
    Gif,
    Webp,
    Bmp,
    Tiff,
}

impl ImageFormat {
    /// The format of `bytes`, or None when they start as no format PIL would name here.
    pub fn detect(bytes: &[u8]) -> Option<ImageFormat> {
        Some(match bytes {
            [0xFF, 0xD8, 0xFF, ..] => ImageFormat::Jpeg,
            [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, ..] => ImageFormat::Png,
            [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => ImageFormat::Gif,
            [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => ImageFormat::Webp,
            [b'B', b'M', ..] => ImageFormat::Bmp,
            [b'I', b'I', 0x2A, 0x00, ..] | [b'M', b'M', 0x00, 0x2A, ..] => ImageFormat::Tiff,
            _ => return None,
        })
    }

    /// PIL's name (`"JPEG"`).
    pub fn pil_name(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "JPEG",
            ImageFormat::Png => "PNG",
            ImageFormat::Gif => "GIF",
            ImageFormat::Webp => "WEBP",
            ImageFormat::Bmp => "BMP",
            ImageFormat::Tiff => "TIFF",
        }
    }

    /// The format of a product's image, or an error naming where it is.
    pub fn of_image(bytes: &[u8], file: &std::path::Path, row: usize) -> Result<ImageFormat, Qwen3VlError> {
        ImageFormat::detect(bytes).ok_or_else(|| Qwen3VlError::UnknownImage {
            path: file.to_path_buf(),
            row,
            head: bytes.iter().take(8).map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" "),
        })
    }
}
