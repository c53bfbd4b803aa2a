//! A minimal NumPy `.npy` reader and writer (format versions 1.0, 2.0 and 3.0; little-endian; C
//! order), written for the preprocessed MLPerf tensors: NVIDIA's harness and the MLCommons
//! reference read exactly these files, so ours must be byte-compatible with `numpy.save`.
//!
//! The format (numpy/lib/format.py): the magic `\x93NUMPY`, a major and a minor version byte, the
//! header length (little-endian `u16` for 1.0, `u32` for 2.0/3.0), then the header: a Python dict
//! literal `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 224, 224), }` padded with spaces
//! and ending in `\n`, so that the data starts at a multiple of 64 bytes. The data follows in C
//! order. [`header_bytes`] writes the header exactly as `numpy.save` does, so files are identical.

use crate::fsutil::FsError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a `.npy` file cannot be read or written. A file that is missing or not what the run needs is
/// [`crate::Error::Data`]; one that cannot be written is [`crate::Error::Other`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpyError {
    #[error("not a NumPy .npy file (missing the \\x93NUMPY magic)")]
    NotNpy,
    #[error("truncated .npy header")]
    TruncatedHeader,
    #[error(".npy format version {major}.{minor} is not supported (1.0, 2.0, 3.0 are)")]
    UnsupportedVersion { major: u8, minor: u8 },
    #[error("truncated .npy header: announces {announced} bytes, file has {have}")]
    HeaderShorterThanAnnounced { announced: usize, have: usize },
    #[error(".npy header is not UTF-8 text")]
    HeaderNotUtf8,
    /// The header dict does not parse; `reason` says where.
    #[error("malformed .npy header {header:?}: {reason}")]
    MalformedHeader { header: String, reason: HeaderSyntax },
    #[error(".npy header has no '{key}': {header}")]
    MissingKey { key: &'static str, header: String },
    #[error("unsupported dtype '{descr}' (supported: {supported})")]
    UnsupportedDtype { descr: String, supported: String },
    #[error("dtype '{descr}' is not little-endian; only little-endian data is supported")]
    NotLittleEndian { descr: String },
    #[error("Fortran-order .npy arrays are not supported (save with C order)")]
    FortranOrder,
    #[error("truncated data: shape {shape:?} of {} needs {needs} bytes, the file holds {have}", dtype.numpy_name())]
    TruncatedData { shape: Vec<usize>, dtype: NpyDtype, needs: usize, have: usize },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot open {}: {source}", path.display())]
    Open { path: PathBuf, source: std::io::Error },
    /// Fewer than the 12 bytes every header starts with.
    #[error("{}: not a .npy file ({source})", path.display())]
    TooShort { path: PathBuf, source: std::io::Error },
    #[error("{}: truncated .npy header ({source})", path.display())]
    HeaderUnreadable { path: PathBuf, source: std::io::Error },
    /// An error of the file's content, with the file's path in front.
    #[error("{}: {source}", path.display())]
    InFile { path: PathBuf, source: Box<NpyError> },
    /// Data handed to a writer that does not match the shape.
    #[error("{}: {len} bytes of data for shape {shape:?} of {} (needs {needs})", path.display(), dtype.numpy_name())]
    WrongDataSize { path: PathBuf, len: usize, shape: Vec<usize>, dtype: NpyDtype, needs: usize },
    #[error("{}: row {index} of {len} bytes does not fit ({rows} rows of {row_bytes} bytes)", path.display())]
    RowDoesNotFit { path: PathBuf, index: usize, len: usize, rows: usize, row_bytes: usize },
    #[error("{}: row {row} was never written", path.display())]
    RowNeverWritten { path: PathBuf, row: usize },
    #[error(transparent)]
    Write(#[from] FsError),
}

/// Where and why a `.npy` header dict does not parse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderSyntax {
    #[error("expected '{expected}' at byte {at}")]
    Expected { expected: char, at: usize },
    #[error("expected a quoted string at byte {0}")]
    ExpectedString(usize),
    #[error("unterminated string")]
    UnterminatedString,
    #[error("expected a dimension at byte {0}")]
    ExpectedDimension(usize),
    #[error("bad dimension: {0}")]
    BadDimension(#[source] std::num::ParseIntError),
    #[error("fortran_order must be True or False")]
    FortranOrder,
    #[error("unknown key '{0}'")]
    UnknownKey(String),
}

impl NpyError {
    fn in_file(path: &Path) -> impl FnOnce(NpyError) -> NpyError + '_ {
        move |e| NpyError::InFile { path: path.to_path_buf(), source: Box::new(e) }
    }
}

