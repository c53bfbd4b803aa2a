//! Engines behind the harness's `Engine` trait.
