//! Log lines from a plugin into the host's structured logs.
//!
//! Inside a component, lines go to the host through the `host-log` import (the host
//! attaches the plugin's name and bounds the volume). In native unit tests there is
//! no host: lines are printed to stderr and kept per thread, see [`take_captured`].
//!
//! ```
//! let count = 3;
//! syncweave_plugin::log!(info, "rewrote {} labels", count);
//! # assert_eq!(syncweave_plugin::log::take_captured().len(), 1);
//! ```
use std::sync::OnceLock;

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

static SINK: OnceLock<fn(Level, &str)> = OnceLock::new();

/// Routes log lines to the host. Called by the export glue before any plugin code runs.
#[doc(hidden)]
pub fn install_sink(sink: fn(Level, &str)) {
    // The sink is the same function on every call, so losing the race is harmless.
    let _ = SINK.set(sink);
}

/// Sends one line to the host's log.
pub fn log(level: Level, message: &str) {
    match SINK.get() {
        Some(sink) => sink(level, message),
        None => capture(level, message),
    }
}

pub fn trace(message: &str) {
    log(Level::Trace, message)
}
pub fn debug(message: &str) {
    log(Level::Debug, message)
}
pub fn info(message: &str) {
    log(Level::Info, message)
}
pub fn warn(message: &str) {
    log(Level::Warn, message)
}
pub fn error(message: &str) {
    log(Level::Error, message)
}

/// `log!(info, "format {}", args)`: formats and logs at the given level
/// (`trace`, `debug`, `info`, `warn` or `error`).
#[macro_export]
macro_rules! log {
    (trace, $($arg:tt)+) => { $crate::log::log($crate::log::Level::Trace, &::std::format!($($arg)+)) };
    (debug, $($arg:tt)+) => { $crate::log::log($crate::log::Level::Debug, &::std::format!($($arg)+)) };
    (info, $($arg:tt)+) => { $crate::log::log($crate::log::Level::Info, &::std::format!($($arg)+)) };
    (warn, $($arg:tt)+) => { $crate::log::log($crate::log::Level::Warn, &::std::format!($($arg)+)) };
    (error, $($arg:tt)+) => { $crate::log::log($crate::log::Level::Error, &::std::format!($($arg)+)) };
}

thread_local! {
    static CAPTURED: std::cell::RefCell<Vec<(Level, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn capture(level: Level, message: &str) {
    eprintln!("[plugin {level:?}] {message}");
    CAPTURED.with(|c| c.borrow_mut().push((level, message.to_string())));
}

/// Lines logged on this thread while no host was attached (native tests), oldest
/// first; clears the buffer.
pub fn take_captured() -> Vec<(Level, String)> {
    CAPTURED.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_lines_without_a_host() {
        take_captured();
        info("hello");
        crate::log!(warn, "{} widgets", 3);
        assert_eq!(
            take_captured(),
            vec![
                (Level::Info, "hello".to_string()),
                (Level::Warn, "3 widgets".to_string())
            ]
        );
        assert!(take_captured().is_empty());
    }
}
