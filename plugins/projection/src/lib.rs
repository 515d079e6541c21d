//! Built-in projector: turns a service cluster's CRD into the CRD published to kcp, the
//! way an upstream PublishedResource's `resource` and `projection` blocks describe it.
//!
//! Config (the PublishedResource spec's two blocks):
//! ```json
//! {"resource": {"versions": ["v1"]},
//!  "projection": {"group": "…", "versions": {"v1": "v2"}, "scope": "Namespaced",
//!                 "kind": "…", "plural": "…", "shortNames": […], "categories": […]}}
//! ```
//! Steps, in order: keep the selected versions (all by default; CRD order is kept),
//! make the last served version the storage version if the storage version was not
//! selected, rename versions (sorted in Kubernetes version order afterwards), project
//! the names and scope, and rename the CRD to `<plural>.<group>`.
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use syncweave_plugin::{Fixture, PluginError, PluginInfo, Projector, Value, json};

/// The plugin config.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub resource: Resource,
    #[serde(default)]
    pub projection: Option<Projection>,
}

/// Which versions of the source CRD are published (`spec.resource`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Resource {
    /// Accepted for compatibility with the full upstream block; not used here.
    #[serde(default)]
    pub api_group: Option<String>,
    /// Accepted for compatibility with the full upstream block; not used here.
    #[serde(default)]
    pub kind: Option<String>,
    /// Deprecated single version.
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub versions: Vec<String>,
}

/// How the published CRD differs from the source (`spec.projection`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Projection {
    #[serde(default)]
    pub group: Option<String>,
    /// Deprecated: renames the only selected version.
    #[serde(default)]
    pub version: Option<String>,
    /// Old version name → new version name.
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub plural: Option<String>,
    /// `null`/absent keeps the CRD's short names, `[]` clears them.
    #[serde(default)]
    pub short_names: Option<Vec<String>>,
    /// `null`/absent keeps the CRD's categories, `[]` clears them.
    #[serde(default)]
    pub categories: Option<Vec<String>>,
}

/// Upstream treats an empty string like an unset field.
fn set(field: &Option<String>) -> Option<&str> {
    field.as_deref().filter(|s| !s.is_empty())
}

impl Config {
    /// Parses and checks everything that can be checked without a CRD.
    pub fn parse(config: &Value) -> Result<Config, String> {
        let config: Config = if config.is_null() {
            Config::default()
        } else {
            Config::deserialize(config).map_err(|e| e.to_string())?
        };
        if set(&config.resource.version).is_some() && !config.resource.versions.is_empty() {
            return Err(
                "cannot configure both resource.version and resource.versions; use resource.versions".into(),
            );
        }
        if let Some(p) = &config.projection {
            if set(&p.version).is_some() && !p.versions.is_empty() {
                return Err(
                    "cannot configure both projection.version and projection.versions; use projection.versions"
                        .into(),
                );
            }
            if let Some(scope) = set(&p.scope)
                && scope != "Cluster"
                && scope != "Namespaced"
            {
                return Err(format!(
                    "projection.scope: {scope:?} is not a scope; use \"Cluster\" or \"Namespaced\""
                ));
            }
        }
        Ok(config)
    }
}

fn bad_crd(message: impl Into<String>) -> PluginError {
    PluginError::InvalidInput(message.into())
}

