//! Plugin references: the `source` strings of WasmPlugins and inline
//! `wasm:` uses, parsed into where the bytes come from and how they are
//! pinned.

use std::fmt;
use std::path::PathBuf;

use reqwest::Url;

/// Names of the plugins shipped with syncweave; any other `<name>` whose
/// `<name>.wasm` is in a built-in directory is a built-in too.
pub const BUILTIN_NAMES: [&str; 4] = ["naming", "mutation", "projection", "renderer"];

/// What every bad reference message ends with, so users see the options.
const FORMS: &str = "use a built-in name (naming, mutation, projection, renderer), \
file:///path/to/plugin.wasm, https://… with sha256, configmap://<namespace>/<name>/<key> \
or oci://<registry>/<repository>@sha256:<digest>";

/// Where a plugin's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `<name>`: `<name>.wasm` in the runtime's built-in plugin directories.
    Builtin { name: String },
    /// `file:///abs/path.wasm`, or a plain path (relative to the agent's
    /// working directory).
    File { path: PathBuf },
    /// `https://…`; always pinned by [`PluginRef::sha256`].
    Https { url: Url },
    /// `configmap://<namespace>/<name>/<key>`: a `binaryData` key of a
    /// ConfigMap on the service cluster.
    ConfigMap {
        namespace: String,
        name: String,
        key: String,
    },
    /// `oci://registry/repo@sha256:<hex>`: a CNCF Wasm artifact, pinned by
    /// its manifest digest.
    Oci {
        /// `registry/repo[:tag]@sha256:<hex>` (what the OCI client parses).
        reference: String,
        /// `sha256:<hex>` of the manifest.
        manifest_digest: String,
    },
}

/// A parsed plugin reference: the location plus an optional pin on the
/// Wasm bytes themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRef {
    pub location: Location,
    /// 64 lower-case hex digits: the SHA-256 the fetched bytes must have.
    /// Required for https://; verified for every kind when set.
    pub sha256: Option<String>,
    /// The source string as written (trimmed), for messages.
    pub source: String,
}

/// A reference that cannot be used, with the field it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct RefError {
    /// e.g. `spec.source` or `spec.mutation.spec[2].wasm.sha256`.
    pub field: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl PluginRef {
    /// Parse `source` (and its `sha256` sibling). `field` is the path of the
    /// object holding both, e.g. `spec` for a WasmPlugin or
    /// `spec.mutation.spec[2].wasm` for an inline use; errors name
    /// `<field>.source` or `<field>.sha256`.
    pub fn parse(source: &str, sha256: Option<&str>, field: &str) -> Result<PluginRef, RefError> {
        let source_field = join(field, "source");
        let err = |message: String| RefError {
            field: source_field.clone(),
            message,
        };
        let sha256 = match sha256.map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) => Some(parse_sha256(s).map_err(|message| RefError {
                field: join(field, "sha256"),
                message,
            })?),
            None => None,
        };
        let text = source.trim();
        if text.is_empty() {
            return Err(err(format!("is empty; {FORMS}")));
        }
        let location = match text.split_once("://") {
            Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
                "file" => parse_file(text).map_err(err)?,
                "https" => parse_https(text).map_err(err)?,
                "http" => {
                    return Err(err(format!(
                        "{text:?} uses plain http://, which lets anyone on the path alter the \
                         download; serve it over https:// (with sha256), or use oci:// or \
                         configmap://"
                    )));
                }
                "configmap" => parse_configmap(rest).map_err(err)?,
                "oci" => parse_oci(rest).map_err(err)?,
                other => {
                    return Err(err(format!(
                        "{text:?} has unsupported scheme {other:?}; {FORMS}"
                    )));
                }
            },
            None if looks_like_path(text) => Location::File {
                path: PathBuf::from(text),
            },
            None => {
                check_builtin_name(text).map_err(err)?;
                Location::Builtin {
                    name: text.to_string(),
                }
            }
        };
        if matches!(location, Location::Https { .. }) && sha256.is_none() {
            return Err(RefError {
                field: join(field, "sha256"),
                message: format!(
                    "is required for the https:// source {text:?}: set it to the SHA-256 of the \
                     .wasm file as 64 lower-case hex digits (`sha256sum plugin.wasm`)"
                ),
            });
        }
        Ok(PluginRef {
            location,
            sha256,
            source: text.to_string(),
        })
    }

    /// `builtin`, `file`, `https`, `configmap` or `oci`.
    pub fn kind(&self) -> &'static str {
        match self.location {
            Location::Builtin { .. } => "builtin",
            Location::File { .. } => "file",
            Location::Https { .. } => "https",
            Location::ConfigMap { .. } => "configmap",
            Location::Oci { .. } => "oci",
        }
    }

    /// A short name for logs and the runtime: the built-in name, file stem,
    /// ConfigMap key or OCI repository.
    pub fn display_name(&self) -> String {
        match &self.location {
            Location::Builtin { name } => name.clone(),
            Location::File { path } => path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("plugin")
                .to_string(),
            Location::Https { url } => url
                .path_segments()
                .and_then(|mut s| s.next_back())
                .filter(|s| !s.is_empty())
                .map(|s| s.trim_end_matches(".wasm").to_string())
                .unwrap_or_else(|| url.host_str().unwrap_or("plugin").to_string()),
            Location::ConfigMap { key, .. } => key.trim_end_matches(".wasm").to_string(),
            Location::Oci { reference, .. } => {
                let repo = reference.split('@').next().unwrap_or(reference);
                let last = repo.rsplit('/').next().unwrap_or(repo);
                last.split(':').next().unwrap_or(last).to_string()
            }
        }
    }

    /// Whether the source alone fixes the bytes (https with sha256, oci by
    /// digest): such fetches can be answered from the cache forever.
    pub fn is_immutable(&self) -> bool {
        matches!(self.location, Location::Https { .. } | Location::Oci { .. })
            || self.sha256.is_some()
    }
}

