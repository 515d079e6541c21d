//! `WasmPlugin` (syncweave.dev/v1alpha1, cluster-scoped): one plugin
//! artifact, where it comes from, how it may run, and (in status) whether
//! the agent could fetch, compile and describe it. PublishedResources refer
//! to it by name (`wasm: {plugin: <name>, config: …}`).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use syncweave_runtime::{Limits, World};

pub const WASMPLUGIN_GROUP: &str = "syncweave.dev";

/// Condition types, in the order they are reached.
pub const CONDITION_FETCHED: &str = "Fetched";
pub const CONDITION_COMPILED: &str = "Compiled";
/// The worked examples of `describe()` passed (the self-test gate).
pub const CONDITION_SELF_TESTED: &str = "SelfTested";
pub const CONDITION_READY: &str = "Ready";

/// Longest per-call timeout accepted: anything longer would stall a sync
/// worker for every object.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Smallest memory limit that leaves a guest room for its stack and heap.
pub const MIN_MEMORY_BYTES: u64 = 1 << 20;
pub const MIN_OUTPUT_BYTES: u64 = 1 << 10;
pub const MAX_OUTPUT_BYTES: u64 = 64 << 20;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "syncweave.dev",
    version = "v1alpha1",
    kind = "WasmPlugin",
    plural = "wasmplugins",
    shortname = "wp",
    status = "WasmPluginStatus",
    printcolumn = r#"{"name":"World","type":"string","jsonPath":".status.world"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Digest","type":"string","jsonPath":".status.digest"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WasmPluginSpec {
    /// Where the component comes from: a built-in name (naming, mutation,
    /// projection, renderer, …), file:///path.wasm, https://… (with
    /// sha256), configmap://<namespace>/<name>/<key> (a binaryData key on
    /// the service cluster) or oci://<registry>/<repo>@sha256:<digest>.
    pub source: String,

    /// SHA-256 of the component, 64 lower-case hex digits. Required for
    /// https:// sources; verified for every other kind when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[a-f0-9]{64}$"))]
    pub sha256: Option<String>,

    /// Per-call resource limits; unset fields take the agent's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<WasmPluginLimits>,

    /// What happens to an object when a call fails: Fail (default) stops
    /// its sync and reports the error; Ignore skips this plugin's step.
    /// Ignore applies to mutator plugins only: naming and projection
    /// always fail closed.
    #[serde(default)]
    pub failure_policy: FailurePolicy,

    /// Default config, used by uses that set none of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown")]
    pub config: Option<serde_json::Value>,

    /// Staged rollout of a new digest. Without it, a new digest of source
    /// that passes its checks (self-test included) serves every object at
    /// once. With rollout.canary, it serves only the objects the canary
    /// selects, and the previous digest (status.stable) keeps serving the
    /// others; remove rollout (or set canary.fraction to 1) to promote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<WasmPluginRollout>,

    /// oci:// sources in a private registry: a `kubernetes.io/dockerconfigjson`
    /// Secret on the service cluster (`kubectl create secret docker-registry`)
    /// whose entry for the registry host gives the credentials (auth or
    /// username/password, identitytoken, registrytoken). Basic and bearer
    /// token registries both work. The agent needs `get` on Secrets in that
    /// namespace (the chart's `rbac.pluginSecretNamespaces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secret: Option<SecretReference>,

    /// oci:// sources: require a cosign-style signature of the artifact's
    /// manifest digest (stored at tag `sha256-<hex>.sig` in the same
    /// repository) by one of these public keys before the plugin is loaded.
    /// Unset: no signature is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<SignatureVerification>,
}

/// A Secret on the service cluster (WasmPlugins are cluster-scoped, so the
/// namespace is required).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretReference {
    pub namespace: String,
    pub name: String,
}

/// The public keys a plugin's signature must verify against: set exactly
/// one of publicKey and publicKeyFrom.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureVerification {
    /// One or more PEM public keys (`-----BEGIN PUBLIC KEY-----`, ECDSA
    /// P-256, as `cosign generate-key-pair` and `syncweave plugin keygen`
    /// write them); a signature by any of them is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// The same, read from a key of a Secret or ConfigMap on the service
    /// cluster (the agent needs `get` on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key_from: Option<KeySource>,
}

