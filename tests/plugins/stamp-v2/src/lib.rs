//! Test mutator "stamp", version v2: labels objects `stamp: v2`, and its
//! example says so (it passes the self-test).

const VERSION: &str = "v2";
const EXPECTED: &str = "v2";
include!("../../stamp-v1/src/stamp.rs");
