//! The checker's rules, one file per concern; each reads one part of a result directory and
//! reports [`super::Finding`]s. They share only [`super::common`] (compliance also runs the
//! performance rules on an audit's performance run, which compare its summary with [`summary`]).

pub(crate) mod accuracy;
pub(crate) mod compliance;
pub(crate) mod files;
pub(crate) mod performance;
pub(crate) mod summary;
pub(crate) mod system;