impl From<NpyError> for crate::Error {
    fn from(e: NpyError) -> crate::Error {
        match e {
            NpyError::Write(_) | NpyError::WrongDataSize { .. } | NpyError::RowDoesNotFit { .. } | NpyError::RowNeverWritten { .. } => crate::Error::Other(e.to_string()),
            _ => crate::Error::Data(e.to_string()),
        }
    }
}

/// The element types the MLPerf tensors use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NpyDtype {
    I8,
    U8,
    I32,
    I64,
    F16,
    F32,
}

impl NpyDtype {
    pub const ALL: [NpyDtype; 6] = [NpyDtype::I8, NpyDtype::U8, NpyDtype::I32, NpyDtype::I64, NpyDtype::F16, NpyDtype::F32];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            NpyDtype::I8 | NpyDtype::U8 => 1,
            NpyDtype::F16 => 2,
            NpyDtype::I32 | NpyDtype::F32 => 4,
            NpyDtype::I64 => 8,
        }
    }

    /// The `descr` NumPy writes: one-byte types carry `|` (no byte order), the others `<`.
    pub const fn descr(self) -> &'static str {
        match self {
            NpyDtype::I8 => "|i1",
            NpyDtype::U8 => "|u1",
            NpyDtype::I32 => "<i4",
            NpyDtype::I64 => "<i8",
            NpyDtype::F16 => "<f2",
            NpyDtype::F32 => "<f4",
        }
    }

    /// NumPy's name for the type (as in `dtype=np.int8`).
    pub const fn numpy_name(self) -> &'static str {
        match self {
            NpyDtype::I8 => "int8",
            NpyDtype::U8 => "uint8",
            NpyDtype::I32 => "int32",
            NpyDtype::I64 => "int64",
            NpyDtype::F16 => "float16",
            NpyDtype::F32 => "float32",
        }
    }

    /// Parses a `descr`. One-byte types accept any byte-order mark (`|`, `<`, `>`, `=`); wider
    /// ones must be little-endian (`<`, or `=` on this little-endian host).
    pub fn from_descr(descr: &str) -> Result<NpyDtype, NpyError> {
        let (order, code) = match descr.chars().next() {
            Some(c @ ('<' | '>' | '|' | '=')) => (c, &descr[1..]),
            _ => ('|', descr),
        };
        let dtype = match code {
            "i1" | "b" => NpyDtype::I8,
            "u1" | "B" => NpyDtype::U8,
            "i4" => NpyDtype::I32,
            "i8" => NpyDtype::I64,
            "f2" | "e" => NpyDtype::F16,
            "f4" | "f" => NpyDtype::F32,
            _ => return Err(NpyError::UnsupportedDtype { descr: descr.to_string(), supported: Self::supported() }),
        };
        if dtype.size() > 1 && (order == '>' || (order == '=' && cfg!(target_endian = "big")) || order == '|') {
            return Err(NpyError::NotLittleEndian { descr: descr.to_string() });
        }
        Ok(dtype)
    }

    fn supported() -> String {
        NpyDtype::ALL.iter().map(|d| d.descr()).collect::<Vec<_>>().join(" ")
    }
}

/// A parsed header: what the data is and where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    pub dtype: NpyDtype,
    pub shape: Vec<usize>,
    /// Byte offset of the first element in the file.
    pub data_offset: usize,
}

