//! Builds the official MLCommons LoadGen from its PyPI source package.
//!
//! 1. Obtain `mlcommons_loadgen-<ver>.tar.gz` for every pinned version: from
//!    `$MLPERF_LOADGEN_SDIST_DIR` when set (offline builds), else with
//!    `python3 -m pip download` into `$OUT_DIR/sdist`.
//! 2. Verify each tarball's sha256 against the pin below.
//! 3. Unpack it into `$OUT_DIR/loadgen-<ver>/`; copy its `mlperf.conf` to
//!    `$OUT_DIR/mlperf-<ver>.conf` (embedded by `src/lib.rs`).
//! 4. Compile the library sources of the *linked* version exactly as shipped,
//!    plus our shim, into one static library; link stdc++ and pthread.

use std::env;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// Environment variable naming a directory that holds the sdist tarballs.
const SDIST_DIR_ENV: &str = "MLPERF_LOADGEN_SDIST_DIR";

/// Pinned LoadGen source packages: (version, sha256 of the PyPI sdist).
const PINS: [(&str, &str); 2] = [
    // Round v5.1.
    ("5.1.2", "cd686a6223c978d1056e38a417e4807bfa21c855189f7882d24c8313174bca74"),
    // Round v6.1 (default).
    ("6.0.17", "a2e85d09e3cc0c606f89bfe1fbf97537c8b5b238ae0afbd923ad9c710fcf2ca8"),
];

/// LoadGen library sources, as listed by the sdist's setup.py (the pybind11
/// binding `bindings/python_api.cc` is left out).
const LOADGEN_SOURCES: [&str; 10] = [
    "early_stopping.cc",
    "issue_query_controller.cc",
    "loadgen.cc",
    "logging.cc",
    "test_settings_internal.cc",
    "utils.cc",
    "version.cc",
    "results.cc",
    "bindings/c_api.cc",
    "generated/version_generated.cc",
];

/// Our own C++ sources, compiled into the same static library.
const SHIM_SOURCES: [&str; 2] = ["shim/lg_shim.cc", "shim/lg_null_sut.cc"];
const SHIM_HEADERS: [&str; 1] = ["shim/lg_shim.h"];

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?);
    let linked = if env::var_os("CARGO_FEATURE_LOADGEN_5_1").is_some() { "5.1.2" } else { "6.0.17" };

    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed={SDIST_DIR_ENV}");
    for file in SHIM_SOURCES.iter().chain(&SHIM_HEADERS) {
        println!("cargo::rerun-if-changed={file}");
    }

    let mut linked_root = None;
    for (version, sha256) in PINS {
        let (tarball, downloaded) = obtain_sdist(version, &out_dir)?;
        verify_sha256(&tarball, version, sha256, downloaded)?;
        let root = unpack(&tarball, version, &out_dir)?;
        let conf = root.join("mlperf.conf");
        fs::copy(&conf, out_dir.join(format!("mlperf-{version}.conf"))).map_err(|e| format!("copying {}: {e}", conf.display()))?;
        if version == linked {
            linked_root = Some(root);
        }
    }
    let root = linked_root.ok_or_else(|| format!("no pin for LoadGen {linked}"))?;

    fs::write(
        out_dir.join("linked_version.rs"),
        format!(
            "/// Version of the LoadGen library linked into this build.\n\
             pub const LINKED_VERSION: &str = \"{linked}\";\n"
        ),
    )
    .map_err(|e| format!("writing linked_version.rs: {e}"))?;

    compile(&root, linked);
    Ok(())
}

fn sdist_file_name(version: &str) -> String {
    format!("mlcommons_loadgen-{version}.tar.gz")
}

