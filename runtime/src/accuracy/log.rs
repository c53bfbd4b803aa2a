//! Reading LoadGen's `mlperf_log_accuracy.json`: a JSON array of
//! `{ "seq_id" : N, "qsl_idx" : I, "data" : "HEX" }` (LoadGen `logging.cc`; token benchmarks add
//! `token_count` and `token_data`), where `data` is the SUT's response bytes in uppercase hex.
//!
//! The file is streamed: entries are decoded one at a time, so a BERT log (10833 entries of
//! 3 KiB of hex each) never exists twice in memory.

use std::fmt;
use std::io::{BufReader, Read};
use std::path::Path;

use super::AccuracyError;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One logged response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccuracyEntry {
    pub seq_id: u64,
    pub qsl_idx: usize,
    /// The response bytes (`bytes.fromhex(entry["data"])`).
    pub data: Vec<u8>,
}

impl AccuracyEntry {
    /// `data` as the LLM SUTs log it: little-endian int32 token ids.
    pub fn int32_ids(&self) -> Result<Vec<i32>, AccuracyError> {
        if !self.data.len().is_multiple_of(4) {
            return Err(AccuracyError::NotInt32Ids { bytes: self.data.len() });
        }
        Ok(self.data.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }
}

/// One sample's first logged LLM answer: its index, its dataset row and its token ids.
pub struct FirstAnswer<'r, T> {
    pub qsl_idx: usize,
    pub row: &'r T,
    pub ids: Vec<i32>,
}

/// Each sample's first logged LLM answer in log order (the reference evaluations keep the first),
/// with its row of `rows`, and how many answers were logged, repeats included. Errors name the
/// sample: one past the dataset, or bytes that are not int32 ids.
pub fn first_answers<T>(entries: Vec<AccuracyEntry>, rows: &[T]) -> Result<(Vec<FirstAnswer<'_, T>>, usize), AccuracyError> {
    let mut seen = std::collections::HashSet::new();
    let logged = entries.len();
    let mut answers = Vec::new();
    for entry in entries {
        if !seen.insert(entry.qsl_idx) {
            continue;
        }
        let at = |what: AccuracyError| AccuracyError::Sample { qsl_idx: entry.qsl_idx, source: Box::new(what) };
        let row = rows.get(entry.qsl_idx).ok_or_else(|| at(AccuracyError::PastDataset { rows: rows.len() }))?;
        answers.push(FirstAnswer { qsl_idx: entry.qsl_idx, row, ids: entry.int32_ids().map_err(at)? });
    }
    Ok((answers, logged))
}

/// Element types the official scripts decode `data` as (`np.frombuffer(..., dtype)`), little-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogDtype {
    Int8,
    Int16,
    Int32,
    Int64,
    Float16,
    Float32,
    Float64,
}

impl LogDtype {
    pub const ALL: [LogDtype; 7] = [LogDtype::Int8, LogDtype::Int16, LogDtype::Int32, LogDtype::Int64, LogDtype::Float16, LogDtype::Float32, LogDtype::Float64];

    /// The scripts' `--dtype` / `--output_dtype` names.
    pub const fn name(self) -> &'static str {
        match self {
            LogDtype::Int8 => "int8",
            LogDtype::Int16 => "int16",
            LogDtype::Int32 => "int32",
            LogDtype::Int64 => "int64",
            LogDtype::Float16 => "float16",
            LogDtype::Float32 => "float32",
            LogDtype::Float64 => "float64",
        }
    }

    pub fn parse(name: &str) -> Result<LogDtype, AccuracyError> {
        LogDtype::ALL
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| AccuracyError::UnknownDtype { name: name.to_string(), known: LogDtype::ALL.map(|d| d.name()).join(", ") })
    }

    pub const fn size(self) -> usize {
        match self {
            LogDtype::Int8 => 1,
            LogDtype::Int16 | LogDtype::Float16 => 2,
            LogDtype::Int32 | LogDtype::Float32 => 4,
            LogDtype::Int64 | LogDtype::Float64 => 8,
        }
    }

    pub const fn is_float(self) -> bool {
        matches!(self, LogDtype::Float16 | LogDtype::Float32 | LogDtype::Float64)
    }

    /// Element `i` of `bytes` as an `f64` (exact for every type but the largest int64s).
    pub fn get_f64(self, bytes: &[u8], i: usize) -> f64 {
        let b = &bytes[i * self.size()..(i + 1) * self.size()];
        match self {
            LogDtype::Int8 => b[0] as i8 as f64,
            LogDtype::Int16 => i16::from_le_bytes([b[0], b[1]]) as f64,
            LogDtype::Int32 => i32::from_le_bytes(b.try_into().unwrap()) as f64,
            LogDtype::Int64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
            LogDtype::Float16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            LogDtype::Float32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
            LogDtype::Float64 => f64::from_le_bytes(b.try_into().unwrap()),
        }
    }

    /// Element `i` as Python's `int(data[i])`: integers as they are, floats truncated toward
    /// zero; None for NaN and infinities (where `int()` raises).
    pub fn get_int(self, bytes: &[u8], i: usize) -> Option<i64> {
        let b = &bytes[i * self.size()..(i + 1) * self.size()];
        match self {
            LogDtype::Int64 => Some(i64::from_le_bytes(b.try_into().unwrap())),
            _ => {
                let v = self.get_f64(bytes, i);
                v.is_finite().then(|| v.trunc() as i64)
            }
        }
    }
}

