//! Power measurement (MaxQ) through the MLCommons power workflow: reading the session the
//! power-dev client writes and computing the round's power metric from it.

pub mod metric;
pub mod rules;
pub mod session;

#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod tests;