impl fmt::Display for PluginRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn join(field: &str, leaf: &str) -> String {
    if field.is_empty() {
        leaf.to_string()
    } else {
        format!("{field}.{leaf}")
    }
}

/// 64 lower-case hex digits, nothing else: the same rule the CRD's schema
/// enforces, so a value is never accepted in one place and refused in another.
pub fn parse_sha256(s: &str) -> Result<String, String> {
    if let Some(rest) = s.strip_prefix("sha256:") {
        return Err(format!(
            "{s:?} has a \"sha256:\" prefix; give only the 64 hex digits: {rest:?}"
        ));
    }
    if s.len() != 64 {
        return Err(format!(
            "{s:?} is {} characters long; a SHA-256 is 64 lower-case hex digits \
             (`sha256sum plugin.wasm`)",
            s.len()
        ));
    }
    if s.bytes().any(|b| b.is_ascii_uppercase()) && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "{s:?} has upper-case letters; write it in lower case: {:?}",
            s.to_ascii_lowercase()
        ));
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format!(
            "{s:?} is not hex; a SHA-256 is 64 lower-case hex digits (`sha256sum plugin.wasm`)"
        ));
    }
    Ok(s.to_string())
}

/// The same rule as `syncweave plugin inspect`: a '/', a leading '.' or a
/// `.wasm` suffix makes a path; anything else is a built-in name.
fn looks_like_path(s: &str) -> bool {
    s.contains('/') || s.starts_with('.') || s.ends_with(".wasm")
}

fn check_builtin_name(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && s.as_bytes()[0].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is neither a built-in plugin name (lower-case letters, digits, '-' and '_') \
             nor a path or URL; {FORMS}"
        ))
    }
}

fn parse_file(text: &str) -> Result<Location, String> {
    let url = Url::parse(text).map_err(|e| format!("{text:?} is not a valid file:// URL: {e}"))?;
    if url
        .host_str()
        .is_some_and(|h| !h.is_empty() && h != "localhost")
    {
        return Err(format!(
            "{text:?} names host {:?}; file:// URLs must be absolute paths on the agent's own \
             machine: file:///path/to/plugin.wasm (three slashes)",
            url.host_str().unwrap_or_default()
        ));
    }
    let path = url.to_file_path().map_err(|()| {
        format!("{text:?} is not an absolute file path; write file:///path/to/plugin.wasm")
    })?;
    if path.as_os_str().is_empty() || path.to_str().is_some_and(|p| p.ends_with('/')) {
        return Err(format!(
            "{text:?} names a directory; point it at the .wasm file"
        ));
    }
    Ok(Location::File { path })
}

fn parse_https(text: &str) -> Result<Location, String> {
    let url = Url::parse(text).map_err(|e| format!("{text:?} is not a valid URL: {e}"))?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{text:?} has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{text:?} carries credentials, which would be stored in the object for anyone who \
             can read it; serve the plugin without authentication, or use configmap:// or oci://"
        ));
    }
    if let Some(fragment) = url.fragment() {
        let hint = if fragment.starts_with("sha256=") {
            "the digest goes in the separate sha256 field, not in the URL"
        } else {
            "fragments are never sent to the server"
        };
        return Err(format!(
            "{text:?} has a #{fragment} fragment; {hint}: remove it"
        ));
    }
    Ok(Location::Https { url })
}