impl NpyHeader {
    /// Elements in the array (1 for a 0-d array).
    pub fn element_count(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes of data the header announces.
    pub fn data_len(&self) -> usize {
        self.element_count() * self.dtype.size()
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses the header at the start of `bytes` (which may be the whole file or just its beginning).
/// Fortran-order arrays are refused: every consumer here indexes in C order.
pub fn parse_header(bytes: &[u8]) -> Result<NpyHeader, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(NpyError::NotNpy);
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(NpyError::TruncatedHeader);
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        _ => return Err(NpyError::UnsupportedVersion { major, minor }),
    };
    let end = start + len;
    if bytes.len() < end {
        return Err(NpyError::HeaderShorterThanAnnounced { announced: len, have: bytes.len() - start });
    }
    let text = std::str::from_utf8(&bytes[start..end]).map_err(|_| NpyError::HeaderNotUtf8)?;
    let header = || text.trim_end().to_string();
    let dict = parse_dict(text).map_err(|reason| NpyError::MalformedHeader { header: header(), reason })?;
    let descr = dict.descr.ok_or_else(|| NpyError::MissingKey { key: "descr", header: header() })?;
    let dtype = NpyDtype::from_descr(&descr)?;
    if dict.fortran_order.unwrap_or(false) {
        return Err(NpyError::FortranOrder);
    }
    let shape = dict.shape.ok_or_else(|| NpyError::MissingKey { key: "shape", header: header() })?;
    Ok(NpyHeader { dtype, shape, data_offset: end })
}

#[derive(Default)]
struct HeaderDict {
    descr: Option<String>,
    fortran_order: Option<bool>,
    shape: Option<Vec<usize>>,
}

/// The header dict is a Python literal with three known keys; a small hand parser avoids any
/// general Python-literal machinery.
fn parse_dict(text: &str) -> Result<HeaderDict, HeaderSyntax> {
    let mut p = Cursor { s: text.as_bytes(), i: 0 };
    let mut dict = HeaderDict::default();
    p.ws();
    p.expect(b'{')?;
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        match key.as_str() {
            "descr" => dict.descr = Some(p.string()?),
            "fortran_order" => {
                dict.fortran_order = Some(if p.word("True") {
                    true
                } else if p.word("False") {
                    false
                } else {
                    return Err(HeaderSyntax::FortranOrder);
                })
            }
            "shape" => dict.shape = Some(p.tuple()?),
            other => return Err(HeaderSyntax::UnknownKey(other.to_string())),
        }
        p.ws();
        if p.eat(b',') {
            continue;
        }
        p.ws();
        p.expect(b'}')?;
        break;
    }
    Ok(dict)
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), HeaderSyntax> {
        if self.eat(c) { Ok(()) } else { Err(HeaderSyntax::Expected { expected: c as char, at: self.i }) }
    }
    fn word(&mut self, w: &str) -> bool {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            true
        } else {
            false
        }
    }
    fn string(&mut self) -> Result<String, HeaderSyntax> {
        let quote = match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(HeaderSyntax::ExpectedString(self.i)),
        };
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != quote {
            self.i += 1;
        }
        if self.i >= self.s.len() {
            return Err(HeaderSyntax::UnterminatedString);
        }
        let out = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.i += 1;
        Ok(out)
    }
    fn tuple(&mut self) -> Result<Vec<usize>, HeaderSyntax> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
            if start == self.i {
                return Err(HeaderSyntax::ExpectedDimension(self.i));
            }
            let n: usize = std::str::from_utf8(&self.s[start..self.i]).unwrap().parse().map_err(HeaderSyntax::BadDimension)?;
            dims.push(n);
            self.eat(b'L'); // Python 2 longs
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

