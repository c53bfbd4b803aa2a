//! A power-dev checkout against the round's accepted source set, before anything runs: power-dev's
//! client and server record the SHA-1 of every `.py` file under `ptd_client_server/`
//! (`lib/source_hashes.py` `get_sources_checksum`) and the power checker accepts only the one set
//! in `sources_checksums.json`, so a wrong revision or one edited file would void the result after
//! the whole run.

use super::error::{PowerError, SourceDiff};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The power-dev revision whose sources the round accepts (inference b66003e's
/// checks/power/sources_checksums.json holds power-dev a0dcb24 onward; c4b3ad8 is its head).
pub const ACCEPTED_COMMIT: &str = "c4b3ad8";
/// The accepted source sets, as the submission checker ships them.
pub(crate) const ACCEPTED_SOURCES: &str = include_str!("sources_checksums.json");
/// The folder of a power-dev checkout that is hashed.
const CLIENT_SERVER: &str = "ptd_client_server";
/// Directories power-dev's walk leaves out.
const SKIPPED: [&str; 3] = ["__pycache__", ".mypy_cache", ".pytest_cache"];

/// Relative path (with `/`) to lowercase hex SHA-1.
pub type Checksums = BTreeMap<String, String>;

/// Lowercase hex SHA-1, as power-dev's sources map and summaries record it.
pub(crate) fn sha1_hex(bytes: &[u8]) -> String {
    use sha1::Digest;
    sha1::Sha1::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The accepted sets.
pub fn accepted() -> Vec<Checksums> {
    serde_json::from_str(ACCEPTED_SOURCES).expect("the embedded accepted set is a list of maps")
}

/// The `ptd_client_server/` folder of a checkout named by its root or by that folder itself.
pub fn client_server_dir(checkout: &Path) -> Result<PathBuf, PowerError> {
    let marker = Path::new("lib").join("source_hashes.py");
    [checkout.join(CLIENT_SERVER), checkout.to_path_buf()]
        .into_iter()
        .find(|dir| dir.join(&marker).is_file())
        .ok_or_else(|| PowerError::NotACheckout { path: checkout.to_path_buf(), commit: ACCEPTED_COMMIT })
}

/// The SHA-1 of every `.py` file under `dir`, as power-dev computes them, and the files with CR
/// bytes (which power-dev refuses to start with).
pub fn checksums(dir: &Path) -> Result<(Checksums, Vec<String>), PowerError> {
    let mut sums = Checksums::new();
    let mut crlf = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((path, rel)) = pending.pop() {
        let entries = std::fs::read_dir(&path).map_err(|source| PowerError::Read { path: path.clone(), source })?;
        for entry in entries {
            let entry = entry.map_err(|source| PowerError::Read { path: path.clone(), source })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let file_rel = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            // os.walk does not descend into linked directories; linked files are read.
            let kind = entry.file_type().map_err(|source| PowerError::Read { path: entry.path(), source })?;
            if kind.is_dir() {
                if !SKIPPED.contains(&name.as_str()) {
                    pending.push((entry.path(), file_rel));
                }
            } else if name.ends_with(".py") {
                let bytes = std::fs::read(entry.path()).map_err(|source| PowerError::Read { path: entry.path(), source })?;
                if bytes.contains(&b'\r') {
                    crlf.push(file_rel.clone());
                }
                sums.insert(file_rel, sha1_hex(&bytes));
            }
        }
    }
    Ok((sums, crlf))
}

/// How `found` differs from `accepted`, file by file in path order.
pub fn diff(found: &Checksums, crlf: &[String], accepted: &Checksums) -> Vec<SourceDiff> {
    let mut diffs: Vec<SourceDiff> = crlf.iter().map(|file| SourceDiff::Crlf { file: file.clone() }).collect();
    for (file, want) in accepted {
        match found.get(file) {
            None => diffs.push(SourceDiff::Missing { file: file.clone() }),
            Some(sha1) if sha1 != want => diffs.push(SourceDiff::Modified { file: file.clone(), sha1: sha1.clone(), accepted: want.clone() }),
            Some(_) => {}
        }
    }
    diffs.extend(found.keys().filter(|f| !accepted.contains_key(*f)).map(|file| SourceDiff::Extra { file: file.clone() }));
    diffs
}

/// Checks a checkout (its root or its `ptd_client_server/`) against the accepted sets; returns
/// its `ptd_client_server/` folder, or every difference from the nearest accepted set.
pub fn check_checkout(checkout: &Path) -> Result<PathBuf, PowerError> {
    let dir = client_server_dir(checkout)?;
    let (found, crlf) = checksums(&dir)?;
    let nearest = accepted().iter().map(|set| diff(&found, &crlf, set)).min_by_key(Vec::len).unwrap_or_default();
    if nearest.is_empty() { Ok(dir) } else { Err(PowerError::Sources { dir, diffs: nearest, commit: ACCEPTED_COMMIT }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::fixture::tempdir;

    /// A tree with the accepted set's file names whose contents hash to `sums`: the test's own
    /// files, so the accepted set is replaced by theirs.
    fn tree(root: &Path, files: &[(&str, &str)]) -> Checksums {
        let dir = root.join(CLIENT_SERVER);
        for (rel, text) in files {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("lib/source_hashes.py"), "# hashes\n").unwrap();
        std::fs::write(dir.join("README.md"), "not hashed\n").unwrap();
        checksums(&dir).unwrap().0
    }

    const FILES: [(&str, &str); 4] = [("__init__.py", ""), ("client.py", "print('client')\n"), ("lib/server.py", "print('server')\n"), ("lib/external/ntplib.py", "x = 1\n")];

    #[test]
    fn checksums_are_sha1_of_every_py_file_by_relative_path() {
        let root = tempdir("sources-sums");
        let sums = tree(&root, &FILES);
        // sha1 of the empty file, and `printf "print('client')\n" | sha1sum`.
        assert_eq!(sums["__init__.py"], "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sums["client.py"], sha1_hex(b"print('client')\n"));
        assert_eq!(sums.keys().collect::<Vec<_>>(), ["__init__.py", "client.py", "lib/external/ntplib.py", "lib/server.py", "lib/source_hashes.py"]);
        // Caches are not walked, as power-dev's walk leaves them out.
        std::fs::create_dir_all(root.join(CLIENT_SERVER).join("lib/__pycache__")).unwrap();
        std::fs::write(root.join(CLIENT_SERVER).join("lib/__pycache__/server.py"), "cached").unwrap();
        assert_eq!(checksums(&root.join(CLIENT_SERVER)).unwrap().0, sums);
    }

    #[test]
    fn each_difference_is_named_file_by_file() {
        let root = tempdir("sources-diff");
        let accepted = tree(&root, &FILES);
        let dir = root.join(CLIENT_SERVER);
        std::fs::write(dir.join("lib/server.py"), "print('edited')\n").unwrap();
        std::fs::remove_file(dir.join("client.py")).unwrap();
        std::fs::write(dir.join("lib/extra.py"), "").unwrap();
        std::fs::write(dir.join("lib/external/ntplib.py"), "x = 1\r\n").unwrap();
        let (found, crlf) = checksums(&dir).unwrap();
        let diffs = diff(&found, &crlf, &accepted);
        assert_eq!(
            diffs,
            [
                SourceDiff::Crlf { file: "lib/external/ntplib.py".into() },
                SourceDiff::Missing { file: "client.py".into() },
                SourceDiff::Modified { file: "lib/external/ntplib.py".into(), sha1: sha1_hex(b"x = 1\r\n"), accepted: sha1_hex(b"x = 1\n") },
                SourceDiff::Modified { file: "lib/server.py".into(), sha1: sha1_hex(b"print('edited')\n"), accepted: sha1_hex(b"print('server')\n") },
                SourceDiff::Extra { file: "lib/extra.py".into() },
            ]
        );
        assert!(diff(&accepted, &[], &accepted).is_empty());
    }

    #[test]
    fn a_generated_checkout_is_refused_naming_the_files_and_the_accepted_commit() {
        let root = tempdir("sources-refused");
        tree(&root, &FILES);
        let e = check_checkout(&root).unwrap_err();
        let text = e.to_string();
        assert!(matches!(&e, PowerError::Sources { diffs, .. } if diffs.contains(&SourceDiff::Missing { file: "lib/summary.py".into() })), "{text}");
        // The empty __init__.py files are the accepted ones; what differs is named with both sums.
        assert!(!text.contains("\n  __init__.py"), "{text}");
        assert!(text.contains("lib/server.py: sha1 ") && text.contains("accepted 9bc9a3b6b9b716520658ac175913bcbbdb354336"), "{text}");
        assert!(text.contains("at c4b3ad8"), "{text}");
        assert_eq!(crate::Error::from(e).exit_code(), crate::error::exit::DATA);
        let not = check_checkout(&root.join("nowhere")).unwrap_err();
        assert!(matches!(not, PowerError::NotACheckout { .. }), "{not}");
    }

    /// On a real checkout: `git -C <power-dev mirror> worktree add /tmp/power-dev c4b3ad8`, then
    /// `MLPERF_POWER_DEV=/tmp/power-dev cargo test --release -p mlperf-runtime --lib -- --ignored real_checkout`.
    #[test]
    #[ignore = "needs a power-dev checkout (env MLPERF_POWER_DEV)"]
    fn a_real_checkout_of_the_accepted_commit_passes_and_an_edit_is_named() {
        let checkout = PathBuf::from(std::env::var("MLPERF_POWER_DEV").expect("MLPERF_POWER_DEV=/path/to/power-dev checkout at c4b3ad8"));
        let dir = check_checkout(&checkout).unwrap();
        // A copy with one edited file fails naming it.
        let copy = tempdir("sources-real-copy").join(CLIENT_SERVER);
        let (sums, _) = checksums(&dir).unwrap();
        for rel in sums.keys() {
            std::fs::create_dir_all(copy.join(rel).parent().unwrap()).unwrap();
            std::fs::copy(dir.join(rel), copy.join(rel)).unwrap();
        }
        check_checkout(&copy).unwrap();
        let mut server = std::fs::read(copy.join("lib/server.py")).unwrap();
        server.extend_from_slice(b"# edited\n");
        std::fs::write(copy.join("lib/server.py"), server).unwrap();
        let e = check_checkout(&copy).unwrap_err();
        assert!(matches!(&e, PowerError::Sources { diffs, .. } if diffs.len() == 1 && matches!(&diffs[0], SourceDiff::Modified { file, .. } if file == "lib/server.py")), "{e}");
    }
}