/// Where a public key is kept: set exactly one of secretKeyRef and
/// configMapKeyRef.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeySource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<ObjectKeyReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_key_ref: Option<ObjectKeyReference>,
}

/// One key of a Secret or ConfigMap on the service cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectKeyReference {
    pub namespace: String,
    pub name: String,
    pub key: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WasmPluginRollout {
    /// Which objects get a new digest first. Applies to mutator and namer
    /// plugins (they run per object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<WasmPluginCanary>,
}

/// Exactly one of fraction and selector.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.fraction) != has(self.selector)",
    "message": CANARY_ONE_OF,
}]))]
pub struct WasmPluginCanary {
    /// Share of objects, more than 0 and at most 1 (e.g. 0.1): an object is
    /// in the canary when a stable hash of its workspace (logical cluster),
    /// namespace and name falls below it, so it stays on one side, and
    /// raising the fraction only adds objects. 1 promotes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0), extend("exclusiveMinimum" = true))]
    pub fraction: Option<f64>,
    /// Objects whose labels (on the kcp object) match get the new digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

const CANARY_ONE_OF: &str = "spec.rollout.canary: set exactly one of fraction (a share of objects, \
     e.g. 0.1) or selector (a label selector on the kcp objects)";

impl WasmPluginCanary {
    /// Why this canary cannot be used, naming the field (`field` is the path
    /// of this object, `spec.rollout.canary`). The CRD refuses these too;
    /// this catches objects stored under an older CRD.
    pub fn validate(&self, field: &str) -> Result<(), String> {
        match (self.fraction, &self.selector) {
            (None, None) => Err(format!(
                "{field}: sets neither fraction nor selector; set fraction (a share of objects, \
                 e.g. 0.1) or selector (a label selector on the kcp objects), or remove \
                 spec.rollout"
            )),
            (Some(_), Some(_)) => Err(format!(
                "{field}: sets both fraction and selector; keep one of them"
            )),
            (Some(f), None) if !(f > 0.0 && f <= 1.0) => Err(format!(
                "{field}.fraction: {f} is outside (0, 1]; use e.g. 0.1 for a tenth of the \
                 objects, or 1 (or no spec.rollout) to give the new digest to all of them"
            )),
            (Some(_), None) => Ok(()),
            (None, Some(sel)) => {
                let empty = sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
                    && sel.match_expressions.as_ref().is_none_or(|e| e.is_empty());
                if empty {
                    return Err(format!(
                        "{field}.selector: is empty, which would select every object; give \
                         matchLabels or matchExpressions, or remove spec.rollout to promote \
                         the new digest"
                    ));
                }
                crate::apis::selector::from_label_selector(sel)
                    .map(|_| ())
                    .map_err(|e| format!("{field}.selector: {e}"))
            }
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WasmPluginLimits {
    /// Wall-clock budget per call as a duration, e.g. "100ms", "2s"
    /// (default 100ms, at most 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Linear memory per call as a quantity, e.g. "64Mi" (default 64Mi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Quantity>,
    /// Largest result a call may return, e.g. "1Mi" (default 8Mi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<Quantity>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum FailurePolicy {
    #[default]
    Fail,
    Ignore,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WasmPluginStatus {
    /// The spec generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Fetched, Compiled, SelfTested and Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// `sha256:<hex>` of the component spec.source holds, as last fetched:
    /// in use unless it failed a check (stable and canary say what serves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// mutator, namer, projector or renderer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world: Option<String>,
    /// What the plugin says about itself (describe()).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<WasmPluginInfo>,
    /// The digest serving every object outside a canary: the last one that
    /// passed all its checks. It keeps serving while a newer spec.source
    /// fails them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable: Option<WasmPluginStable>,
    /// While spec.rollout.canary is set and a new digest passed its checks:
    /// that digest, and the objects it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<WasmPluginCanaryStatus>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WasmPluginStable {
    /// `sha256:<hex>` of the component.
    pub digest: String,
    /// The source it came from (spec.source when it became active): the
    /// agent fetches it again, pinned to digest, after a restart.
    pub source: String,
    /// Calls of this digest that failed since it became active (counted by
    /// the serving agent since it started).
    pub errors: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WasmPluginCanaryStatus {
    /// `sha256:<hex>` of the component.
    pub digest: String,
    /// Calls of this digest that failed since it became the canary.
    pub errors: i64,
    /// The share of objects it serves (spec.rollout.canary.fraction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// The kcp objects it serves (spec.rollout.canary.selector), as a
    /// selector string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WasmPluginInfo {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn preserve_unknown(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

impl WasmPlugin {
    /// The status condition of type `type_`, if set.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == type_)
    }
}

impl WasmPluginSpec {
    /// Fields set that would have no effect for a plugin of `world`, one
    /// message each; empty when there are none. The world is known only
    /// once the component is compiled, so the CRD cannot refuse these: the
    /// controller reports them instead of making the plugin Ready.
    pub fn unsupported_for_world(&self, world: World) -> Vec<String> {
        let mut out = Vec::new();
        if self.failure_policy == FailurePolicy::Ignore && world != World::Mutator {
            out.push(format!(
                "spec.failurePolicy: Ignore applies only to mutator plugins, and this is a {world} \
                 plugin, whose failures always stop the sync (it fails closed); remove \
                 failurePolicy or set it to Fail"
            ));
        }
        let canary = self.rollout.as_ref().and_then(|r| r.canary.as_ref());
        if canary.is_some() && !matches!(world, World::Mutator | World::Namer) {
            out.push(format!(
                "spec.rollout.canary applies only to mutator and namer plugins, which run per \
                 object; this is a {world} plugin, which does not run per synced object, so \
                 every use would get the new digest anyway; remove spec.rollout"
            ));
        }
        out
    }
}

/// A limit that cannot be used: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct LimitsError {
    pub field: String,
    pub message: String,
}

impl WasmPluginLimits {
    /// The runtime limits these fields ask for, starting from `defaults`;
    /// `max_memory` is the runtime's ceiling. `field` is the path of this
    /// object (`spec.limits`).
    pub fn to_limits(
        &self,
        defaults: Limits,
        max_memory: u64,
        field: &str,
    ) -> Result<Limits, LimitsError> {
        let err = |leaf: &str, message: String| LimitsError {
            field: format!("{field}.{leaf}"),
            message,
        };
        let mut l = defaults;
        if let Some(t) = &self.timeout {
            let d = parse_duration(t).map_err(|m| err("timeout", m))?;
            if d.is_zero() || d > MAX_TIMEOUT {
                return Err(err(
                    "timeout",
                    format!("{t:?} must be more than 0 and at most 60s"),
                ));
            }
            l.timeout = d;
        }
        if let Some(q) = &self.memory {
            let b = quantity_bytes(&q.0).map_err(|m| err("memory", m))?;
            if b < MIN_MEMORY_BYTES || b > max_memory {
                return Err(err(
                    "memory",
                    format!(
                        "{:?} is {b} bytes; it must be between 1Mi and the agent's ceiling of \
                         {max_memory} bytes ({} MiB)",
                        q.0,
                        max_memory >> 20
                    ),
                ));
            }
            l.memory_bytes = b;
        }
        if let Some(q) = &self.max_output {
            let b = quantity_bytes(&q.0).map_err(|m| err("maxOutput", m))?;
            if !(MIN_OUTPUT_BYTES..=MAX_OUTPUT_BYTES).contains(&b) {
                return Err(err(
                    "maxOutput",
                    format!("{:?} is {b} bytes; it must be between 1Ki and 64Mi", q.0),
                ));
            }
            l.max_output_bytes = b as usize;
        }
        Ok(l)
    }
}

/// A Go-style duration ("100ms", "1.5s", "1m30s"; units ns, us, µs, ms, s,
/// m, h), as Kubernetes APIs write them.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = |why: &str| {
        format!("{s:?} is not a duration ({why}); write e.g. \"100ms\", \"2s\" or \"1m30s\"")
    };
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.is_empty() {
        return Err(bad("empty"));
    }
    if t.starts_with('-') {
        return Err(bad("negative"));
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let mut total: u128 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, after) = rest.split_at(num_len);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(bad("expected a number"));
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let nanos_per: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(bad("missing unit")),
            _ => return Err(bad(&format!("unknown unit {unit:?}"))),
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let int: u128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad("number too large"))?
        };
        let mut part = int.checked_mul(nanos_per).ok_or_else(|| bad("too large"))?;
        if !frac.is_empty() {
            let digits = frac.len().min(18) as u32;
            let f: u128 = frac[..digits as usize]
                .parse()
                .map_err(|_| bad("bad fraction"))?;
            part += f * nanos_per / 10u128.pow(digits);
        }
        total = total.checked_add(part).ok_or_else(|| bad("too large"))?;
        rest = next;
    }
    u64::try_from(total)
        .map(Duration::from_nanos)
        .map_err(|_| bad("too large"))
}

