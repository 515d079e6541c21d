//! Build version information.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The plugin contract version this host speaks.
pub const WIT_PACKAGE: &str = "syncweave:plugin@0.1.0";
