//! Test mutator "stamp", version v1: labels objects `stamp: v1`, and its
//! example says so (it passes the self-test).

const VERSION: &str = "v1";
const EXPECTED: &str = "v1";
include!("stamp.rs");
