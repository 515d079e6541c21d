//! Built-in namer: where a kcp object's copy lives on the service cluster, as an
//! upstream PublishedResource's `naming` block decides it.
//!
//! Config: `{"namespace": "<pattern>", "name": "<pattern>", "clusterScoped": bool}`.
//! - Empty or absent patterns use the default scheme: namespace = the workspace's
//!   cluster name, name = `sha3short(namespace)-sha3short(name)` of the kcp object.
//! - A pattern containing `{{` is a Go text/template with `.Object` (the kcp object),
//!   `.ClusterName`, `.ClusterPath`, sprig's functions, `sha3sum`, `sha3short STR
//!   [LEN]` and `shortHash`; the output is trimmed.
//! - Any other pattern uses the legacy placeholders `$remoteClusterName`,
//!   `$remoteNamespaceHash`, `$remoteNamespace`, `$remoteNameHash` and `$remoteName`
//!   (hashes are the first 20 hex digits of SHA-1).
//! - `clusterScoped` says the service cluster's resource is cluster-scoped: then the
//!   namespace is not computed and the result has none.
//!
//! Unlike upstream, the default name of a cluster-scoped kcp object (which has no
//! namespace) hashes the empty string for the namespace part instead of failing.
use serde::Deserialize;
use syncweave_gotmpl::{self as gotmpl, sha3short, short_hash};
use syncweave_plugin::{Context, Fixture, Namer, ObjectName, PluginError, PluginInfo, Value, json};

/// The plugin config: upstream's `naming` block plus the local scope.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub cluster_scoped: bool,
}

impl Config {
    pub fn parse(config: &Value) -> Result<Config, String> {
        if config.is_null() {
            return Ok(Config::default());
        }
        Config::deserialize(config).map_err(|e| e.to_string())
    }
}

fn metadata_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A parsed naming pattern.
enum Pattern {
    DefaultNamespace,
    DefaultName,
    Template(gotmpl::Template),
    Legacy(String),
}

impl Pattern {
    fn parse(what: &str, pattern: &str, default: Pattern) -> Result<Pattern, String> {
        if pattern.is_empty() {
            Ok(default)
        } else if pattern.contains("{{") {
            gotmpl::Template::parse_with("inline", pattern, gotmpl::FuncMap::syncagent_templating())
                .map(Pattern::Template)
                .map_err(|e| format!("invalid {what} naming: failed to parse: {e}"))
        } else {
            Ok(Pattern::Legacy(pattern.to_string()))
        }
    }

    fn render(&self, what: &str, ctx: &Context, object: &Value) -> Result<String, PluginError> {
        match self {
            Pattern::DefaultNamespace => Ok(ctx.cluster_name.clone()),
            Pattern::DefaultName => Ok(format!(
                "{}-{}",
                sha3short(metadata_str(object, "namespace")),
                sha3short(metadata_str(object, "name"))
            )),
            Pattern::Template(template) => {
                let data = gotmpl::Record::new(
                    "templating.localObjectNamingContext",
                    [
                        ("Object".to_string(), gotmpl::Value::from_json(object)),
                        (
                            "ClusterName".to_string(),
                            gotmpl::Value::from(ctx.cluster_name.as_str()),
                        ),
                        (
                            "ClusterPath".to_string(),
                            gotmpl::Value::from(ctx.cluster_path.as_deref().unwrap_or_default()),
                        ),
                    ],
                );
                template
                    .execute_value(gotmpl::Value::object(data), &gotmpl::ExecOptions::default())
                    .map(|out| out.trim().to_string())
                    .map_err(|e| {
                        PluginError::InvalidInput(format!(
                            "invalid {what} naming: failed to evaluate: {e}"
                        ))
                    })
            }
            Pattern::Legacy(pattern) => Ok(replace_placeholders(pattern, ctx, object)),
        }
    }
}

