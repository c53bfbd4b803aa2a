#!/usr/bin/env bash
# The test suite, as the README gives it and CI runs it: formatting, lints (every warning is an
# error), then every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --release --workspace