fn parse_configmap(rest: &str) -> Result<Location, String> {
    let usage = "write configmap://<namespace>/<name>/<key>, where <key> is a binaryData key \
                 (`kubectl create configmap <name> -n <namespace> --from-file=<key>=plugin.wasm`)";
    let parts: Vec<&str> = rest.split('/').collect();
    let [namespace, name, key] = parts.as_slice() else {
        return Err(format!(
            "\"configmap://{rest}\" has {} path segments, expected 3; {usage}",
            parts.len()
        ));
    };
    if let Err(e) = dns1123_label(namespace) {
        return Err(format!(
            "\"configmap://{rest}\": namespace {namespace:?} is not a valid namespace name ({e}); {usage}"
        ));
    }
    if let Err(e) = dns1123_subdomain(name) {
        return Err(format!(
            "\"configmap://{rest}\": {name:?} is not a valid ConfigMap name ({e}); {usage}"
        ));
    }
    if key.is_empty()
        || key.len() > 253
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        return Err(format!(
            "\"configmap://{rest}\": {key:?} is not a valid ConfigMap key (letters, digits, \
             '-', '_' and '.'); {usage}"
        ));
    }
    Ok(Location::ConfigMap {
        namespace: namespace.to_string(),
        name: name.to_string(),
        key: key.to_string(),
    })
}

fn dns1123_label(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 63 {
        return Err("must be 1 to 63 characters long");
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    {
        return Err("may contain only lower-case letters, digits and '-'");
    }
    if b[0] == b'-' || b[b.len() - 1] == b'-' {
        return Err("must start and end with a letter or digit");
    }
    Ok(())
}

fn dns1123_subdomain(s: &str) -> Result<(), &'static str> {
    if s.is_empty() || s.len() > 253 {
        return Err("must be 1 to 253 characters long");
    }
    s.split('.').try_for_each(dns1123_label)
}

