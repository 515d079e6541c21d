//! Logging setup: JSON or console to stderr, like upstream's zap config.
use crate::cli::{CommonArgs, LogFormat};
use tracing_subscriber::EnvFilter;

pub fn init(common: &CommonArgs) {
    let default = if common.log_debug { "debug" } else { "info" };
    // Our crates log at the chosen level; noisy dependencies stay at warn
    // unless RUST_LOG says otherwise.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "warn,syncweave={default},syncweave_runtime={default},plugin={default}"
        ))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match common.log_format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Console => builder.compact().init(),
    }
}
