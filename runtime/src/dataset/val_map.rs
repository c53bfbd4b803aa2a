//! NVIDIA's val maps (`data_maps/<dataset>/val_map.txt`): one sample a line, its file name and,
//! where the set has one, its label (`cal_map.txt` lines hold the file only). The file order is the
//! QSL's sample order.

use super::{DataError, ValMapProblem};
use std::path::Path;

/// One line of a `val_map.txt`: `<file> <label>` (NVIDIA's `cal_map.txt` lines hold the
/// file only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValMapEntry {
    pub name: String,
    pub label: Option<i64>,
}

/// Reads a val map. Like the official scripts, columns are split on whitespace; the file order is
/// the QSL sample order. Blank lines are refused except at the end (they would shift every later
/// sample index); errors name the file and line.
pub fn read_val_map(path: &Path) -> Result<Vec<ValMapEntry>, DataError> {
    let text = std::fs::read_to_string(path).map_err(|source| DataError::ReadValMap { path: path.to_path_buf(), source })?;
    parse_val_map(&text).map_err(|e| DataError::InValMap { path: path.to_path_buf(), source: Box::new(e) })
}

/// [`read_val_map`] on text; errors start with the line number.
pub fn parse_val_map(text: &str) -> Result<Vec<ValMapEntry>, DataError> {
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.iter().rposition(|l| !l.trim().is_empty()).map_or(0, |i| i + 1);
    let mut out = Vec::with_capacity(last);
    for (i, line) in lines[..last].iter().enumerate() {
        let mut cols = line.split_whitespace();
        let name = cols.next().ok_or(DataError::ValMapLine { line: i + 1, problem: ValMapProblem::BlankLine })?;
        let label = match cols.next() {
            None => None,
            Some(l) => Some(l.parse::<i64>().map_err(|_| DataError::ValMapLine { line: i + 1, problem: ValMapProblem::LabelNotInteger(l.to_string()) })?),
        };
        out.push(ValMapEntry { name: name.to_string(), label });
    }
    Ok(out)
}

/// The per-sample file of a val-map name: `<name>.npy`, or the name itself when it already is a
/// `.npy` file.
pub fn sample_file_name(name: &str) -> String {
    if name.ends_with(".npy") { name.to_string() } else { format!("{name}.npy") }
}