/// Replaces the legacy `$remote…` placeholders in one left-to-right pass; at each
/// position the first placeholder in upstream's order wins, so `$remoteNameHash` is
/// never read as `$remoteName` + "Hash".
fn replace_placeholders(pattern: &str, ctx: &Context, object: &Value) -> String {
    let namespace = metadata_str(object, "namespace");
    let name = metadata_str(object, "name");
    let replacements = [
        ("$remoteClusterName", ctx.cluster_name.clone()),
        ("$remoteNamespaceHash", short_hash(namespace)),
        ("$remoteNamespace", namespace.to_string()),
        ("$remoteNameHash", short_hash(name)),
        ("$remoteName", name.to_string()),
    ];
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    'outer: while !rest.is_empty() {
        for (placeholder, value) in &replacements {
            if let Some(after) = rest.strip_prefix(placeholder) {
                out.push_str(value);
                rest = after;
                continue 'outer;
            }
        }
        let c = rest.chars().next().expect("rest is not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The parsed config.
pub struct Naming {
    namespace: Option<Pattern>,
    name: Pattern,
}

impl Naming {
    pub fn new(config: &Config) -> Result<Naming, String> {
        let namespace = if config.cluster_scoped {
            None
        } else {
            Some(Pattern::parse(
                "namespace",
                &config.namespace,
                Pattern::DefaultNamespace,
            )?)
        };
        Ok(Naming {
            namespace,
            name: Pattern::parse("name", &config.name, Pattern::DefaultName)?,
        })
    }

    /// The service-cluster name for `object` (a kcp object).
    pub fn name(&self, ctx: &Context, object: &Value) -> Result<ObjectName, PluginError> {
        let namespace = match &self.namespace {
            None => None,
            Some(pattern) => {
                let ns = pattern.render("namespace", ctx, object)?;
                if ns.is_empty() {
                    return Err(PluginError::InvalidInput(
                        "the namespace naming produced an empty namespace; check naming.namespace"
                            .into(),
                    ));
                }
                Some(ns)
            }
        };
        let name = self.name.render("name", ctx, object)?;
        if name.is_empty() {
            return Err(PluginError::InvalidInput(
                "the name naming produced an empty name; check naming.name".into(),
            ));
        }
        Ok(ObjectName { name, namespace })
    }
}

/// The built-in naming plugin.
pub struct NamingPlugin;

impl Namer for NamingPlugin {
    fn info() -> PluginInfo {
        let object = json!({"apiVersion": "example.com/v1", "kind": "Thing",
                            "metadata": {"name": "objname", "namespace": "objnamespace"}});
        syncweave_plugin::plugin_info!(
            "Names service-cluster copies like upstream PublishedResource naming: default hashed scheme, Go \
             templates or legacy $remote… placeholders"
        )
        .config_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "namespace": {"type": "string"},
                "name": {"type": "string"},
                "clusterScoped": {"type": "boolean"}
            }
        }))
        .example(
            Fixture::new("default scheme", json!({}), object.clone()).expect(json!({
                "name": "2928c2aa0e510f017f07-73d08a1ba188f1340dae",
                "namespace": "fixture-cluster"
            })),
        )
        .example(
            Fixture::new(
                "template",
                json!({"namespace": "{{ .ClusterPath | replace \":\" \"-\" }}",
                       "name": "{{ .Object.metadata.name }}-{{ sha3short .ClusterName 6 }}"}),
                object.clone(),
            )
            .expect(json!({"name": format!("objname-{}", &sha3short("fixture-cluster")[..6]),
                           "namespace": "root-fixture"})),
        )
        .example(
            Fixture::new(
                "legacy placeholders, cluster-scoped",
                json!({"name": "$remoteClusterName-$remoteName", "clusterScoped": true}),
                object,
            )
            .expect(json!({"name": "fixture-cluster-objname"})),
        )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        Naming::new(&Config::parse(config)?).map(drop)
    }

    fn name(ctx: &Context, config: &Value, object: &Value) -> Result<ObjectName, PluginError> {
        let config = Config::parse(config).map_err(PluginError::InvalidConfig)?;
        let naming = Naming::new(&config).map_err(PluginError::InvalidConfig)?;
        naming.name(ctx, object)
    }
}

syncweave_plugin::namer!(NamingPlugin);

#[cfg(test)]
mod tests;