/// A Kubernetes quantity ("64Mi", "1G", "1.5Gi", "500k", "1e6", "1048576")
/// in bytes, rounded up.
pub fn quantity_bytes(s: &str) -> Result<u64, String> {
    let bad = |why: &str| {
        format!("{s:?} is not a byte quantity ({why}); write e.g. \"64Mi\", \"1Gi\" or \"1048576\"")
    };
    let t = s.trim();
    if t.starts_with('-') {
        return Err(bad("negative"));
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let num_len = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(num_len);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(bad("expected a number"));
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if frac.len() > 18 {
        return Err(bad("too many decimal places"));
    }
    let digits = format!("{int}{frac}");
    let mantissa: u128 = digits.parse().map_err(|_| bad("number too large"))?;
    // value = mantissa / 10^frac.len() * num / den
    let mut den: u128 = 10u128.pow(frac.len() as u32);
    let mut mul: u128 = 1;
    match suffix {
        "" => {}
        "Ki" => mul = 1 << 10,
        "Mi" => mul = 1 << 20,
        "Gi" => mul = 1 << 30,
        "Ti" => mul = 1 << 40,
        "Pi" => mul = 1 << 50,
        "Ei" => mul = 1 << 60,
        "n" => den *= 1_000_000_000,
        "u" => den *= 1_000_000,
        "m" => den *= 1_000,
        "k" => mul = 1_000,
        "M" => mul = 1_000_000,
        "G" => mul = 1_000_000_000,
        "T" => mul = 1_000_000_000_000,
        "P" => mul = 1_000_000_000_000_000,
        "E" => mul = 1_000_000_000_000_000_000,
        e if e.starts_with(['e', 'E']) => {
            let exp: i32 = e[1..]
                .parse()
                .map_err(|_| bad(&format!("unknown suffix {e:?}")))?;
            if exp.unsigned_abs() > 30 {
                return Err(bad("exponent out of range"));
            }
            if exp >= 0 {
                mul = 10u128.pow(exp as u32);
            } else {
                den *= 10u128.pow(exp.unsigned_abs());
            }
        }
        other => return Err(bad(&format!("unknown suffix {other:?}"))),
    }
    let num = mantissa.checked_mul(mul).ok_or_else(|| bad("too large"))?;
    u64::try_from(num.div_ceil(den)).map_err(|_| bad("too large"))
}

/// The kcp object a plugin call is made for: what a canary selects on.
/// Related objects and status calls use their primary kcp object, so one
/// object's calls all go to the same digest.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// Logical cluster (workspace) of the object.
    pub cluster: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub labels: Labels<'a>,
}

