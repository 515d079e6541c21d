//! How a plugin call or load can fail, always with the plugin's identity.

use std::fmt;

/// The guest's own `plugin-error` variant, by case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PluginErrorKind {
    /// The plugin's config is unusable: the user must fix the config.
    InvalidConfig,
    /// The input object lacks the shape the plugin needs.
    InvalidInput,
    /// The plugin deliberately refuses this object.
    Rejected,
    /// A bug or unexpected condition inside the plugin.
    Internal,
}

impl PluginErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PluginErrorKind::InvalidConfig => "invalid config",
            PluginErrorKind::InvalidInput => "invalid input",
            PluginErrorKind::Rejected => "rejected",
            PluginErrorKind::Internal => "internal error",
        }
    }
}

/// What went wrong, coarse enough for callers to decide (retry, report to
/// the user, mark the plugin unhealthy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The call ran past its time limit and was interrupted.
    Timeout,
    /// The guest tried to grow its memory beyond the limit.
    MemoryLimit,
    /// The guest returned its `plugin-error` variant.
    PluginError(PluginErrorKind),
    /// The guest trapped (panic, unreachable, stack overflow, …).
    Crash,
    /// The guest returned something the host cannot accept.
    BadOutput,
    /// The component could not be compiled, cached or linked.
    Load,
    /// The component does not implement the world the caller needs.
    WrongWorld,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Timeout => "timeout",
            FailureKind::MemoryLimit => "memory limit",
            FailureKind::PluginError(k) => k.as_str(),
            FailureKind::Crash => "crash",
            FailureKind::BadOutput => "bad output",
            FailureKind::Load => "load failed",
            FailureKind::WrongWorld => "wrong world",
        }
    }

    /// Whether retrying the same input can help: only a timeout might (the
    /// machine may have been busy); everything else is deterministic.
    pub fn is_transient(self) -> bool {
        matches!(self, FailureKind::Timeout)
    }

    /// Every kind, for parsing [`FailureKind::as_str`] back.
    pub const ALL: [FailureKind; 10] = [
        FailureKind::Timeout,
        FailureKind::MemoryLimit,
        FailureKind::PluginError(PluginErrorKind::InvalidConfig),
        FailureKind::PluginError(PluginErrorKind::InvalidInput),
        FailureKind::PluginError(PluginErrorKind::Rejected),
        FailureKind::PluginError(PluginErrorKind::Internal),
        FailureKind::Crash,
        FailureKind::BadOutput,
        FailureKind::Load,
        FailureKind::WrongWorld,
    ];

    /// The kind whose [`FailureKind::as_str`] is `s`.
    pub fn parse(s: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A failed plugin load or call: `plugin "naming" (sha256:ab12…): timeout: call exceeded 100ms`.
#[derive(Debug, Clone, thiserror::Error)]
pub struct PluginFailure {
    pub plugin: String,
    /// `sha256:<hex>`; empty when the bytes were never read.
    pub digest: String,
    pub kind: FailureKind,
    pub message: String,
    /// Where in the guest it happened, when the failure was a trap (a
    /// crash, a timeout, the memory limit): wasmtime's backtrace, with
    /// function names from the component's name section (and source lines
    /// when the runtime reads DWARF: [`crate::RuntimeConfig::backtrace_details`]).
    /// A crash's message carries it too; a timeout's does not, to keep
    /// Events short.
    pub backtrace: Option<String>,
}

impl PluginFailure {
    pub fn new(
        plugin: impl Into<String>,
        digest: impl Into<String>,
        kind: FailureKind,
        message: impl Into<String>,
    ) -> Self {
        PluginFailure {
            plugin: plugin.into(),
            digest: digest.into(),
            kind,
            message: message.into(),
            backtrace: None,
        }
    }

    /// The first line of the message: what a capture and its replay compare
    /// (a crash's backtrace below it may gain source lines in a replay).
    pub fn headline(&self) -> &str {
        self.message.lines().next().unwrap_or_default()
    }

    /// Whether this failure came from running the guest on an input (a
    /// trap, a timeout, the memory limit, the guest's own error, an output
    /// the host refused), as opposed to loading or wiring it up: the
    /// failures worth keeping the input of, to replay.
    pub fn is_call_failure(&self) -> bool {
        matches!(
            self.kind,
            FailureKind::Timeout
                | FailureKind::MemoryLimit
                | FailureKind::PluginError(_)
                | FailureKind::Crash
                | FailureKind::BadOutput
        )
    }
}

/// The first 12 hex digits are plenty to tell plugins apart in a log line.
pub(crate) fn short_digest(digest: &str) -> String {
    match digest.split_once(':') {
        Some((algo, hex)) if hex.len() > 12 => format!("{algo}:{}…", &hex[..12]),
        _ => digest.to_string(),
    }
}

impl fmt::Display for PluginFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "plugin {:?}", self.plugin)?;
        if !self.digest.is_empty() {
            write!(f, " ({})", short_digest(&self.digest))?;
        }
        write!(f, ": {}: {}", self.kind.as_str(), self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_plugin_digest_and_kind() {
        let f = PluginFailure::new(
            "naming",
            format!("sha256:{}", "ab12".repeat(16)),
            FailureKind::Timeout,
            "call exceeded 100ms",
        );
        assert_eq!(
            f.to_string(),
            "plugin \"naming\" (sha256:ab12ab12ab12…): timeout: call exceeded 100ms"
        );
        let f = PluginFailure::new(
            "x",
            "",
            FailureKind::PluginError(PluginErrorKind::InvalidConfig),
            "field y",
        );
        assert_eq!(f.to_string(), "plugin \"x\": invalid config: field y");
    }

    #[test]
    fn kinds_parse_back_from_their_names() {
        for k in FailureKind::ALL {
            assert_eq!(FailureKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(FailureKind::parse("nope"), None);
    }

    #[test]
    fn only_timeouts_are_transient() {
        assert!(FailureKind::Timeout.is_transient());
        assert!(!FailureKind::Crash.is_transient());
        assert!(!FailureKind::PluginError(PluginErrorKind::Rejected).is_transient());
    }
}