/// Returns the path of the tarball and whether it was downloaded (with pip,
/// unless `$MLPERF_LOADGEN_SDIST_DIR` is set).
fn obtain_sdist(version: &str, out_dir: &Path) -> Result<(PathBuf, bool), String> {
    let name = sdist_file_name(version);
    if let Some(dir) = env::var_os(SDIST_DIR_ENV) {
        let path = PathBuf::from(dir).join(&name);
        println!("cargo::rerun-if-changed={}", path.display());
        if !path.is_file() {
            return Err(format!(
                "{} not found; {SDIST_DIR_ENV} must name a directory holding {name}\n\
                 (get it with: python3 -m pip download mlcommons-loadgen=={version} \
                 --no-binary :all: --no-deps -d \"${SDIST_DIR_ENV}\")",
                path.display()
            ));
        }
        return Ok((path, false));
    }

    let dir = out_dir.join("sdist");
    let path = dir.join(&name);
    if path.is_file() {
        return Ok((path, true));
    }
    let output = Command::new("python3")
        .args(["-m", "pip", "download"])
        .arg(format!("mlcommons-loadgen=={version}"))
        .args(["--no-binary", ":all:", "--no-deps", "--disable-pip-version-check", "-d"])
        .arg(&dir)
        .output();
    let detail = match output {
        Ok(out) if out.status.success() && path.is_file() => return Ok((path, true)),
        Ok(out) => format!("pip exited with {}:\n{}", out.status, String::from_utf8_lossy(&out.stderr).trim_end()),
        Err(e) => format!("could not run python3: {e}"),
    };
    Err(format!(
        "could not download {name} (LoadGen {version} source package) from PyPI: {detail}\n\
         For offline builds put {name} in a directory and set {SDIST_DIR_ENV} to it."
    ))
}

/// Checks the tarball's sha256; a bad download is deleted so the next build
/// fetches it again.
fn verify_sha256(path: &Path, version: &str, expected: &str, downloaded: bool) -> Result<(), String> {
    let mut file = fs::File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(|e| format!("reading {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let actual: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if actual == expected {
        return Ok(());
    }
    let fix = if downloaded {
        let _ = fs::remove_file(path);
        format!(
            "The downloaded file was deleted; build again to retry, or set {SDIST_DIR_ENV} to a \
             directory holding the genuine PyPI source package."
        )
    } else {
        format!(
            "Replace it with the genuine PyPI source package (python3 -m pip download \
             mlcommons-loadgen=={version} --no-binary :all: --no-deps -d <dir>), or unset \
             {SDIST_DIR_ENV} to download it."
        )
    };
    Err(format!("checksum mismatch for {}\n  expected sha256 {expected}\n  actual   sha256 {actual}\n{fix}", path.display()))
}

/// Unpacks the tarball into a fresh `$OUT_DIR/loadgen-<ver>/` and returns the
/// sdist root (the directory holding `loadgen.h`).
fn unpack(tarball: &Path, version: &str, out_dir: &Path) -> Result<PathBuf, String> {
    let dest = out_dir.join(format!("loadgen-{version}"));
    if dest.exists() {
        fs::remove_dir_all(&dest).map_err(|e| format!("cleaning {}: {e}", dest.display()))?;
    }
    let file = fs::File::open(tarball).map_err(|e| format!("opening {}: {e}", tarball.display()))?;
    tar::Archive::new(flate2::read::GzDecoder::new(file)).unpack(&dest).map_err(|e| format!("unpacking {}: {e}", tarball.display()))?;
    let root = dest.join(format!("mlcommons_loadgen-{version}"));
    if !root.join("loadgen.h").is_file() {
        return Err(format!("{} does not contain mlcommons_loadgen-{version}/loadgen.h", tarball.display()));
    }
    Ok(root)
}

fn compile(root: &Path, version: &str) {
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .cpp_link_stdlib("stdc++")
        .flag("-std=c++14")
        .opt_level(2)
        .debug(false)
        .warnings(true)
        .flag("-Wno-unused-parameter")
        .include(root)
        .files(LOADGEN_SOURCES.iter().map(|f| root.join(f)))
        .files(SHIM_SOURCES);
    if version != "5.1.2" {
        build.define("LG_SHIM_HAS_ACCURACY_SAMPLE_COUNT_OVERRIDE", None);
    }
    build.compile("mlperf_loadgen_cxx");
    println!("cargo::rustc-link-lib=pthread");
}
