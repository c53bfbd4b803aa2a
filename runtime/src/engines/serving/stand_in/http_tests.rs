//! HTTP tests of the stand-in.