fn flag(version: &Value, name: &str) -> bool {
    version.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn version_name(version: &Value) -> &str {
    version
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Projects `crd` (an apiextensions.k8s.io/v1 CustomResourceDefinition) per `config`.
pub fn project_crd(config: &Config, mut crd: Value) -> Result<Value, PluginError> {
    let spec = crd
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| bad_crd("the CRD has no spec object"))?;
    let versions = spec
        .get_mut("versions")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| bad_crd("the CRD has no spec.versions list"))?;
    for (i, v) in versions.iter().enumerate() {
        if !v.is_object() || v.get("name").and_then(Value::as_str).is_none() {
            return Err(bad_crd(format!("spec.versions[{i}] has no name")));
        }
    }

    // Keep only the selected versions, in CRD order.
    let src = &config.resource;
    if let Some(only) = set(&src.version) {
        versions.retain(|v| version_name(v) == only);
    } else if !src.versions.is_empty() {
        versions.retain(|v| src.versions.iter().any(|s| s == version_name(v)));
    }
    if versions.is_empty() {
        return Err(if let Some(only) = set(&src.version) {
            PluginError::InvalidConfig(format!("CRD does not contain version {only}"))
        } else if !src.versions.is_empty() {
            PluginError::InvalidConfig(format!(
                "CRD does not contain any of versions [{}]",
                src.versions.join(" ")
            ))
        } else {
            bad_crd("CRD contains no versions")
        });
    }

    // Without a selected storage version, the last served one stores.
    let latest_served = versions
        .iter()
        .rposition(|v| flag(v, "served"))
        .ok_or_else(|| {
            PluginError::InvalidConfig("no CRD version selected that is marked as served".into())
        })?;
    if !versions.iter().any(|v| flag(v, "storage")) {
        versions[latest_served]["storage"] = json!(true);
    }

    let Some(projection) = &config.projection else {
        return Ok(crd);
    };

    // Rename versions.
    if let Some(new) = set(&projection.version) {
        if versions.len() != 1 {
            return Err(PluginError::InvalidConfig(format!(
                "cannot project CRD version to a single version {new:?} because it contains {} versions",
                versions.len()
            )));
        }
        versions[0]["name"] = json!(new);
    } else if !projection.versions.is_empty() {
        for v in versions.iter_mut() {
            if let Some(new) = projection
                .versions
                .get(version_name(v))
                .filter(|n| !n.is_empty())
            {
                v["name"] = json!(new);
            }
        }
        let mut seen = BTreeSet::new();
        for v in versions.iter() {
            if !seen.insert(version_name(v).to_string()) {
                return Err(PluginError::InvalidConfig(format!(
                    "CRD contains multiple entries for {} after applying projection.versions",
                    version_name(v)
                )));
            }
        }
        versions.sort_by(|a, b| compare_kube_versions(version_name(a), version_name(b)));
    }

    // Project names and scope.
    if let Some(group) = set(&projection.group) {
        spec.insert("group".into(), json!(group));
    }
    if let Some(scope) = set(&projection.scope) {
        spec.insert("scope".into(), json!(scope));
    }
    let names = spec
        .entry("names")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| bad_crd("spec.names is not an object"))?;
    if let Some(kind) = set(&projection.kind) {
        let singular = kind.to_lowercase();
        names.insert("kind".into(), json!(kind));
        names.insert("listKind".into(), json!(format!("{kind}List")));
        names.insert("plural".into(), json!(format!("{singular}s")));
        names.insert("singular".into(), json!(singular));
    }
    if let Some(plural) = set(&projection.plural) {
        names.insert("plural".into(), json!(plural));
    }
    for (field, value) in [
        ("shortNames", &projection.short_names),
        ("categories", &projection.categories),
    ] {
        match value {
            // An empty list clears the field (Kubernetes omits empty lists).
            Some(list) if list.is_empty() => {
                names.remove(field);
            }
            Some(list) => {
                names.insert(field.into(), json!(list));
            }
            None => {}
        }
    }

    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let metadata = crd
        .as_object_mut()
        .expect("checked above that the CRD has a spec, so it is an object")
        .entry("metadata")
        .or_insert_with(|| json!({}));
    metadata["name"] = json!(format!("{plural}.{group}"));
    Ok(crd)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stability {
    Alpha,
    Beta,
    Ga,
}

/// `v<major>[(alpha|beta)<minor>]`, as Kubernetes parses version names.
fn parse_kube_version(v: &str) -> Option<(i64, Stability, i64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let major: i64 = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    if rest.is_empty() {
        return Some((major, Stability::Ga, 0));
    }
    let (stability, minor) = if let Some(m) = rest.strip_prefix("alpha") {
        (Stability::Alpha, m)
    } else if let Some(m) = rest.strip_prefix("beta") {
        (Stability::Beta, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((major, stability, minor.parse().ok()?))
}

/// Kubernetes' version priority as an ascending order: non-Kubernetes names first
/// (reverse lexical), then alpha, beta and GA, each by major then minor version. The
/// most preferred version sorts last.
pub fn compare_kube_versions(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((a_major, a_stab, a_minor)), Some((b_major, b_stab, b_minor))) => a_stab
            .cmp(&b_stab)
            .then(a_major.cmp(&b_major))
            .then(a_minor.cmp(&b_minor)),
    }
}

pub struct CrdProjector;

fn example_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
            "versions": [
                {"name": "v1", "served": true, "storage": false},
                {"name": "v2", "served": true, "storage": true}
            ]
        }
    })
}

impl Projector for CrdProjector {
    fn info() -> PluginInfo {
        syncweave_plugin::plugin_info!(
            "Selects CRD versions and projects group, versions, kind, plural, scope, short names and categories \
             (upstream PublishedResource resource/projection semantics)"
        )
        .config_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "resource": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "apiGroup": {"type": "string"},
                        "kind": {"type": "string"},
                        "version": {"type": "string"},
                        "versions": {"type": "array", "items": {"type": "string"}}
                    }
                },
                "projection": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "group": {"type": "string"},
                        "version": {"type": "string"},
                        "versions": {"type": "object", "additionalProperties": {"type": "string"}},
                        "scope": {"enum": ["Cluster", "Namespaced"]},
                        "kind": {"type": "string"},
                        "plural": {"type": "string"},
                        "shortNames": {"type": "array", "items": {"type": "string"}},
                        "categories": {"type": "array", "items": {"type": "string"}}
                    }
                }
            }
        }))
        .example(
            Fixture::new(
                "select v1, rename kind and group",
                json!({"resource": {"versions": ["v1"]},
                       "projection": {"group": "kcp.example.com", "kind": "Widget"}}),
                example_crd(),
            )
            .expect(json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.kcp.example.com"},
                "spec": {
                    "group": "kcp.example.com",
                    "scope": "Cluster",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": true, "storage": true}]
                }
            })),
        )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        Config::parse(config).map(drop)
    }

    fn project(config: &Value, crd: Value) -> Result<Value, PluginError> {
        let config = Config::parse(config).map_err(PluginError::InvalidConfig)?;
        project_crd(&config, crd)
    }
}

syncweave_plugin::projector!(CrdProjector);

#[cfg(test)]
mod tests;
