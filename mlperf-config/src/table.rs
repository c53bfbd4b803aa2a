//! The compiled tables: what build.rs bakes into the binary and the runtime reads.

use crate::round::Round;
use crate::schema::Settings;
use crate::system::SystemInfo;
use crate::types::{Scenario, Workload};
use config_macros::Bake;
use std::borrow::Cow;

type Str = Cow<'static, str>;

/// `file:line:col` of a value or section in the config sources.
#[derive(Debug, Clone, PartialEq, Bake)]
pub struct Origin {
    pub file: Str,
    pub line: u32,
    pub col: u32,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// An earlier value that a later file overrode.
#[derive(Debug, Clone, PartialEq, Bake)]
pub struct Overridden {
    pub value: Str,
    pub at: Origin,
}

/// Where a resolved field's value was set, and what it overrode (oldest first).
#[derive(Debug, Clone, PartialEq, Bake)]
pub struct FieldOrigin {
    pub field: Str,
    pub value: Str,
    pub at: Origin,
    pub overrode: Cow<'static, [Overridden]>,
}

/// One resolved `(system, benchmark, scenario, workload)`.
#[derive(Debug, Clone, Bake)]
pub struct CompiledConfig {
    pub system: Str,
    pub benchmark: Str,
    pub scenario: Scenario,
    pub workload: Workload,
    /// Rounds in which this config is a valid submission config.
    pub rounds: Cow<'static, [Str]>,
    pub settings: Settings,
    pub provenance: Cow<'static, [FieldOrigin]>,
    /// The section that defines it.
    pub defined_at: Origin,
}

impl CompiledConfig {
    pub fn origin_of(&self, field: &str) -> Option<&FieldOrigin> {
        self.provenance.iter().find(|p| p.field == field)
    }
}

/// Everything a binary holds.
#[derive(Debug, Clone, Copy)]
pub struct Tables {
    pub rounds: &'static [Round],
    pub systems: &'static [SystemInfo],
    pub configs: &'static [CompiledConfig],
    /// The system a `--features system-*` build is locked to; None in the development build.
    pub locked_system: Option<&'static str>,
}

impl Tables {
    /// The default round (the first in the table: build.rs orders v6.1 first).
    pub fn default_round(&self) -> &'static Round {
        &self.rounds[0]
    }

    pub fn round(&self, id: &str) -> Option<&'static Round> {
        self.rounds.iter().find(|r| r.id == id)
    }

    pub fn system(&self, id: &str) -> Option<&'static SystemInfo> {
        self.systems.iter().find(|s| s.id == id)
    }

    pub fn configs_for<'a>(&'a self, system: &'a str) -> impl Iterator<Item = &'static CompiledConfig> + 'a {
        self.configs.iter().filter(move |c| c.system == system)
    }
}
