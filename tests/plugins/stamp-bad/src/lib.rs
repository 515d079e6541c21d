//! Test mutator "stamp", a broken v3: it labels objects `stamp: v3`, but
//! its example still expects `stamp: v2`, so the self-test gate refuses it.

const VERSION: &str = "v3";
const EXPECTED: &str = "v2";
include!("../../stamp-v1/src/stamp.rs");
