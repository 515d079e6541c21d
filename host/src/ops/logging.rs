//! Logging setup: JSON or console to stderr, like upstream's zap config.
use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// Log output format, as upstream: `JSON` (default) or `Console`, any case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "verbatim")]
pub enum LogFormat {
    #[value(name = "JSON", alias = "json", alias = "Json")]
    Json,
    #[value(name = "Console", alias = "console", alias = "CONSOLE")]
    Console,
}

/// Install the global subscriber (`--log-format`, `--log-debug`).
pub fn init(format: LogFormat, debug: bool) {
    let default = if debug { "debug" } else { "info" };
    // Our crates log at the chosen level; noisy dependencies stay at warn
    // unless RUST_LOG says otherwise. kube's client logs every failed
    // request at error level without saying which object it was for; the
    // agent reports each failure itself, with its context and repeats
    // summarised, so that line would only multiply an outage's log.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "warn,kube_client::client::builder=off,syncweave={default},syncweave_runtime={default},plugin={default}"
        ))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Console => builder.compact().init(),
    }
}