impl fmt::Display for LogDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Decodes hex like `bytes.fromhex` (either case; ASCII whitespace between bytes is skipped).
pub fn decode_hex(hex: &str) -> Result<Vec<u8>, AccuracyError> {
    let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(AccuracyError::OddHexDigits(digits.len()));
    }
    let val = |c: u8| -> Result<u8, AccuracyError> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(AccuracyError::NonHex(c as char)),
        }
    };
    digits.chunks(2).map(|p| Ok(val(p[0])? << 4 | val(p[1])?)).collect()
}

/// A caller's refusal of one entry (its own typed error, or a message), carried back inside
/// [`AccuracyError::Json`] with the entry named.
pub type EntryError = Box<dyn std::error::Error + Send + Sync>;

/// Calls `f` for every entry of an accuracy log, in file order; returns the number of entries.
/// Errors name the file and, where known, the entry; `f`'s own errors (a caller's message about
/// an entry) come back inside [`AccuracyError::Json`].
pub fn for_each_entry(path: &Path, f: &mut dyn FnMut(AccuracyEntry) -> Result<(), EntryError>) -> Result<usize, AccuracyError> {
    let file = std::fs::File::open(path).map_err(|source| AccuracyError::OpenLog { path: path.to_path_buf(), source })?;
    read_entries(BufReader::with_capacity(1 << 20, file), f).map_err(|e| AccuracyError::InLog { path: path.to_path_buf(), source: Box::new(e), truncated: looks_truncated(path) })
}

/// All entries of an accuracy log.
pub fn read_accuracy_log(path: &Path) -> Result<Vec<AccuracyEntry>, AccuracyError> {
    let mut out = Vec::new();
    for_each_entry(path, &mut |e| {
        out.push(e);
        Ok(())
    })?;
    Ok(out)
}

/// [`for_each_entry`] on any reader.
pub fn read_entries<R: Read>(reader: R, f: &mut dyn FnMut(AccuracyEntry) -> Result<(), EntryError>) -> Result<usize, AccuracyError> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let count = (&mut de).deserialize_seq(EntriesVisitor { f }).map_err(AccuracyError::Json)?;
    de.end().map_err(AccuracyError::TrailingData)?;
    Ok(count)
}

/// truncate_accuracy_log.py leaves `<first 4096 chars>\n\n...\n\n<last 4096 chars>`.
fn looks_truncated(path: &Path) -> bool {
    std::fs::read(path).map(|b| b.len() < 10240 && b.windows(7).any(|w| w == b"\n\n...\n\n")).unwrap_or(false)
}

struct EntriesVisitor<'a> {
    f: &'a mut dyn FnMut(AccuracyEntry) -> Result<(), EntryError>,
}

impl<'de> Visitor<'de> for EntriesVisitor<'_> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of accuracy log entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0;
        while let Some(entry) = seq.next_element_seed(EntrySeed { index: n })? {
            (self.f)(entry).map_err(de::Error::custom)?;
            n += 1;
        }
        Ok(n)
    }
}