/// The header bytes `numpy.save` writes for an array of `dtype` and `shape` (C order): version 1.0
/// unless the header needs more than 65535 bytes, padded so the data starts at a multiple of 64.
pub fn header_bytes(dtype: NpyDtype, shape: &[usize]) -> Vec<u8> {
    let shape_text = match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        dims => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let dict = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", dtype.descr(), shape_text);
    for (major, prefix) in [(1u8, 10usize), (2u8, 12usize)] {
        // dict + padding + '\n', total length a multiple of 64.
        let unpadded = prefix + dict.len() + 1;
        let padded = unpadded.div_ceil(64) * 64;
        let header_len = padded - prefix;
        if major == 1 && header_len > u16::MAX as usize {
            continue;
        }
        let mut out = Vec::with_capacity(padded);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[major, 0]);
        if major == 1 {
            out.extend_from_slice(&(header_len as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(header_len as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(padded - 1, b' ');
        out.push(b'\n');
        return out;
    }
    unreachable!("a 2.0 header holds any shape")
}

/// A whole `.npy` file in one shared buffer: the data is `bytes[header.data_offset..]`, so samples
/// can be handed out as ranges of `bytes` without copies.
#[derive(Clone, Debug)]
pub struct NpyFile {
    pub header: NpyHeader,
    pub bytes: Arc<[u8]>,
}

impl NpyFile {
    /// The array's data.
    pub fn data(&self) -> &[u8] {
        &self.bytes[self.header.data_offset..self.header.data_offset + self.header.data_len()]
    }

    /// The byte range of the data within [`NpyFile::bytes`].
    pub fn data_range(&self) -> std::ops::Range<usize> {
        self.header.data_offset..self.header.data_offset + self.header.data_len()
    }

    /// Parses a file held in memory.
    pub fn from_bytes(bytes: Arc<[u8]>) -> Result<NpyFile, NpyError> {
        let header = parse_header(&bytes)?;
        let have = bytes.len() - header.data_offset;
        if have < header.data_len() {
            return Err(NpyError::TruncatedData { shape: header.shape.clone(), dtype: header.dtype, needs: header.data_len(), have });
        }
        Ok(NpyFile { header, bytes })
    }
}

/// Reads a whole `.npy` file. Errors name the file.
pub fn read_npy(path: &Path) -> Result<NpyFile, NpyError> {
    let bytes = std::fs::read(path).map_err(|source| NpyError::Read { path: path.to_path_buf(), source })?;
    NpyFile::from_bytes(Arc::from(bytes)).map_err(NpyError::in_file(path))
}

/// Reads only the header of a `.npy` file (cheap checks of big files).
pub fn read_npy_header(path: &Path) -> Result<NpyHeader, NpyError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|source| NpyError::Open { path: path.to_path_buf(), source })?;
    let mut buf = vec![0u8; 12];
    file.read_exact(&mut buf).map_err(|source| NpyError::TooShort { path: path.to_path_buf(), source })?;
    let total = match buf[6] {
        1 => 10 + u16::from_le_bytes([buf[8], buf[9]]) as usize,
        _ => 12 + u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize,
    };
    if &buf[..6] == MAGIC && total > buf.len() && total < (1 << 24) {
        let mut rest = vec![0u8; total - buf.len()];
        file.read_exact(&mut rest).map_err(|source| NpyError::HeaderUnreadable { path: path.to_path_buf(), source })?;
        buf.extend_from_slice(&rest);
    }
    parse_header(&buf).map_err(NpyError::in_file(path))
}

/// Writes `data` (little-endian elements of `dtype`, C order) as a `.npy` file identical to
/// `numpy.save`'s, atomically (a temporary file and a rename).
pub fn write_npy(path: &Path, dtype: NpyDtype, shape: &[usize], data: &[u8]) -> Result<(), NpyError> {
    let expected = shape.iter().product::<usize>() * dtype.size();
    if data.len() != expected {
        return Err(NpyError::WrongDataSize { path: path.to_path_buf(), len: data.len(), shape: shape.to_vec(), dtype, needs: expected });
    }
    let mut bytes = header_bytes(dtype, shape);
    bytes.extend_from_slice(data);
    Ok(crate::fsutil::write_atomic(path, &bytes)?)
}

/// Writes a `.npy` file whose rows arrive one at a time (large contiguous tensors that should
/// not be held in memory): the header first, then [`NpyWriter::write_at`] for each row, in any
/// order, then [`NpyWriter::finish`], which checks that every row was written.
pub struct NpyWriter {
    path: std::path::PathBuf,
    tmp: std::path::PathBuf,
    file: std::sync::Mutex<std::fs::File>,
    data_offset: u64,
    row_bytes: usize,
    rows: usize,
    written: std::sync::Mutex<Vec<bool>>,
    finished: bool,
}

impl NpyWriter {
    /// A writer for an array of `dtype` and shape `[rows, row_shape...]`.
    pub fn create(path: &Path, dtype: NpyDtype, rows: usize, row_shape: &[usize]) -> Result<NpyWriter, NpyError> {
        let mut shape = vec![rows];
        shape.extend_from_slice(row_shape);
        let header = header_bytes(dtype, &shape);
        let row_bytes = row_shape.iter().product::<usize>() * dtype.size();
        let dir = path.parent().ok_or_else(|| FsError::NoParent { path: path.to_path_buf() })?;
        std::fs::create_dir_all(dir).map_err(FsError::create(dir))?;
        let tmp = dir.join(format!(".{}.tmp-{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("npy"), std::process::id()));
        let mut file = std::fs::File::create(&tmp).map_err(FsError::create(&tmp))?;
        file.write_all(&header).map_err(FsError::write(&tmp))?;
        file.set_len((header.len() + rows * row_bytes) as u64).map_err(|source| FsError::Size { path: tmp.clone(), source })?;
        Ok(NpyWriter {
            path: path.to_path_buf(),
            tmp,
            file: std::sync::Mutex::new(file),
            data_offset: header.len() as u64,
            row_bytes,
            rows,
            written: std::sync::Mutex::new(vec![false; rows]),
            finished: false,
        })
    }

    /// Writes row `index` (exactly one row's bytes).
    pub fn write_at(&self, index: usize, row: &[u8]) -> Result<(), NpyError> {
        use std::io::{Seek, SeekFrom};
        if index >= self.rows || row.len() != self.row_bytes {
            return Err(NpyError::RowDoesNotFit { path: self.path.clone(), index, len: row.len(), rows: self.rows, row_bytes: self.row_bytes });
        }
        let mut file = self.file.lock().unwrap();
        file.seek(SeekFrom::Start(self.data_offset + (index * self.row_bytes) as u64)).and_then(|_| file.write_all(row)).map_err(FsError::write(&self.tmp))?;
        self.written.lock().unwrap()[index] = true;
        Ok(())
    }

    /// Checks every row was written, then moves the file into place.
    pub fn finish(mut self) -> Result<(), NpyError> {
        if let Some(missing) = self.written.lock().unwrap().iter().position(|w| !w) {
            return Err(NpyError::RowNeverWritten { path: self.path.clone(), row: missing });
        }
        self.file.lock().unwrap().sync_all().map_err(|source| FsError::Flush { path: self.tmp.clone(), source })?;
        std::fs::rename(&self.tmp, &self.path).map_err(|source| FsError::Rename { path: self.path.clone(), source })?;
        self.finished = true;
        Ok(())
    }
}

impl Drop for NpyWriter {
    fn drop(&mut self) {
        // Unless finish() moved it into place, nothing half-written stays behind.
        if !self.finished {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mlperf-npy-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn header_is_numpys() {
        // Bytes numpy.save writes for np.zeros((3, 224, 224), np.int8): a 118-byte dict padded to
        // 128 bytes in all.
        let h = header_bytes(NpyDtype::I8, &[3, 224, 224]);
        assert_eq!(h.len(), 128);
        assert_eq!(&h[..10], b"\x93NUMPY\x01\x00\x76\x00");
        assert!(h.starts_with(b"\x93NUMPY\x01\x00v\x00{'descr': '|i1', 'fortran_order': False, 'shape': (3, 224, 224), }"));
        assert_eq!(*h.last().unwrap(), b'\n');
        let one = header_bytes(NpyDtype::F32, &[5]);
        assert!(String::from_utf8_lossy(&one).contains("'shape': (5,), }"));
        let zero = header_bytes(NpyDtype::I64, &[]);
        assert!(String::from_utf8_lossy(&zero).contains("'descr': '<i8', 'fortran_order': False, 'shape': (), }"));
        for h in [one, zero] {
            assert_eq!(h.len() % 64, 0);
        }
    }

    #[test]
    fn round_trip_every_dtype() {
        let dir = tmpdir("rt");
        for dtype in NpyDtype::ALL {
            let shape = [2usize, 3];
            let data: Vec<u8> = (0..6 * dtype.size()).map(|i| (i * 7 + 1) as u8).collect();
            let path = dir.join(format!("{}.npy", dtype.numpy_name()));
            write_npy(&path, dtype, &shape, &data).unwrap();
            let f = read_npy(&path).unwrap();
            assert_eq!(f.header.dtype, dtype);
            assert_eq!(f.header.shape, shape);
            assert_eq!(f.data(), &data[..]);
            assert_eq!(f.header.data_offset % 64, 0);
            assert_eq!(read_npy_header(&path).unwrap(), f.header);
        }
        assert!(write_npy(&dir.join("bad.npy"), NpyDtype::I32, &[2], &[0u8; 7]).unwrap_err().to_string().contains("needs 8"));
    }

    #[test]
    fn parses_other_writers_headers() {
        // Version 2.0, double quotes, no trailing comma, '<i1', Python 2 long dims.
        let dict = "{\"descr\": \"<i1\", \"shape\": (2L, 2L), \"fortran_order\": False}";
        let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
        bytes.extend_from_slice(&((dict.len() + 1) as u32).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        bytes.push(b'\n');
        let h = parse_header(&bytes).unwrap();
        assert_eq!((h.dtype, h.shape.clone(), h.data_offset), (NpyDtype::I8, vec![2, 2], bytes.len()));
        bytes.extend_from_slice(&[1, 2, 3]);
        assert!(NpyFile::from_bytes(Arc::from(bytes)).unwrap_err().to_string().contains("truncated data"));
    }

    fn raw_header(dict: &str) -> Vec<u8> {
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&((dict.len() + 1) as u16).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        bytes.push(b'\n');
        bytes
    }

    #[test]
    fn refuses_what_it_cannot_index() {
        let fortran = raw_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }");
        assert!(parse_header(&fortran).unwrap_err().to_string().contains("Fortran"));
        let big = raw_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }");
        assert!(parse_header(&big).unwrap_err().to_string().contains("little-endian"));
        let f8 = raw_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }");
        assert!(parse_header(&f8).unwrap_err().to_string().contains("unsupported dtype '<f8'"));
        let no_shape = raw_header("{'descr': '<f4', 'fortran_order': False, }");
        assert!(parse_header(&no_shape).unwrap_err().to_string().contains("no 'shape'"));
        assert!(parse_header(b"PK\x03\x04 not npy").unwrap_err().to_string().contains("magic"));
        assert_eq!(NpyDtype::from_descr("<i1").unwrap(), NpyDtype::I8);
        assert_eq!(NpyDtype::from_descr("|u1").unwrap(), NpyDtype::U8);
    }

    #[test]
    fn row_writer_fills_in_any_order() {
        let dir = tmpdir("rows");
        let path = dir.join("rows.npy");
        let w = NpyWriter::create(&path, NpyDtype::I32, 3, &[2]).unwrap();
        for i in [2usize, 0, 1] {
            let row: Vec<u8> = [i as i32, -(i as i32)].iter().flat_map(|v| v.to_le_bytes()).collect();
            w.write_at(i, &row).unwrap();
        }
        assert!(w.write_at(3, &[0; 8]).is_err());
        w.finish().unwrap();
        let f = read_npy(&path).unwrap();
        assert_eq!(f.header.shape, vec![3, 2]);
        let vals: Vec<i32> = f.data().chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(vals, vec![0, 0, 1, -1, 2, -2]);
        let partial = NpyWriter::create(&dir.join("partial.npy"), NpyDtype::U8, 2, &[1]).unwrap();
        partial.write_at(0, &[1]).unwrap();
        assert!(partial.finish().unwrap_err().to_string().contains("row 1 was never written"));
        assert!(!dir.join("partial.npy").exists());
    }
}
