//! The command line: [`args`] defines the flags (clap, every enumerated flag typed by
//! [`parsers`]), [`resolve`] turns them once into the runtime's resolved selection and requests,
//! [`commands`] calls the runtime and prints.

mod args;
mod commands;
mod parsers;
mod resolve;

pub use args::Cli;
pub use commands::{run, start_logging};
pub use resolve::split_overrides;
