//! Scratch space, preprocessing and sample libraries.
