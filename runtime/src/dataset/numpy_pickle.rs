//! numpy arrays inside pickles, as the reference implementations `pickle.dump` them (alone or in the
//! lists and dicts of their data layouts). Read from a parsed [`Value`]: `_reconstruct` with its
//! `__setstate__` state, or protocol 5's `_frombuffer`, under numpy 1's `numpy.core` and numpy 2's
//! `numpy._core` names. Written as protocol 3 with numpy 1's names (which numpy 2 also loads), for
//! generated data in those same layouts. Hand-written as the reader is ([`super::pickle`]): no
//! maintained crate writes numpy's reduce protocol.

use super::npy::NpyDtype;
use super::pickle::Value;
use std::rc::Rc;

/// What a pickled value is instead of the numpy array a reader expected (or why its data does not
/// decode). A reason, not a whole message: callers put the file and the field in front.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArrayError {
    #[error("an array shape that is not a tuple")]
    ShapeNotTuple,
    #[error("an array dimension that is not a size")]
    DimensionNotSize,
    #[error("a numpy array without its state")]
    NoState,
    #[error("a numpy array state of {0} items")]
    StateItems(usize),
    #[error("a numpy _frombuffer call of other arguments")]
    FrombufferArgs,
    /// `0` is what the value is ([`Value::kind`]).
    #[error("a {0} where a numpy array belongs")]
    NotAnArray(String),
    #[error("an array dtype that is a {0}")]
    DtypeNotDtype(String),
    #[error("a numpy dtype without its code")]
    DtypeWithoutCode,
    #[error("numpy array data that is a {0}")]
    DataKind(String),
    #[error("a numpy array of shape {shape:?} with {count} values")]
    ValueCount { shape: Vec<usize>, count: usize },
    #[error("a numpy array of dtype {code}{}, not {}", if *big_endian { ", big-endian" } else { "" }, wanted.numpy_name())]
    WrongDtype { code: String, big_endian: bool, wanted: NpyDtype },
    #[error("a numpy array of shape {0:?} in Fortran order, not C order")]
    FortranOrder(Vec<usize>),
    #[error("a numpy array of shape {shape:?} with {bytes} bytes of {}", dtype.numpy_name())]
    ByteCount { shape: Vec<usize>, bytes: usize, dtype: NpyDtype },
    #[error("numpy dtype {0:?}")]
    BadDtypeCode(String),
    #[error("{bytes} bytes of numpy dtype {code}")]
    BytesNotWhole { bytes: usize, code: String },
    #[error("uint64 value {0} past int64")]
    U64PastI64(u64),
    #[error("numpy dtype {0}, which this reader does not decode")]
    UndecodedDtype(String),
}

/// A pickled numpy array, its values not yet decoded.
pub struct PickledArray {
    pub shape: Vec<usize>,
    /// Fortran (column-major) element order.
    pub fortran: bool,
    dtype: Value,
    data: Value,
}

impl PickledArray {
    pub fn read(value: &Value) -> Result<PickledArray, ArrayError> {
        let shape_of = |v: &Value| -> Result<Vec<usize>, ArrayError> {
            v.items().ok_or(ArrayError::ShapeNotTuple)?.iter().map(|d| d.as_usize().ok_or(ArrayError::DimensionNotSize)).collect()
        };
        if value.built_by_ends("multiarray._reconstruct") {
            let state = value.state().and_then(|s| s.items()).ok_or(ArrayError::NoState)?;
            // (version, shape, dtype, is_fortran, data); numpy also writes the older 4-tuple.
            let state = if state.len() == 5 { &state[1..] } else { &state[..] };
            let [shape, dtype, fortran, data] = state else { return Err(ArrayError::StateItems(state.len())) };
            Ok(PickledArray { shape: shape_of(shape)?, fortran: fortran.as_int() == Some(1), dtype: dtype.clone(), data: data.clone() })
        } else if value.built_by_ends("numeric._frombuffer") {
            let args = value.args();
            let [data, dtype, shape, order] = args.as_slice() else { return Err(ArrayError::FrombufferArgs) };
            Ok(PickledArray { shape: shape_of(shape)?, fortran: order.as_str() == Some("F"), dtype: dtype.clone(), data: data.clone() })
        } else {
            Err(ArrayError::NotAnArray(value.kind()))
        }
    }

    fn count(&self) -> usize {
        self.shape.iter().product()
    }

    /// The dtype's code (`f4`, `u1`, `O8`) and whether its bytes are big-endian.
    fn code(&self) -> Result<(String, bool), ArrayError> {
        if !self.dtype.built_by_ends("numpy.dtype") {
            return Err(ArrayError::DtypeNotDtype(self.dtype.kind()));
        }
        let code = self.dtype.args().first().and_then(|c| c.as_str().map(str::to_string)).ok_or(ArrayError::DtypeWithoutCode)?;
        let big_endian = self.dtype.state().and_then(|s| s.items()).and_then(|s| s.get(1).and_then(|o| o.as_str().map(|o| o == ">"))).unwrap_or(false);
        Ok((code, big_endian))
    }

