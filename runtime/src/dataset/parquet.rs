//! Parquet files as `pandas.read_parquet` gives them (gpt-oss-120b's datasets are published as
//! parquet): every row group's rows, each column's cells as [`Value`]s like those of a pickled
//! DataFrame (token lists as lists of integers, strings, nulls as `None`), so one reader of
//! columns serves both formats. Read with the `parquet` crate's record API (no Arrow).

use super::DataError;
use super::pandas::DataFrame;
use super::pickle::Value;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

/// Parquet files start (and end) with these four bytes.
pub const MAGIC: &[u8; 4] = b"PAR1";

/// Reads every row of the parquet file `path`.
pub fn read_parquet(path: &Path) -> Result<DataFrame, DataError> {
    let malformed = |what: &'static str, reason: String| DataError::Malformed { path: path.to_path_buf(), what, reason };
    let file = std::fs::File::open(path).map_err(|source| DataError::Read { path: path.to_path_buf(), source })?;
    let reader = SerializedFileReader::new(file).map_err(|e| malformed("not a readable parquet file", e.to_string()))?;
    let names: Vec<String> = reader.metadata().file_metadata().schema_descr().root_schema().get_fields().iter().map(|f| f.name().to_string()).collect();
    let mut columns: Vec<Vec<Value>> = vec![Vec::new(); names.len()];
    let rows = reader.get_row_iter(None).map_err(|e| DataError::Parquet { path: path.to_path_buf(), at: None, reason: e.to_string() })?;
    for (index, row) in rows.enumerate() {
        let row = row.map_err(|e| DataError::Parquet { path: path.to_path_buf(), at: Some(format!("row {index}")), reason: e.to_string() })?;
        for (column, (name, field)) in row.get_column_iter().enumerate() {
            let cell = value(field).map_err(|e| DataError::Parquet { path: path.to_path_buf(), at: Some(format!("row {index}, column {name:?}")), reason: e.to_string() })?;
            columns[column].push(cell);
        }
    }
    Ok(DataFrame::new(names.into_iter().zip(columns).collect()))
}

/// A parquet cell the reader has no [`Value`] for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CellError {
    #[error("integer {0} does not fit int64")]
    TooLarge(u64),
    /// Any other kind of cell (a map, a struct, a date), as the `parquet` crate shows it.
    #[error("a {0} cell; this reader knows numbers, strings and lists of them")]
    Unsupported(String),
}

/// A cell as the pickle reader would hold it.
fn value(field: &Field) -> Result<Value, CellError> {
    Ok(match field {
        Field::Null => Value::None,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(v) => Value::Int(i64::from(*v)),
        Field::Short(v) => Value::Int(i64::from(*v)),
        Field::Int(v) => Value::Int(i64::from(*v)),
        Field::Long(v) => Value::Int(*v),
        Field::UByte(v) => Value::Int(i64::from(*v)),
        Field::UShort(v) => Value::Int(i64::from(*v)),
        Field::UInt(v) => Value::Int(i64::from(*v)),
        Field::ULong(v) => Value::Int(i64::try_from(*v).map_err(|_| CellError::TooLarge(*v))?),
        Field::Float(v) => Value::Float(f64::from(*v)),
        Field::Double(v) => Value::Float(*v),
        Field::Str(s) => Value::Str(s.as_str().into()),
        Field::Bytes(b) => Value::Bytes(b.data().into()),
        Field::ListInternal(list) => Value::List(Rc::new(RefCell::new(list.elements().iter().map(value).collect::<Result<_, _>>()?))),
        other => return Err(CellError::Unsupported(format!("{other:?}"))),
    })
}