/// An object's labels, as the caller holds them.
#[derive(Debug, Clone, Copy)]
pub enum Labels<'a> {
    None,
    Map(&'a std::collections::BTreeMap<String, String>),
    /// `metadata.labels` of an object as JSON.
    Json(&'a serde_json::Map<String, serde_json::Value>),
}

impl<'a> Labels<'a> {
    pub fn get(&self, key: &str) -> Option<&'a str> {
        match *self {
            Labels::None => None,
            Labels::Map(m) => m.get(key).map(String::as_str),
            Labels::Json(m) => m.get(key).and_then(serde_json::Value::as_str),
        }
    }
}

impl<'a> Subject<'a> {
    /// The subject of a kcp object given as JSON (`cluster` is its logical
    /// cluster, which the object itself does not carry).
    pub fn of_json(cluster: &'a str, object: &'a serde_json::Value) -> Subject<'a> {
        let meta = object.get("metadata");
        let field = |k: &str| meta.and_then(|m| m.get(k));
        Subject {
            cluster,
            namespace: field("namespace").and_then(serde_json::Value::as_str),
            name: field("name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default(),
            labels: match field("labels") {
                Some(serde_json::Value::Object(m)) => Labels::Json(m),
                _ => Labels::None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration("100ms").unwrap(), ms(100));
        assert_eq!(parse_duration("2s").unwrap(), ms(2000));
        assert_eq!(parse_duration("1.5s").unwrap(), ms(1500));
        assert_eq!(parse_duration("1m30s").unwrap(), ms(90_000));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("250µs").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration(".5s").unwrap(), ms(500));
        for bad in ["", "100", "-1s", "1x", "ms", "1..2s", "1s2"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("is not a duration"), "{bad}: {e}");
        }
        assert!(parse_duration("100").unwrap_err().contains("missing unit"));
    }

    #[test]
    fn quantities() {
        assert_eq!(quantity_bytes("64Mi").unwrap(), 64 << 20);
        assert_eq!(quantity_bytes("1Gi").unwrap(), 1 << 30);
        assert_eq!(quantity_bytes("1.5Gi").unwrap(), 3 << 29);
        assert_eq!(quantity_bytes("1048576").unwrap(), 1 << 20);
        assert_eq!(quantity_bytes("100M").unwrap(), 100_000_000);
        assert_eq!(quantity_bytes("500k").unwrap(), 500_000);
        assert_eq!(quantity_bytes("1e6").unwrap(), 1_000_000);
        assert_eq!(quantity_bytes("1E3").unwrap(), 1_000);
        // Fractions of a byte round up.
        assert_eq!(quantity_bytes("1500m").unwrap(), 2);
        assert_eq!(quantity_bytes("0.1").unwrap(), 1);
        for bad in ["", "Mi", "-1Mi", "1MB", "1.2.3", "99999999999Ei"] {
            let e = quantity_bytes(bad).unwrap_err();
            assert!(e.contains("is not a byte quantity"), "{bad}: {e}");
        }
    }

    #[test]
    fn limits_fields_are_checked_and_named() {
        let d = Limits::default();
        let max = 1 << 30;
        let l = WasmPluginLimits {
            timeout: Some("250ms".into()),
            memory: Some(Quantity("32Mi".into())),
            max_output: Some(Quantity("1Mi".into())),
        }
        .to_limits(d, max, "spec.limits")
        .unwrap();
        assert_eq!(l.timeout, Duration::from_millis(250));
        assert_eq!(l.memory_bytes, 32 << 20);
        assert_eq!(l.max_output_bytes, 1 << 20);
        assert_eq!(l.max_log_bytes, d.max_log_bytes);

        assert_eq!(
            WasmPluginLimits::default()
                .to_limits(d, max, "spec.limits")
                .unwrap(),
            d
        );

        let e = WasmPluginLimits {
            timeout: Some("2m".into()),
            ..Default::default()
        }
        .to_limits(d, max, "spec.limits")
        .unwrap_err();
        assert_eq!(e.field, "spec.limits.timeout");
        assert!(e.message.contains("at most 60s"), "{e}");

        let e = WasmPluginLimits {
            memory: Some(Quantity("2Gi".into())),
            ..Default::default()
        }
        .to_limits(d, max, "spec.limits")
        .unwrap_err();
        assert_eq!(e.field, "spec.limits.memory");
        assert!(
            e.message.contains("ceiling of 1073741824 bytes (1024 MiB)"),
            "{e}"
        );

        let e = WasmPluginLimits {
            max_output: Some(Quantity("lots".into())),
            ..Default::default()
        }
        .to_limits(d, max, "spec.limits")
        .unwrap_err();
        assert_eq!(e.field, "spec.limits.maxOutput");
    }

    #[test]
    fn manifest_parses() {
        let yaml = r#"
apiVersion: syncweave.dev/v1alpha1
kind: WasmPlugin
metadata:
  name: add-team-label
spec:
  source: oci://ghcr.io/example/add-label@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  limits: {timeout: 50ms, memory: 32Mi, maxOutput: 1Mi}
  failurePolicy: Ignore
  config: {label: {key: team, value: platform}}
"#;
        let p: WasmPlugin = serde_yaml_ng::from_str(yaml).unwrap();
        assert_eq!(p.spec.failure_policy, FailurePolicy::Ignore);
        let minimal: WasmPlugin = serde_yaml_ng::from_str(
            "{apiVersion: syncweave.dev/v1alpha1, kind: WasmPlugin, metadata: {name: x}, spec: {source: naming}}",
        )
        .unwrap();
        assert_eq!(minimal.spec.failure_policy, FailurePolicy::Fail);
        assert_eq!(p.spec.limits.unwrap().memory, Some(Quantity("32Mi".into())));
        assert_eq!(p.spec.config.unwrap()["label"]["key"], "team");
    }

    #[test]
    fn registry_trust_fields_parse() {
        let yaml = r#"
apiVersion: syncweave.dev/v1alpha1
kind: WasmPlugin
metadata: {name: signed}
spec:
  source: oci://registry.example.com/team/p@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  imagePullSecret: {namespace: plugins, name: regcred}
  signature:
    publicKeyFrom:
      configMapKeyRef: {namespace: plugins, name: keys, key: team.pub}
"#;
        let p: WasmPlugin = serde_yaml_ng::from_str(yaml).unwrap();
        assert_eq!(
            p.spec.image_pull_secret,
            Some(SecretReference {
                namespace: "plugins".into(),
                name: "regcred".into()
            })
        );
        let sig = p.spec.signature.unwrap();
        assert_eq!(sig.public_key, None);
        let from = sig.public_key_from.unwrap();
        assert_eq!(from.config_map_key_ref.unwrap().key, "team.pub");
        assert!(from.secret_key_ref.is_none());
    }

    #[test]
    fn crd_schema_has_what_kubectl_and_the_apiserver_need() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(WasmPlugin::crd()).unwrap();
        assert_eq!(crd["spec"]["scope"], "Cluster");
        let v = &crd["spec"]["versions"][0];
        assert!(v["subresources"]["status"].is_object());
        let cols: Vec<&str> = v["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(cols, ["World", "Ready", "Digest", "Age"]);
        let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["properties"]["sha256"]["pattern"], "^[a-f0-9]{64}$");
        assert_eq!(
            spec["properties"]["config"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        assert_eq!(
            spec["properties"]["failurePolicy"]["enum"],
            serde_json::json!(["Fail", "Ignore"])
        );
        assert_eq!(spec["properties"]["failurePolicy"]["default"], "Fail");
        // The API server refuses a canary the agent could not use.
        let canary = &spec["properties"]["rollout"]["properties"]["canary"];
        let fraction = &canary["properties"]["fraction"];
        assert_eq!(
            (
                &fraction["minimum"],
                &fraction["exclusiveMinimum"],
                &fraction["maximum"]
            ),
            (
                &serde_json::json!(0.0),
                &serde_json::json!(true),
                &serde_json::json!(1.0)
            )
        );
        assert_eq!(
            canary["x-kubernetes-validations"][0]["rule"],
            "has(self.fraction) != has(self.selector)"
        );
        let pull = &spec["properties"]["imagePullSecret"];
        assert_eq!(pull["required"], serde_json::json!(["name", "namespace"]));
        let from = &spec["properties"]["signature"]["properties"]["publicKeyFrom"]["properties"];
        assert_eq!(
            from["secretKeyRef"]["required"],
            serde_json::json!(["key", "name", "namespace"])
        );
    }

    #[test]
    fn failure_policy_ignore_is_for_mutators_only() {
        let mut spec = WasmPluginSpec {
            source: "naming".into(),
            ..Default::default()
        };
        for w in World::ALL {
            assert_eq!(spec.unsupported_for_world(w), Vec::<String>::new());
        }
        spec.failure_policy = FailurePolicy::Ignore;
        assert_eq!(
            spec.unsupported_for_world(World::Mutator),
            Vec::<String>::new()
        );
        for w in [World::Namer, World::Projector, World::Renderer] {
            let m = spec.unsupported_for_world(w);
            assert_eq!(m.len(), 1, "{w}");
            assert!(
                m[0].starts_with(
                    "spec.failurePolicy: Ignore applies only to mutator plugins, and this is a"
                ),
                "{}",
                m[0]
            );
        }
    }

    /// The CRD manifest shipped in charts/ must match the Rust types.
    #[test]
    fn shipped_crd_is_up_to_date() {
        crate::apis::assert_shipped_crd(
            "syncweave.dev_wasmplugins.yaml",
            &super::super::wasmplugin_crd_yaml(),
        );
    }
}