    /// One value per element in storage order: an object array's pickled items, or a numeric
    /// array's numbers.
    pub fn values(&self) -> Result<Vec<Value>, ArrayError> {
        let values = match &self.data {
            Value::List(items) => items.borrow().clone(),
            Value::Bytes(bytes) => {
                let (code, big_endian) = self.code()?;
                numbers(&code, big_endian, bytes)?
            }
            other => return Err(ArrayError::DataKind(other.kind())),
        };
        if values.len() != self.count() {
            return Err(ArrayError::ValueCount { shape: self.shape.clone(), count: values.len() });
        }
        Ok(values)
    }

    /// The raw bytes of a C-order array of `dtype` (little-endian where it has an order); anything
    /// else is an error that says what the array is instead.
    pub fn bytes_of(&self, dtype: NpyDtype) -> Result<Rc<[u8]>, ArrayError> {
        let (code, big_endian) = self.code()?;
        let wanted = &dtype.descr()[1..];
        if code != wanted || (big_endian && dtype.size() > 1) {
            return Err(ArrayError::WrongDtype { code, big_endian, wanted: dtype });
        }
        if self.fortran && self.shape.iter().filter(|&&d| d > 1).count() > 1 {
            return Err(ArrayError::FortranOrder(self.shape.clone()));
        }
        let Value::Bytes(bytes) = &self.data else { return Err(ArrayError::DataKind(self.data.kind())) };
        if bytes.len() != self.count() * dtype.size() {
            return Err(ArrayError::ByteCount { shape: self.shape.clone(), bytes: bytes.len(), dtype });
        }
        Ok(bytes.clone())
    }
}

/// A numeric array's values from its raw bytes.
fn numbers(code: &str, big_endian: bool, bytes: &[u8]) -> Result<Vec<Value>, ArrayError> {
    let (kind, size) = code.split_at(1);
    let size: usize = size.parse().map_err(|_| ArrayError::BadDtypeCode(code.to_string()))?;
    if size == 0 || size > 8 || !bytes.len().is_multiple_of(size) {
        return Err(ArrayError::BytesNotWhole { bytes: bytes.len(), code: code.to_string() });
    }
    bytes
        .chunks(size)
        .map(|chunk| {
            let mut raw = [0u8; 8];
            raw[..size].copy_from_slice(chunk);
            if big_endian {
                raw[..size].reverse();
            }
            let unsigned = u64::from_le_bytes(raw);
            let signed = |bits: u32| ((unsigned << (64 - bits)) as i64) >> (64 - bits);
            match (kind, size) {
                ("i", 1 | 2 | 4 | 8) => Ok(Value::Int(signed(size as u32 * 8))),
                ("u", 1 | 2 | 4) => Ok(Value::Int(unsigned as i64)),
                ("u", 8) => i64::try_from(unsigned).map(Value::Int).map_err(|_| ArrayError::U64PastI64(unsigned)),
                ("b", 1) => Ok(Value::Bool(unsigned != 0)),
                ("f", 4) => Ok(Value::Float(f64::from(f32::from_bits(unsigned as u32)))),
                ("f", 8) => Ok(Value::Float(f64::from_bits(unsigned))),
                _ => Err(ArrayError::UndecodedDtype(code.to_string())),
            }
        })
        .collect()
}

