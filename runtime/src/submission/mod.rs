//! From runs to a submission: the round's tree layout, staging, truncation, export and packing.

pub mod layout;