struct EntrySeed {
    index: usize,
}

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = AccuracyEntry;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<AccuracyEntry, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed {
    type Value = AccuracyEntry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "entry {} as {{\"seq_id\", \"qsl_idx\", \"data\"}}", self.index)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AccuracyEntry, A::Error> {
        let (mut seq_id, mut qsl_idx, mut data) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "seq_id" => seq_id = Some(map.next_value::<u64>()?),
                "qsl_idx" => qsl_idx = Some(map.next_value::<u64>()?),
                "data" => {
                    let hex: String = map.next_value()?;
                    data = Some(decode_hex(&hex).map_err(|e| de::Error::custom(format!("entry {}: data: {e}", self.index)))?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let missing = |k: &str| de::Error::custom(format!("entry {} has no \"{k}\"", self.index));
        Ok(AccuracyEntry {
            seq_id: seq_id.ok_or_else(|| missing("seq_id"))?,
            qsl_idx: qsl_idx.ok_or_else(|| missing("qsl_idx"))? as usize,
            data: data.ok_or_else(|| missing("data"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Result<Vec<AccuracyEntry>, AccuracyError> {
        let mut out = Vec::new();
        read_entries(text.as_bytes(), &mut |e| {
            out.push(e);
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn reads_loadgens_format() {
        // Exactly LoadGen's layout: "[\n" entries joined by ",\n", "\n]\n".
        let text = "[\n{ \"seq_id\" : 0, \"qsl_idx\" : 7, \"data\" : \"41000000\" },\n{ \"seq_id\" : 1, \"qsl_idx\" : 3, \"data\" : \"FFFFFFFF\", \"token_count\" : 1 }\n]\n";
        let e = entries(text).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0], AccuracyEntry { seq_id: 0, qsl_idx: 7, data: vec![0x41, 0, 0, 0] });
        assert_eq!(LogDtype::Int32.get_int(&e[1].data, 0), Some(-1));
        // A performance-mode log is an empty array.
        assert_eq!(entries("[\n]\n").unwrap(), vec![]);
    }

    #[test]
    fn errors_name_the_entry() {
        let bad_hex = "[{\"seq_id\": 0, \"qsl_idx\": 0, \"data\": \"ABC\"}]";
        assert!(entries(bad_hex).unwrap_err().to_string().contains("entry 0: data: odd number of hex digits"));
        let missing = "[{\"seq_id\": 0, \"qsl_idx\": 0, \"data\": \"00\"}, {\"seq_id\": 1, \"data\": \"00\"}]";
        assert!(entries(missing).unwrap_err().to_string().contains("entry 1 has no \"qsl_idx\""));
        assert!(entries("[{\"seq_id\": 0, \"qsl_idx\": 0, \"data\": \"00\"}").is_err());
        assert!(entries("{}").unwrap_err().to_string().contains("JSON array"));
    }

    #[test]
    fn truncated_logs_are_recognised() {
        let dir = std::env::temp_dir().join(format!("mlperf-acclog-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mlperf_log_accuracy.json");
        std::fs::write(&path, "[\n{ \"seq_id\" : 0, \"qsl_idx\" : 7, \"da\n\n...\n\n1 }\n]\n").unwrap();
        let e = read_accuracy_log(&path).unwrap_err().to_string();
        assert!(e.contains("mlperf_log_accuracy.json") && e.contains("truncate_accuracy_log.py"), "{e}");
        assert!(read_accuracy_log(&dir.join("absent.json")).unwrap_err().to_string().contains("cannot open"));
    }

    #[test]
    fn dtypes_decode_like_numpy() {
        assert_eq!(decode_hex("0aFf").unwrap(), vec![10, 255]);
        assert!(decode_hex("0g").unwrap_err().to_string().contains("non-hex"));
        let f = (-2.75f32).to_le_bytes();
        assert_eq!(LogDtype::Float32.get_f64(&f, 0), -2.75);
        assert_eq!(LogDtype::Float32.get_int(&f, 0), Some(-2), "int() truncates toward zero");
        assert_eq!(LogDtype::Float32.get_int(&f32::NAN.to_le_bytes(), 0), None);
        let h = half::f16::from_f32(1.5).to_le_bytes();
        assert_eq!(LogDtype::Float16.get_f64(&h, 0), 1.5);
        assert_eq!(LogDtype::Int64.get_int(&i64::MIN.to_le_bytes(), 0), Some(i64::MIN));
        assert_eq!(LogDtype::parse("float16").unwrap(), LogDtype::Float16);
        assert!(LogDtype::parse("fp16").unwrap_err().to_string().contains("float16"));
    }
}