/// A value to pickle: what the reference's data layouts hold.
pub enum Pickled<'a> {
    Str(&'a str),
    Int(i64),
    List(Vec<Pickled<'a>>),
    Tuple(Vec<Pickled<'a>>),
    /// String keys, in order.
    Dict(Vec<(&'a str, Pickled<'a>)>),
    /// A C-order numpy array of `dtype` over `data` (little-endian).
    Array {
        dtype: NpyDtype,
        shape: &'a [usize],
        data: &'a [u8],
    },
}

/// `value` as a protocol 3 pickle (no memo: every value is written where it occurs).
pub fn to_pickle(value: &Pickled) -> Vec<u8> {
    let mut out = vec![0x80, 3]; // PROTO 3
    write(&mut out, value);
    out.push(b'.'); // STOP
    out
}

fn write(out: &mut Vec<u8>, value: &Pickled) {
    match value {
        Pickled::Str(s) => {
            out.push(b'X'); // BINUNICODE
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Pickled::Int(i) => match i32::try_from(*i) {
            Ok(i) => {
                out.push(b'J'); // BININT
                out.extend_from_slice(&i.to_le_bytes());
            }
            Err(_) => {
                out.extend_from_slice(&[0x8a, 8]); // LONG1, 8 bytes of two's complement
                out.extend_from_slice(&i.to_le_bytes());
            }
        },
        Pickled::List(items) => {
            out.extend_from_slice(b"]("); // EMPTY_LIST, MARK
            items.iter().for_each(|item| write(out, item));
            out.push(b'e'); // APPENDS
        }
        Pickled::Tuple(items) => {
            out.push(b'('); // MARK
            items.iter().for_each(|item| write(out, item));
            out.push(b't'); // TUPLE
        }
        Pickled::Dict(items) => {
            out.extend_from_slice(b"}("); // EMPTY_DICT, MARK
            for (key, item) in items {
                write(out, &Pickled::Str(key));
                write(out, item);
            }
            out.push(b'u'); // SETITEMS
        }
        Pickled::Array { dtype, shape, data } => write_array(out, *dtype, shape, data),
    }
}

/// What `pickle.dump` of a numpy array writes: `_reconstruct(ndarray, (0,), b'b')`, then its state
/// `(1, shape, dtype, is_fortran, raw bytes)`; the dtype is `dtype(code, False, True)` with state
/// `(3, byte order, None, None, None, -1, -1, 0)`.
fn write_array(out: &mut Vec<u8>, dtype: NpyDtype, shape: &[usize], data: &[u8]) {
    let global = |out: &mut Vec<u8>, module: &str, name: &str| {
        out.push(b'c'); // GLOBAL
        out.extend_from_slice(format!("{module}\n{name}\n").as_bytes());
    };
    global(out, "numpy.core.multiarray", "_reconstruct");
    out.push(b'('); // MARK
    global(out, "numpy", "ndarray");
    write(out, &Pickled::Tuple(vec![Pickled::Int(0)]));
    out.extend_from_slice(&[b'C', 1, b'b']); // SHORT_BINBYTES b'b'
    out.extend_from_slice(b"tR("); // TUPLE, REDUCE, MARK (the state)
    write(out, &Pickled::Int(1));
    write(out, &Pickled::Tuple(shape.iter().map(|&d| Pickled::Int(d as i64)).collect()));
    let (order, code) = dtype.descr().split_at(1);
    global(out, "numpy", "dtype");
    out.push(b'(');
    write(out, &Pickled::Str(code));
    out.extend_from_slice(&[0x89, 0x88, b't', b'R', b'(']); // NEWFALSE, NEWTRUE, TUPLE, REDUCE, MARK
    write(out, &Pickled::Int(3));
    write(out, &Pickled::Str(order));
    out.extend_from_slice(b"NNN");
    [-1, -1, 0].iter().for_each(|&i| write(out, &Pickled::Int(i)));
    out.extend_from_slice(&[b't', b'b', 0x89]); // TUPLE, BUILD (the dtype), NEWFALSE (C order)
    out.push(b'B'); // BINBYTES
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"tb"); // TUPLE, BUILD (the array)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::pickle::parse;

    #[test]
    fn written_arrays_read_back_with_their_bytes_shape_and_dtype() {
        let image: Vec<u8> = [1.5f32, -2.0, 0.25, 8.0, 3.0, -0.5].iter().flat_map(|v| v.to_le_bytes()).collect();
        let labels = [0u8, 1, 2, 2, 1, 0];
        let shape = [1, 1, 2, 3];
        let pickle = to_pickle(&Pickled::List(vec![
            Pickled::Array { dtype: NpyDtype::F32, shape: &shape, data: &image },
            Pickled::Array { dtype: NpyDtype::U8, shape: &shape, data: &labels },
        ]));
        let items = parse(&pickle).unwrap().items().unwrap();
        let (image_back, labels_back) = (PickledArray::read(&items[0]).unwrap(), PickledArray::read(&items[1]).unwrap());
        assert_eq!(image_back.shape, shape);
        assert_eq!(&image_back.bytes_of(NpyDtype::F32).unwrap()[..], &image[..]);
        assert_eq!(&labels_back.bytes_of(NpyDtype::U8).unwrap()[..], &labels[..]);
        assert_eq!(labels_back.values().unwrap()[2].as_int(), Some(2));
        let err = labels_back.bytes_of(NpyDtype::F32).err().unwrap().to_string();
        assert_eq!(err, "a numpy array of dtype u1, not float32");
    }

    #[test]
    fn dicts_tuples_strings_and_large_integers_round_trip() {
        let pickle = to_pickle(&Pickled::Dict(vec![
            ("file_list", Pickled::List(vec![Pickled::Str("case_00000"), Pickled::Str("case_00400")])),
            ("shape", Pickled::Tuple(vec![Pickled::Int(1), Pickled::Int(3_000_000_000), Pickled::Int(-7)])),
        ]));
        let value = parse(&pickle).unwrap();
        let names: Vec<String> = value.get("file_list").unwrap().items().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        assert_eq!(names, ["case_00000", "case_00400"]);
        let shape: Vec<i64> = value.get("shape").unwrap().items().unwrap().iter().map(|v| v.as_int().unwrap()).collect();
        assert_eq!(shape, [1, 3_000_000_000, -7]);
    }
}
