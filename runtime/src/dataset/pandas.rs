//! pandas DataFrames from their pickles (`DataFrame.to_pickle`, gzip-compressed or not), as the
//! MLCommons LLM datasets are published: a DataFrame's `_mgr` BlockManager holds 2-D numpy blocks
//! (object dtype for strings and token lists, numeric dtypes from raw bytes) placed at column
//! positions, and the column labels in its first axis. The layouts of pandas 1.x to 3.x are read
//! (numpy 1 `numpy.core` and numpy 2 `numpy._core` names, pandas 3's strings with pyarrow and
//! without); the values come out as [`Value`]s, one per cell.

use super::DataError;
use super::numpy_pickle::{ArrayError, PickledArray};
use super::pickle::{self, Value};
use std::io::Read;
use std::path::Path;

/// What does not fit pandas' pickled layout, the first thing found; [`read_pickle`] puts it in a
/// [`DataError::Malformed`] with the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A part of the layout that is absent or of another form (the text says which).
    #[error("{0}")]
    Layout(&'static str),
    /// An object where the layout has a place for another kind: `what` is the place ("a block").
    #[error("{what} that is a {kind}")]
    Is { what: &'static str, kind: String },
    /// A cell or element of another kind: `place` is where ("among integers").
    #[error("a {kind} {place}")]
    Among { kind: String, place: &'static str },
    #[error("the pickle holds a {0}, not a DataFrame")]
    NotADataFrame(String),
    #[error("_mgr is a {0}, not a BlockManager (an ArrayManager or a Series is not read)")]
    NotABlockManager(String),
    #[error("blocks of {first} and {other} rows")]
    RowCounts { first: usize, other: usize },
    #[error("a block placed at column {position} of {columns}")]
    PlacedPast { position: usize, columns: usize },
    #[error("a block of {count} columns placed at {positions} positions")]
    Positions { count: usize, positions: usize },
    #[error("column {0:?} is in no block")]
    InNoBlock(String),
    #[error("a RangeIndex without {0}")]
    RangeIndexWithout(&'static str),
    /// An array of a shape its place does not take (`what`: "a block", "an index").
    #[error("{what} of shape {shape:?}")]
    Shape { what: &'static str, shape: Vec<usize> },
    #[error("a {0}, not a list of integers")]
    NotIntegers(String),
    #[error("a numpy array of shape {0:?}, not a list of integers")]
    IntegersShape(Vec<usize>),
    #[error("a pandas {0} (an NDArrayBacked array other than strings) where a column of strings or a numpy array belongs")]
    NotStrings(String),
    #[error("an Arrow column of type {0:?}, not strings")]
    ArrowType(String),
    #[error("an Arrow string that is not UTF-8: {0}")]
    ArrowUtf8(#[from] std::str::Utf8Error),
    #[error("no column {name:?} (the columns are {columns})")]
    NoColumn { name: String, columns: String },
    #[error(transparent)]
    Array(#[from] ArrayError),
}

/// `.ok_or("the BlockManager has no axes")?`: a missing part of the layout.
impl From<&'static str> for FrameError {
    fn from(what: &'static str) -> FrameError {
        FrameError::Layout(what)
    }
}

/// A DataFrame's columns in order, each with one value per row.
#[derive(Debug)]
pub struct DataFrame {
    pub rows: usize,
    columns: Vec<(String, Vec<Value>)>,
}

impl DataFrame {
    /// A frame of `columns`, each with the same number of rows.
    pub fn new(columns: Vec<(String, Vec<Value>)>) -> DataFrame {
        DataFrame { rows: columns.first().map_or(0, |(_, v)| v.len()), columns }
    }

    pub fn column_names(&self) -> Vec<&str> {
        self.columns.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// Column `name`, or an error listing the columns there are.
    pub fn column(&self, name: &str) -> Result<&[Value], FrameError> {
        self.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, values)| values.as_slice())
            .ok_or_else(|| FrameError::NoColumn { name: name.to_string(), columns: self.column_names().join(", ") })
    }
}

/// Reads the DataFrame pickled in `path` (gzip-compressed when it starts with gzip's magic bytes).
pub fn read_pickle(path: &Path) -> Result<DataFrame, DataError> {
    let malformed = |what: &'static str| move |reason: String| DataError::Malformed { path: path.to_path_buf(), what, reason };
    let raw = std::fs::read(path).map_err(|source| DataError::Read { path: path.to_path_buf(), source })?;
    let data = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(raw.as_slice()).read_to_end(&mut out).map_err(|e| malformed("a gzip file that does not decompress")(e.to_string()))?;
        out
    } else {
        raw
    };
    let root = pickle::parse(&data).map_err(|e| malformed("not a readable pickle")(e.to_string()))?;
    data_frame(&root).map_err(|e| malformed("not a pandas DataFrame pickle as the reference writes it")(e.to_string()))
}

/// The DataFrame `root` was pickled from.
pub fn data_frame(root: &Value) -> Result<DataFrame, FrameError> {
    let class = root.built_by().unwrap_or_else(|| root.kind());
    if !class.ends_with(".DataFrame") {
        return Err(FrameError::NotADataFrame(class));
    }
    let state = root.state().ok_or("the DataFrame has no state")?;
    let manager = state.get("_mgr").or_else(|| state.get("_data")).ok_or("the DataFrame's state has no _mgr")?;
    let (blocks, axes) = manager_parts(&manager)?;
    let labels = axes.first().ok_or("the BlockManager has no axes")?;
    let names: Vec<String> = index_values(labels)?.iter().map(label).collect::<Result<_, _>>()?;
    let mut columns: Vec<Option<Vec<Value>>> = vec![None; names.len()];
    let mut rows = None;
    for (values, locations) in blocks {
        let block = array_2d(&values)?;
        let positions = positions(&locations, block.columns)?;
        if *rows.get_or_insert(block.rows) != block.rows {
            return Err(FrameError::RowCounts { first: rows.unwrap_or(0), other: block.rows });
        }
        for (i, position) in positions.into_iter().enumerate() {
            let slot = columns.get_mut(position).ok_or(FrameError::PlacedPast { position, columns: names.len() })?;
            *slot = Some(block.column(i));
        }
    }
    let rows = rows.unwrap_or(0);
    let columns = names
        .into_iter()
        .zip(columns)
        .map(|(name, values)| values.map(|v| (name.clone(), v)).ok_or_else(|| FrameError::InNoBlock(name.clone())))
        .collect::<Result<Vec<_>, FrameError>>()?;
    Ok(DataFrame { rows, columns })
}

/// A block's values and its column positions, as pickled.
type BlockParts = (Value, Value);

/// The blocks and axes of a BlockManager, from its `__reduce__` arguments
/// (pandas 1.3 and later) or its `__getstate__` state (older pandas).
fn manager_parts(manager: &Value) -> Result<(Vec<BlockParts>, Vec<Value>), FrameError> {
    if !manager.built_by_ends("BlockManager") {
        return Err(FrameError::NotABlockManager(manager.kind()));
    }
    let args = manager.args();
    if let [blocks, axes, ..] = args.as_slice() {
        let blocks = blocks.items().ok_or("the BlockManager's blocks are not a tuple")?;
        let blocks = blocks
            .iter()
            .map(|block| match block.args().as_slice() {
                [values, locations, ..] => Ok((values.clone(), locations.clone())),
                _ => Err(FrameError::Is { what: "a block", kind: block.kind() }),
            })
            .collect::<Result<_, FrameError>>()?;
        return Ok((blocks, axes.items().ok_or("the BlockManager's axes are not a list")?));
    }
    let state = manager.state().and_then(|s| s.items()).ok_or("a BlockManager with neither arguments nor state")?;
    let extra = state.get(3).and_then(|s| s.get("0.14.1")).ok_or("a BlockManager state without its 0.14.1 entry")?;
    let blocks = extra.get("blocks").and_then(|b| b.items()).ok_or("the BlockManager state has no blocks")?;
    let blocks =
        blocks.iter().map(|b| Ok((b.get("values").ok_or("a block without values")?, b.get("mgr_locs").ok_or("a block without mgr_locs")?))).collect::<Result<_, FrameError>>()?;
    Ok((blocks, extra.get("axes").and_then(|a| a.items()).ok_or("the BlockManager state has no axes")?))
}

/// The labels of a pandas Index (`_new_Index(cls, {"data": ..., ...})`, a RangeIndex, or an
/// Index with state).
fn index_values(index: &Value) -> Result<Vec<Value>, FrameError> {
    let args = index.args();
    let fields = args.get(1).cloned().or_else(|| index.state()).ok_or_else(|| FrameError::Is { what: "an axis", kind: index.kind() })?;
    if let Some(data) = fields.get("data") {
        return array_1d(&data);
    }
    let int = |key: &'static str| fields.get(key).and_then(|v| v.as_int()).ok_or(FrameError::RangeIndexWithout(key));
    let (start, stop, step) = (int("start")?, int("stop")?, int("step")?);
    if step == 0 {
        return Err(FrameError::Layout("a RangeIndex of step 0"));
    }
    let count = ((stop - start) + step - step.signum()) / step;
    Ok((0..count.max(0)).map(|i| Value::Int(start + i * step)).collect())
}

fn label(value: &Value) -> Result<String, FrameError> {
    match value {
        Value::Str(s) => Ok(s.to_string()),
        Value::Int(i) => Ok(i.to_string()),
        other => Err(FrameError::Is { what: "a column label", kind: other.kind() }),
    }
}

/// The column positions of a block: a `slice` or an integer array.
fn positions(locations: &Value, count: usize) -> Result<Vec<usize>, FrameError> {
    let to_position = |v: &Value| v.as_usize().ok_or_else(|| FrameError::Is { what: "a block position", kind: v.kind() });
    let list = if locations.built_by_ends("builtins.slice") {
        let args = locations.args();
        let start = args.first().and_then(Value::as_int).unwrap_or(0);
        let step = args.get(2).and_then(Value::as_int).unwrap_or(1);
        (0..count as i64).map(|i| Value::Int(start + i * step)).collect()
    } else {
        array_1d(locations)?
    };
    let positions = list.iter().map(to_position).collect::<Result<Vec<_>, _>>()?;
    if positions.len() != count {
        return Err(FrameError::Positions { count, positions: positions.len() });
    }
    Ok(positions)
}

/// A block's values, `columns` x `rows`.
struct Block {
    columns: usize,
    rows: usize,
    values: Vec<Value>,
    fortran: bool,
}

impl Block {
    fn column(&self, i: usize) -> Vec<Value> {
        (0..self.rows).map(|r| if self.fortran { self.values[r * self.columns + i].clone() } else { self.values[i * self.rows + r].clone() }).collect()
    }
}

/// A block's 2-D numpy array; pandas 3's string columns (Arrow-backed or not) are 1-D and one column.
fn array_2d(value: &Value) -> Result<Block, FrameError> {
    if let Some(values) = string_array(value) {
        let values = values?;
        return Ok(Block { columns: 1, rows: values.len(), values, fortran: false });
    }
    let array = PickledArray::read(value)?;
    match array.shape.as_slice() {
        [columns, rows] => Ok(Block { columns: *columns, rows: *rows, values: array.values()?, fortran: array.fortran }),
        [rows] => Ok(Block { columns: 1, rows: *rows, values: array.values()?, fortran: false }),
        shape => Err(FrameError::Shape { what: "a block", shape: shape.to_vec() }),
    }
}

fn array_1d(value: &Value) -> Result<Vec<Value>, FrameError> {
    if let Some(values) = string_array(value) {
        return values;
    }
    let array = PickledArray::read(value)?;
    if array.shape.len() != 1 {
        return Err(FrameError::Shape { what: "an index", shape: array.shape });
    }
    Ok(array.values()?)
}

/// The integers of a cell that holds a list, a tuple or a 1-D numpy array of them (a token list).
pub fn ints(cell: &Value) -> Result<Vec<i64>, FrameError> {
    let items = match cell.items() {
        Some(items) => items,
        None => {
            let array = PickledArray::read(cell).map_err(|_| FrameError::NotIntegers(cell.kind()))?;
            if array.shape.len() != 1 {
                return Err(FrameError::IntegersShape(array.shape));
            }
            array.values()?
        }
    };
    items.iter().map(|v| v.as_int().ok_or_else(|| FrameError::Among { kind: v.kind(), place: "among integers" })).collect()
}

/// The strings of a pandas 3 string column, None when `value` is no such column: Arrow-backed
/// (with pyarrow) or a `StringArray` over an object ndarray (`StringDtype(storage="python")`, what
/// pandas 3 writes without pyarrow).
fn string_array(value: &Value) -> Option<Result<Vec<Value>, FrameError>> {
    if value.built_by_ends("ArrowStringArray") {
        Some(arrow_strings(value))
    } else if value.built_by_ends("__pyx_unpickle_NDArrayBacked") {
        Some(python_strings(value))
    } else {
        None
    }
}

/// A `StringArray` as Cython pickles an `NDArrayBacked` (pandas/_libs/arrays.pyx):
/// `__pyx_unpickle_NDArrayBacked(cls, checksum, None)`, then the state `NDArrayBacked.__setstate__`
/// takes: a tuple holding the dtype and the ndarray (either order, a dict of attributes third), or a
/// dict with `_ndarray` (or `_data`) and `_dtype`. A missing string is NaN (the dtype's `na_value`)
/// or None in the object array; both read as None.
fn python_strings(value: &Value) -> Result<Vec<Value>, FrameError> {
    let class = value.args().first().map(Value::kind).unwrap_or_default();
    if !class.ends_with("StringArray") {
        return Err(FrameError::NotStrings(class));
    }
    let state = value.state().ok_or("a StringArray without state")?;
    let candidates = match state.items() {
        Some(items) => items.into_iter().take(2).collect(),
        None => ["_ndarray", "_data"].iter().filter_map(|k| state.get(k)).collect::<Vec<_>>(),
    };
    let array = candidates.iter().find_map(|v| PickledArray::read(v).ok()).ok_or("a StringArray whose state holds no numpy array")?;
    if array.shape.len() != 1 {
        return Err(FrameError::Shape { what: "a StringArray", shape: array.shape });
    }
    array
        .values()?
        .into_iter()
        .map(|v| match v {
            Value::Str(_) | Value::None => Ok(v),
            Value::Float(f) if f.is_nan() => Ok(Value::None),
            other => Err(FrameError::Among { kind: other.kind(), place: "in a StringArray" }),
        })
        .collect()
}

/// pandas 3's Arrow-backed string column: `_pa_array`, one Arrow array (or a chunked one) of
/// `string` (int32 offsets) or `large_string` (int64 offsets), rebuilt by pyarrow's
/// `_restore_array((type, length, null_count, offset, buffers, children, dictionary))`.
fn arrow_strings(value: &Value) -> Result<Vec<Value>, FrameError> {
    let state = value.state().ok_or("an ArrowStringArray without state")?;
    let array = state.get("_pa_array").ok_or("an ArrowStringArray without _pa_array")?;
    let chunks = if array.built_by_ends("chunked_array") { array.args().first().and_then(Value::items).ok_or("a chunked Arrow array without its chunks")? } else { vec![array] };
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(arrow_string_chunk(&chunk)?);
    }
    Ok(out)
}

fn arrow_string_chunk(chunk: &Value) -> Result<Vec<Value>, FrameError> {
    if !chunk.built_by_ends("_restore_array") {
        return Err(FrameError::Is { what: "an Arrow array", kind: chunk.kind() });
    }
    let parts = chunk.args().first().and_then(Value::items).ok_or("an Arrow array without its parts")?;
    let [kind, length, _null_count, offset, buffers, ..] = parts.as_slice() else { return Err(FrameError::Layout("an Arrow array of other parts")) };
    let alias = kind.args().first().and_then(|a| a.as_str().map(str::to_string)).unwrap_or_default();
    let width = match alias.as_str() {
        "string" | "utf8" => 4,
        "large_string" | "large_utf8" => 8,
        other => return Err(FrameError::ArrowType(other.to_string())),
    };
    let (length, offset) = (length.as_int().unwrap_or(0) as usize, offset.as_int().unwrap_or(0) as usize);
    let buffers = buffers.items().ok_or("Arrow buffers that are not a list")?;
    let buffer = |i: usize| -> Option<std::rc::Rc<[u8]>> {
        match buffers.get(i)?.args().first()? {
            Value::Bytes(bytes) => Some(bytes.clone()),
            _ => None,
        }
    };
    let validity = buffer(0);
    let offsets = buffer(1).ok_or("an Arrow string array without offsets")?;
    let data = buffer(2).unwrap_or_else(|| std::rc::Rc::from(Vec::new()));
    let at = |i: usize| -> Result<usize, FrameError> {
        let bytes = offsets.get(i * width..(i + 1) * width).ok_or("Arrow offsets shorter than the array")?;
        let mut raw = [0u8; 8];
        raw[..width].copy_from_slice(bytes);
        Ok(u64::from_le_bytes(raw) as usize)
    };
    (offset..offset + length)
        .map(|i| {
            if validity.as_ref().is_some_and(|bits| bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) == 0)) {
                return Ok(Value::None);
            }
            let text = data.get(at(i)?..at(i + 1)?).ok_or("Arrow offsets past the data")?;
            Ok(Value::Str(std::str::from_utf8(text)?.into()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/datasets").join(name)
    }

    /// The generator's frame (scripts/make_llm_dataset_fixtures.py), as every pandas writes it.
    fn assert_the_generated_frame(frame: &DataFrame, file: &str) {
        assert_eq!(frame.column_names(), ["system_prompt", "question", "tok_input", "output", "tok_len", "score", "flag", "ids"], "{file}");
        assert_eq!(frame.rows, 3, "{file}");
        let prompts = frame.column("system_prompt").unwrap();
        assert_eq!(prompts[1].as_str(), Some("Ü ünïcode ✓"), "{file}");
        let tok_input = frame.column("tok_input").unwrap();
        assert_eq!(ints(&tok_input[0]).unwrap(), [1, 32000, 2], "{file}");
        assert_eq!(ints(&tok_input[2]).unwrap(), [1, -5, 70000], "{file}: a numpy array cell");
        assert!(ints(&prompts[0]).unwrap_err().to_string().contains("a str, not a list of integers"));
        assert_eq!(frame.column("tok_len").unwrap().iter().map(|v| v.as_int().unwrap()).collect::<Vec<_>>(), [3, 2, 3], "{file}");
        assert!(matches!(frame.column("score").unwrap()[2], Value::Float(f) if f == -0.25), "{file}");
        assert!(matches!(frame.column("flag").unwrap()[1], Value::Bool(true)), "{file}");
        assert!(matches!(frame.column("question").unwrap()[2], Value::None), "{file}: a missing string");
        assert_eq!(frame.column("ids").unwrap()[0].as_int(), Some(-(1 << 40)), "{file}");
        let err = frame.column("missing").unwrap_err().to_string();
        assert!(err.contains("no column \"missing\"") && err.contains("tok_input"), "{err}");
    }

    #[test]
    fn pandas_1_2_and_3_pickles_read_alike() {
        for file in ["frame_pandas1.pkl", "frame_pandas2.pkl", "frame_pandas3.pkl", "frame_pandas3_no_pyarrow.pkl", "frame_pandas2_protocol4.pkl.gz"] {
            let frame = read_pickle(&fixture(file)).unwrap_or_else(|e| panic!("{e}"));
            assert_the_generated_frame(&frame, file);
        }
    }

    #[test]
    fn what_is_not_a_dataframe_says_so() {
        let dir = std::env::temp_dir().join(format!("mlperf-pandas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("list.pkl");
        std::fs::write(&path, b"\x80\x04]\x94.").unwrap();
        let err = read_pickle(&path).unwrap_err().to_string();
        assert!(err.contains("list.pkl: not a pandas DataFrame pickle") && err.contains("holds a list"), "{err}");
        std::fs::write(&path, b"\x80\x04]\x94").unwrap();
        let err = read_pickle(&path).unwrap_err().to_string();
        assert!(err.contains("list.pkl: not a readable pickle") && err.contains("ends at byte 4"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