fn parse_oci(rest: &str) -> Result<Location, String> {
    let text = format!("oci://{rest}");
    let example = "oci://ghcr.io/org/plugin@sha256:<digest>";
    let Some((name, digest)) = rest.split_once('@') else {
        return Err(format!(
            "{text:?} is not pinned: a tag can be moved to other bytes at any time; pin it by \
             digest: {example} (`oras resolve` or `crane digest` print it)"
        ));
    };
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return Err(format!(
            "{text:?}: digest {digest:?} is not a sha256 digest; pin it by digest: {example}"
        ));
    };
    parse_sha256(hex).map_err(|e| format!("{text:?}: manifest digest {e}"))?;
    let first = name.split('/').next().unwrap_or_default();
    let explicit_registry =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    if !explicit_registry {
        return Err(format!(
            "{text:?} does not name a registry; write the registry host first, e.g. {example} \
             (Docker Hub is docker.io/<org>/<repo>)"
        ));
    }
    let parsed = oci_client::Reference::try_from(rest)
        .map_err(|e| format!("{text:?} is not a valid OCI reference: {e}; e.g. {example}"))?;
    if parsed.digest().is_none() {
        return Err(format!(
            "{text:?} is not pinned; pin it by digest: {example}"
        ));
    }
    Ok(Location::Oci {
        reference: rest.to_string(),
        manifest_digest: digest.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(s: &str) -> Result<PluginRef, RefError> {
        PluginRef::parse(s, None, "spec")
    }

    #[test]
    fn builtin_names() {
        for n in [
            "naming",
            "mutation",
            "projection",
            "renderer",
            "rust-mutator",
            "my_plugin2",
        ] {
            let r = parse(n).unwrap();
            assert_eq!(r.location, Location::Builtin { name: n.into() });
            assert_eq!(r.kind(), "builtin");
        }
        let e = parse("Naming!").unwrap_err();
        assert_eq!(e.field, "spec.source");
        assert!(e.message.contains("neither a built-in plugin name"), "{e}");
        assert!(e.message.contains("oci://"), "lists the forms: {e}");
    }

    #[test]
    fn file_urls_and_paths() {
        let r = parse("file:///opt/plugins/x.wasm").unwrap();
        assert_eq!(
            r.location,
            Location::File {
                path: "/opt/plugins/x.wasm".into()
            }
        );
        assert_eq!(r.display_name(), "x");
        // Percent-encoding is decoded.
        let r = parse("file:///opt/my%20plugins/x.wasm").unwrap();
        assert_eq!(
            r.location,
            Location::File {
                path: "/opt/my plugins/x.wasm".into()
            }
        );
        for p in [
            "/abs/x.wasm",
            "./rel/x.wasm",
            "x.wasm",
            "plugins/x",
            ".hidden",
        ] {
            assert_eq!(
                parse(p).unwrap().location,
                Location::File { path: p.into() },
                "{p}"
            );
        }
        let e = parse("file://server/share/x.wasm").unwrap_err();
        assert!(e.message.contains("three slashes"), "{e}");
        let e = parse("file:///opt/plugins/").unwrap_err();
        assert!(e.message.contains("directory"), "{e}");
    }

    #[test]
    fn https_needs_sha256_in_its_own_field() {
        let e = parse("https://example.com/p.wasm").unwrap_err();
        assert_eq!(e.field, "spec.sha256");
        assert!(e.message.contains("is required"), "{e}");

        let r = PluginRef::parse("https://example.com/p.wasm", Some(HEX), "spec").unwrap();
        assert_eq!(r.sha256.as_deref(), Some(HEX));
        assert_eq!(r.display_name(), "p");
        assert!(r.is_immutable());

        let e = PluginRef::parse(
            &format!("https://example.com/p.wasm#sha256={HEX}"),
            Some(HEX),
            "spec",
        )
        .unwrap_err();
        assert_eq!(e.field, "spec.source");
        assert!(e.message.contains("separate sha256 field"), "{e}");

        let e = PluginRef::parse("https://u:p@example.com/p.wasm", Some(HEX), "spec").unwrap_err();
        assert!(e.message.contains("credentials"), "{e}");

        let e = PluginRef::parse("http://example.com/p.wasm", Some(HEX), "spec").unwrap_err();
        assert!(e.message.contains("plain http://"), "{e}");
    }

    #[test]
    fn sha256_format() {
        let f = |s: &str| {
            PluginRef::parse("naming", Some(s), "spec.mutation.spec[2].wasm").unwrap_err()
        };
        let e = f(&format!("sha256:{HEX}"));
        assert_eq!(e.field, "spec.mutation.spec[2].wasm.sha256");
        assert!(e.message.contains("prefix"), "{e}");
        assert!(f(&HEX.to_ascii_uppercase()).message.contains("lower case"));
        assert!(f("abc").message.contains("64 lower-case hex"));
        assert!(f(&"g".repeat(64)).message.contains("not hex"));
        // Optional for other kinds, but kept (and verified) when set.
        let r = PluginRef::parse("naming", Some(HEX), "spec").unwrap();
        assert_eq!(r.sha256.as_deref(), Some(HEX));
    }

    #[test]
    fn configmap_refs() {
        let r = parse("configmap://plugins/my-plugin/plugin.wasm").unwrap();
        assert_eq!(
            r.location,
            Location::ConfigMap {
                namespace: "plugins".into(),
                name: "my-plugin".into(),
                key: "plugin.wasm".into()
            }
        );
        assert_eq!(r.display_name(), "plugin");
        assert!(!r.is_immutable());
        for bad in [
            "configmap://plugins/my-plugin",
            "configmap://plugins/my-plugin/a/b",
            "configmap://Plugins/x/k",
            "configmap://ns/x_y/k",
            "configmap://ns/x/k!",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(
                e.message.contains("configmap://<namespace>/<name>/<key>"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn oci_refs_must_be_pinned_by_digest() {
        let r = parse(&format!("oci://ghcr.io/org/plugin@sha256:{HEX}")).unwrap();
        assert_eq!(
            r.location,
            Location::Oci {
                reference: format!("ghcr.io/org/plugin@sha256:{HEX}"),
                manifest_digest: format!("sha256:{HEX}"),
            }
        );
        assert_eq!(r.display_name(), "plugin");
        // A tag alongside the digest is allowed; the digest wins.
        let r = parse(&format!("oci://localhost:5000/org/plugin:v1@sha256:{HEX}")).unwrap();
        assert_eq!(r.display_name(), "plugin");

        let e = parse("oci://ghcr.io/org/plugin:v1").unwrap_err();
        assert!(e.message.contains("pin it by digest"), "{e}");
        let e = parse("oci://ghcr.io/org/plugin").unwrap_err();
        assert!(e.message.contains("pin it by digest"), "{e}");
        let e = parse("oci://ghcr.io/org/plugin@sha512:abcd").unwrap_err();
        assert!(e.message.contains("not a sha256 digest"), "{e}");
        let e = parse(&format!("oci://org/plugin@sha256:{HEX}")).unwrap_err();
        assert!(e.message.contains("does not name a registry"), "{e}");
        let e = parse(&format!("oci://ghcr.io/Org/plugin@sha256:{HEX}")).unwrap_err();
        assert!(e.message.contains("not a valid OCI reference"), "{e}");
    }

    #[test]
    fn unknown_schemes_and_empty() {
        let e = parse("s3://bucket/x.wasm").unwrap_err();
        assert!(e.message.contains("unsupported scheme \"s3\""), "{e}");
        let e = parse("  ").unwrap_err();
        assert!(e.message.contains("is empty"), "{e}");
        assert_eq!(parse(" naming ").unwrap().source, "naming");
    }
}
