//! Where a plugin comes from: references as users write them.
//!
//! Today a reference is a built-in name (`naming`), a path (`./x.wasm`,
//! `/abs/x.wasm`) or a `file://` URL. Remote sources (`https://`, `oci://`,
//! `configmap://`) are recognised so users get a precise "not yet" instead
//! of a confusing "no such built-in", and new variants slot into
//! [`PluginRef`] and [`Runtime::load_ref`] without touching callers.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::failure::{FailureKind, PluginFailure};
use crate::plugin::Plugin;
use crate::runtime::{Limits, Runtime};

/// A parsed plugin reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PluginRef {
    /// A plugin shipped with syncweave, found in the built-in directory.
    Builtin(String),
    /// A component file on the local filesystem.
    File(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("empty plugin reference; use a built-in name, a path to a .wasm file, or file://PATH")]
    Empty,
    #[error(
        "plugin reference {reference:?}: {scheme}:// sources are not supported yet; \
         fetch the component and reference it as file://PATH"
    )]
    NotYetSupported { reference: String, scheme: String },
    #[error(
        "plugin reference {reference:?}: unknown scheme {scheme:?}; use a built-in name, a path \
         or file://PATH"
    )]
    UnknownScheme { reference: String, scheme: String },
    #[error(
        "plugin reference {reference:?} is neither a path nor a built-in name (built-in names \
         use lower-case letters, digits and '-'); prefix a relative path with ./"
    )]
    BadName { reference: String },
}

/// Schemes planned for remote sources.
const FUTURE_SCHEMES: [&str; 5] = ["http", "https", "oci", "configmap", "secret"];

impl PluginRef {
    pub fn parse(s: &str) -> Result<PluginRef, SourceError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SourceError::Empty);
        }
        if let Some((scheme, rest)) = s.split_once("://") {
            let scheme_lc = scheme.to_ascii_lowercase();
            if scheme_lc == "file" {
                if rest.is_empty() {
                    return Err(SourceError::Empty);
                }
                return Ok(PluginRef::File(PathBuf::from(rest)));
            }
            let err = if FUTURE_SCHEMES.contains(&scheme_lc.as_str()) {
                SourceError::NotYetSupported {
                    reference: s.into(),
                    scheme: scheme_lc,
                }
            } else {
                SourceError::UnknownScheme {
                    reference: s.into(),
                    scheme: scheme.into(),
                }
            };
            return Err(err);
        }
        if s.contains('/') || s.ends_with(".wasm") || s.starts_with('.') {
            return Ok(PluginRef::File(PathBuf::from(s)));
        }
        if s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Ok(PluginRef::Builtin(s.into()));
        }
        Err(SourceError::BadName {
            reference: s.into(),
        })
    }

    /// The name plugins loaded from this reference carry in logs and errors.
    pub fn display_name(&self) -> String {
        match self {
            PluginRef::Builtin(n) => n.clone(),
            PluginRef::File(p) => p.display().to_string(),
        }
    }
}

impl std::str::FromStr for PluginRef {
    type Err = SourceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PluginRef::parse(s)
    }
}

impl fmt::Display for PluginRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginRef::Builtin(n) => f.write_str(n),
            PluginRef::File(p) => write!(f, "file://{}", p.display()),
        }
    }
}

impl Runtime {
    /// Load the plugin a reference points at.
    pub fn load_ref(
        &self,
        reference: &PluginRef,
        limits: Option<Limits>,
    ) -> Result<Arc<Plugin>, PluginFailure> {
        match reference {
            PluginRef::Builtin(name) => self.load_builtin_with(name, limits),
            PluginRef::File(path) => self.load_file(&reference.display_name(), path, limits),
        }
    }

    fn load_file(
        &self,
        name: &str,
        path: &std::path::Path,
        limits: Option<Limits>,
    ) -> Result<Arc<Plugin>, PluginFailure> {
        let bytes = std::fs::read(path).map_err(|e| {
            PluginFailure::new(
                name,
                "",
                FailureKind::Load,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        self.load(name, &bytes, limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_builtins_paths_and_file_urls() {
        assert_eq!(
            PluginRef::parse("naming").unwrap(),
            PluginRef::Builtin("naming".into())
        );
        assert_eq!(
            PluginRef::parse("file:///tmp/x.wasm").unwrap(),
            PluginRef::File("/tmp/x.wasm".into())
        );
        assert_eq!(
            PluginRef::parse("./x.wasm").unwrap(),
            PluginRef::File("./x.wasm".into())
        );
        assert_eq!(
            PluginRef::parse("x.wasm").unwrap(),
            PluginRef::File("x.wasm".into())
        );
        assert_eq!(
            PluginRef::parse("target/plugins/a.wasm").unwrap(),
            PluginRef::File("target/plugins/a.wasm".into())
        );
    }

    #[test]
    fn remote_and_odd_references_get_precise_errors() {
        let e = PluginRef::parse("https://example.com/p.wasm").unwrap_err();
        assert!(
            e.to_string()
                .contains("https:// sources are not supported yet"),
            "{e}"
        );
        let e = PluginRef::parse("oci://ghcr.io/x/y:1").unwrap_err();
        assert!(matches!(e, SourceError::NotYetSupported { .. }));
        let e = PluginRef::parse("ftp://x").unwrap_err();
        assert!(matches!(e, SourceError::UnknownScheme { .. }));
        assert_eq!(PluginRef::parse("  ").unwrap_err(), SourceError::Empty);
        assert!(matches!(
            PluginRef::parse("Naming").unwrap_err(),
            SourceError::BadName { .. }
        ));
    }

    #[test]
    fn display_round_trips() {
        for s in ["naming", "file:///tmp/x.wasm"] {
            assert_eq!(PluginRef::parse(s).unwrap().to_string(), s);
        }
    }
}
