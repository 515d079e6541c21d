//! Related resources (`spec.related[]`): objects that belong to a primary
//! object, such as the Secret holding a database's credentials. They are
//! copied from their origin side (`service` or `kcp`) to the other side once
//! the primary is in sync, and cleaned up when the primary is deleted.
//!
//! Finding the originals (and naming their copies) is pure logic over the
//! two primaries ([`reference_values`], [`template_label_selector`], …);
//! templates run in the sandbox through a [`Templates`] evaluator.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use super::labels::FINALIZER;
use super::related_cache::SideApi;
use super::strip::strip_metadata;
use super::syncer::{Mutator, Origin, Outcome, SyncContext, SyncError};
use super::{ObjectKey, patch};
use crate::apis::{
    RegularExpression, RelatedResourceObjectReference, RelatedResourceObjectSelector,
    RelatedResourceObjectSpec, RelatedResourceOrigin, RelatedResourceSpec,
};

/// Annotation prefix on the kcp primary recording service-origin copies.
pub const ANNOTATION_PREFIX: &str = "related-resources.syncagent.kcp.io/";
/// Warning Event when `syncStatus` is on but the copy has no /status.
pub const STATUS_SUBRESOURCE_MISSING: &str = "StatusSubresourceMissing";

/// Evaluates a Go template with a context (the built-in renderer, in the
/// sandbox; a fake in unit tests). Async: the sandbox call runs on the
/// blocking pool.
pub trait Templates: Send + Sync {
    fn render<'a>(
        &'a self,
        cluster: &'a str,
        template: &'a str,
        values: &'a Value,
    ) -> BoxFuture<'a, Result<String, String>>;
}

impl Templates for crate::plugins::TextTemplates {
    fn render<'a>(
        &'a self,
        cluster: &'a str,
        template: &'a str,
        values: &'a Value,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(crate::plugins::TextTemplates::render(
            self, cluster, template, values,
        ))
    }
}

/// One configured related resource, ready to sync.
pub struct Related {
    /// Position in `spec.related` (for messages).
    pub index: usize,
    pub spec: RelatedResourceSpec,
    pub mutator: Option<Arc<dyn Mutator>>,
}

impl Related {
    fn field(&self) -> String {
        format!("spec.related[{}] ({})", self.index, self.spec.identifier)
    }
    pub(super) fn is_service(&self) -> bool {
        self.spec.origin == RelatedResourceOrigin::Service
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RelatedError {
    #[error("{field}: {message}")]
    Config { field: String, message: String },
    #[error("{field}: {action} {what}: {source}{}", access_hint(source))]
    Kube {
        field: String,
        action: &'static str,
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// What to check when the API server refuses access to related objects.
fn access_hint(e: &kube::Error) -> &'static str {
    match e {
        kube::Error::Api(s) if s.code == 403 => {
            " (in kcp, consumers must accept the APIExport's permission claims on namespaces and \
             the related types; on the service cluster, the agent needs access to the related types, \
             e.g. the chart's rbac.publishedResources)"
        }
        _ => "",
    }
}

fn config_err(field: &str, message: impl Into<String>) -> RelatedError {
    RelatedError::Config {
        field: field.to_string(),
        message: message.into(),
    }
}

/// What upstream's CEL rules say about one entry, for objects stored
/// before the CRD carried the rules (messages as the CRD's).
pub fn spec_problems(r: &RelatedResourceSpec) -> Vec<String> {
    use crate::apis::*;
    let mut out = Vec::new();
    let (k, g, v, res) = (
        r.kind.is_some(),
        r.group.is_some(),
        r.version.is_some(),
        r.resource.is_some(),
    );
    if k == (v || res) {
        out.push(RELATED_KIND_XOR_GVR.to_string());
    }
    if res != v {
        out.push(RELATED_RESOURCE_NEEDS_VERSION.to_string());
    }
    if g && !(res && v) {
        out.push(RELATED_GROUP_NEEDS_GVR.to_string());
    }
    if r.identity_hash.is_some() && !(g && v && res) {
        out.push(RELATED_IDENTITY_NEEDS_GVR.to_string());
    }
    if r.origin == RelatedResourceOrigin::Service
        && r.sync_status == Some(true)
        && r.watch.is_none()
    {
        out.push(RELATED_STATUS_NEEDS_WATCH.to_string());
    }
    if let Some(w) = &r.watch
        && w.by_owner.is_some() == w.by_selector.is_some()
    {
        out.push(RELATED_WATCH_ONE.to_string());
    }
    out
}

/// Group, version and resource on the origin side.
pub fn origin_gvr(r: &RelatedResourceSpec) -> (String, String, String) {
    match r.kind.as_deref() {
        Some("ConfigMap") => ("".into(), "v1".into(), "configmaps".into()),
        Some("Secret") => ("".into(), "v1".into(), "secrets".into()),
        _ => (
            r.group.clone().unwrap_or_default(),
            r.version.clone().unwrap_or_default(),
            r.resource.clone().unwrap_or_default(),
        ),
    }
}

/// Group, version and resource on the destination side: `projection`'s
/// non-empty fields replace the origin's (as upstream, an empty group
/// keeps the origin's group).
pub fn dest_gvr(r: &RelatedResourceSpec) -> (String, String, String) {
    let (mut g, mut v, mut res) = origin_gvr(r);
    if let Some(p) = &r.projection {
        if let Some(x) = p.group.clone().filter(|s| !s.is_empty()) {
            g = x;
        }
        if let Some(x) = p.version.clone().filter(|s| !s.is_empty()) {
            v = x;
        }
        if let Some(x) = p.resource.clone().filter(|s| !s.is_empty()) {
            res = x;
        }
    }
    (g, v, res)
}

/// Group, version and resource on the kcp side (origin or destination).
pub fn kcp_gvr(r: &RelatedResourceSpec) -> (String, String, String) {
    if r.origin == RelatedResourceOrigin::Kcp {
        origin_gvr(r)
    } else {
        dest_gvr(r)
    }
}

// ---------------------------------------------------------------------------
// Resolution: pure functions over the primaries.

/// Values at a gjson-style `path` of `obj`: dot-separated keys (`\.`
/// escapes a dot), numeric array indices, and `#` to take every element of
/// an array. A missing field gives no values. Arrays give one value each;
/// values are trimmed and then rewritten by the optional regex.
pub fn reference_values(
    obj: &Value,
    r: &RelatedResourceObjectReference,
) -> Result<Vec<String>, String> {
    let found = gjson_get(obj, &r.path);
    let mut values: Vec<String> = match found {
        None => return Ok(vec![]),
        Some(Value::Array(items)) => items.iter().map(value_string).collect(),
        Some(v) => vec![value_string(&v)],
    };
    for v in &mut values {
        *v = v.trim().to_string();
        if let Some(re) = &r.regex {
            *v = apply_regex(v, re)?;
        }
    }
    Ok(values)
}

/// gjson's `String()` of a value: strings as they are, others as JSON,
/// null as empty.
fn value_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn split_path(path: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(n), Some(p)) = (chars.next(), parts.last_mut()) {
                    p.push(n);
                }
            }
            '.' => parts.push(String::new()),
            c => {
                if let Some(p) = parts.last_mut() {
                    p.push(c);
                }
            }
        }
    }
    parts
}

fn gjson_get(obj: &Value, path: &str) -> Option<Value> {
    fn walk(v: &Value, parts: &[String]) -> Option<Value> {
        let Some((first, rest)) = parts.split_first() else {
            return Some(v.clone());
        };
        match v {
            Value::Array(items) if first == "#" => {
                if rest.is_empty() {
                    return Some(json!(items.len()));
                }
                Some(Value::Array(
                    items.iter().filter_map(|i| walk(i, rest)).collect(),
                ))
            }
            Value::Array(items) => walk(items.get(first.parse::<usize>().ok()?)?, rest),
            Value::Object(m) => walk(m.get(first)?, rest),
            _ => None,
        }
    }
    walk(obj, &split_path(path))
}

/// Upstream's regex rewrite: an empty pattern replaces the value;
/// otherwise every match is replaced (`$1` refers to groups).
pub fn apply_regex(value: &str, re: &RegularExpression) -> Result<String, String> {
    let replacement = re.replacement.as_deref().unwrap_or_default();
    match re.pattern.as_deref().unwrap_or_default() {
        "" => Ok(replacement.to_string()),
        pattern => {
            let expr = regex::Regex::new(pattern)
                .map_err(|e| format!("invalid pattern {pattern:?}: {e}"))?;
            Ok(expr.replace_all(value, replacement).into_owned())
        }
    }
}

/// Pair origin and destination values; the counts must match, and pairs
/// with an empty side are skipped.
pub fn pair_values(
    what: &str,
    origin: Vec<String>,
    dest: Vec<String>,
) -> Result<Vec<(String, String)>, String> {
    if origin.len() != dest.len() {
        return Err(format!(
            "found {} {what} on the origin side, but {} on the destination side",
            origin.len(),
            dest.len()
        ));
    }
    let mut out: Vec<(String, String)> = origin
        .into_iter()
        .zip(dest)
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// The two primaries and where they live, as the templates see them.
pub struct Primaries<'a> {
    pub origin: &'a Value,
    pub dest: &'a Value,
    pub origin_side: RelatedResourceOrigin,
    pub cluster: &'a str,
    pub path: Option<&'a str>,
}

impl Primaries<'_> {
    fn local_remote(&self) -> (&Value, &Value) {
        match self.origin_side {
            RelatedResourceOrigin::Service => (self.origin, self.dest),
            RelatedResourceOrigin::Kcp => (self.dest, self.origin),
        }
    }

    fn side_name(side: RelatedResourceOrigin) -> &'static str {
        match side {
            RelatedResourceOrigin::Service => "service",
            RelatedResourceOrigin::Kcp => "kcp",
        }
    }

    /// `object.template`: evaluated once per side with `.Side`, `.Object`,
    /// `.ClusterName`, `.ClusterPath`. An empty result on either side means
    /// "nothing (yet)".
    pub async fn template_both_sides(
        &self,
        t: &dyn Templates,
        template: &str,
    ) -> Result<Option<(String, String)>, String> {
        let opposite = match self.origin_side {
            RelatedResourceOrigin::Service => RelatedResourceOrigin::Kcp,
            RelatedResourceOrigin::Kcp => RelatedResourceOrigin::Service,
        };
        let ctx = |side, obj: &Value| {
            json!({
                "Side": Self::side_name(side),
                "Object": obj,
                "ClusterName": self.cluster,
                "ClusterPath": self.path.unwrap_or_default(),
            })
        };
        let (origin_ctx, dest_ctx) = (ctx(self.origin_side, self.origin), ctx(opposite, self.dest));
        let o = t
            .render(self.cluster, template, &origin_ctx)
            .await
            .map_err(|e| format!("evaluating the template on the origin side: {e}"))?;
        let d = t
            .render(self.cluster, template, &dest_ctx)
            .await
            .map_err(|e| format!("evaluating the template on the destination side: {e}"))?;
        Ok((!o.is_empty() && !d.is_empty()).then_some((o, d)))
    }

    /// `matchLabels` with templated keys and values (`.LocalObject`,
    /// `.RemoteObject`, `.ClusterName`, `.ClusterPath`); empty keys are
    /// dropped. Returns a label-selector string.
    pub async fn template_label_selector(
        &self,
        t: &dyn Templates,
        sel: &RelatedResourceObjectSelector,
    ) -> Result<String, String> {
        let (local, remote) = self.local_remote();
        let ctx = json!({
            "LocalObject": local,
            "RemoteObject": remote,
            "ClusterName": self.cluster,
            "ClusterPath": self.path.unwrap_or_default(),
        });
        let mut parts = Vec::new();
        for (k, v) in sel.match_labels.clone().unwrap_or_default() {
            let k = self
                .render_if_templated(t, &k, &ctx)
                .await
                .map_err(|e| format!("matchLabels key {k:?}: {e}"))?;
            let v = self
                .render_if_templated(t, &v, &ctx)
                .await
                .map_err(|e| format!("matchLabels value {v:?}: {e}"))?;
            if !k.is_empty() {
                parts.push(format!("{k}={v}"));
            }
        }
        for e in sel.match_expressions.clone().unwrap_or_default() {
            parts.push(
                crate::selector::requirement_string(&e)
                    .map_err(|e| format!("matchExpressions: {e}"))?,
            );
        }
        parts.sort();
        Ok(parts.join(","))
    }

    /// `s` rendered when it holds a template action, else as it is.
    async fn render_if_templated(
        &self,
        t: &dyn Templates,
        s: &str,
        ctx: &Value,
    ) -> Result<String, String> {
        if s.contains("{{") {
            t.render(self.cluster, s, ctx).await
        } else {
            Ok(s.to_string())
        }
    }

    /// The selector's rewrite: what an origin name (or namespace) becomes
    /// on the destination side. Templates see `.Value`, `.RelatedObject`
    /// (null for namespaces), `.LocalObject`, `.RemoteObject`,
    /// `.ClusterName`, `.ClusterPath`.
    pub async fn rewrite(
        &self,
        t: &dyn Templates,
        sel: &RelatedResourceObjectSelector,
        value: &str,
        related: Option<&Value>,
    ) -> Result<String, String> {
        if let Some(re) = &sel.rewrite.regex {
            return apply_regex(value, re);
        }
        let Some(tpl) = sel
            .rewrite
            .template
            .as_ref()
            .and_then(|t| t.template.clone())
        else {
            return Err("selector.rewrite: set regex or template".into());
        };
        let (local, remote) = self.local_remote();
        let ctx = json!({
            "Value": value,
            "RelatedObject": related,
            "LocalObject": local,
            "RemoteObject": remote,
            "ClusterName": self.cluster,
            "ClusterPath": self.path.unwrap_or_default(),
        });
        t.render(self.cluster, &tpl, &ctx).await
    }
}

// ---------------------------------------------------------------------------
// Syncing.

/// A found original and where its copy goes.
struct Resolved {
    original: DynamicObject,
    dest_namespace: String,
    dest_name: String,
}

/// Look up the kind of `group/version/resource` through discovery
/// (`plural` is the URL segment).
pub(super) async fn api_resource(
    client: &Client,
    field: &str,
    (group, version, resource): (String, String, String),
    plural: String,
) -> Result<ApiResource, RelatedError> {
    let (api_version, list) = if group.is_empty() {
        (
            version.clone(),
            client.list_core_api_resources(&version).await,
        )
    } else {
        let gv = format!("{group}/{version}");
        (gv.clone(), client.list_api_group_resources(&gv).await)
    };
    let list = list.map_err(|source| RelatedError::Kube {
        field: field.into(),
        action: "discovering",
        what: format!("{resource} in {api_version}"),
        source,
    })?;
    let r = list
        .resources
        .iter()
        .find(|r| r.name == resource)
        .ok_or_else(|| {
            config_err(
                field,
                format!("the API server does not serve {resource} in {api_version}; check group, version and resource"),
            )
        })?;
    Ok(ApiResource {
        group,
        version,
        api_version,
        kind: r.kind.clone(),
        plural,
    })
}

/// What the related-resource pass needs from the primary's sync.
pub struct PrimaryPair<'a> {
    pub key: &'a ObjectKey,
    pub origin: &'a Origin<'a>,
    /// The kcp primary.
    pub remote: &'a Value,
    /// Its copy on the service cluster.
    pub local: &'a Value,
}

impl SyncContext {
    /// Process every related resource (after the primary is in sync, or in
    /// delete mode while the primary is being deleted). `Some` asks the
    /// caller to requeue.
    pub(super) async fn process_related(
        &self,
        p: &PrimaryPair<'_>,
        deleting: bool,
    ) -> Result<Option<Outcome>, SyncError> {
        let plugins = self.plugins();
        for r in &plugins.related {
            if let Some(o) = self
                .process_one(p, r, deleting)
                .await
                .map_err(SyncError::from)?
            {
                return Ok(Some(o));
            }
        }
        Ok(None)
    }

    async fn side_api(
        &self,
        r: &Related,
        service_side: bool,
        key: &ObjectKey,
    ) -> Result<SideApi, RelatedError> {
        let field = r.field();
        let gvr = if r.is_service() == service_side {
            origin_gvr(&r.spec)
        } else {
            dest_gvr(&r.spec)
        };
        let client = if service_side {
            self.service.clone()
        } else {
            self.kcp_client(&key.cluster)
                .map_err(|e| config_err(&field, e.to_string()))?
        };
        // As upstream, the identity hash only goes into the APIExport's
        // permission claim: the virtual workspace serves the claimed type
        // under its plain resource name (and refuses `<resource>:<hash>`).
        let plural = gvr.2.clone();
        let cache_key = format!(
            "{}/{}/{}/{plural}",
            if service_side { "service" } else { "kcp" },
            gvr.0,
            gvr.1
        );
        let cached = self
            .related_kinds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&cache_key)
            .cloned();
        let cache = self.side_cache(service_side, &gvr, &key.cluster);
        let ar = match cached {
            Some(ar) => ar,
            None => {
                let ar = api_resource(&client, &field, gvr, plural).await?;
                self.related_kinds
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(cache_key, ar.clone());
                ar
            }
        };
        Ok(SideApi { client, ar, cache })
    }

    async fn process_one(
        &self,
        p: &PrimaryPair<'_>,
        r: &Related,
        deleting: bool,
    ) -> Result<Option<Outcome>, RelatedError> {
        let field = r.field();
        let service = r.is_service();
        let force_delete = deleting && (r.spec.cleanup == Some(true) || !service);
        if deleting && !force_delete {
            return Ok(None);
        }
        let (origin_obj, dest_obj) = if service {
            (p.local, p.remote)
        } else {
            (p.remote, p.local)
        };
        let origin_api = self.side_api(r, service, p.key).await?;
        let dest_api = self.side_api(r, !service, p.key).await?;
        let prim = Primaries {
            origin: origin_obj,
            dest: dest_obj,
            origin_side: r.spec.origin,
            cluster: &p.key.cluster,
            path: p.origin.path,
        };
        let mut resolved = self.resolve(&field, r, &prim, &origin_api).await?;
        resolved.sort_by_key(|x| {
            format!(
                "{}/{}",
                x.original.metadata.namespace.as_deref().unwrap_or_default(),
                x.original.metadata.name.as_deref().unwrap_or_default()
            )
        });
        let mut requeue = false;
        for (idx, res) in resolved.iter().enumerate() {
            requeue |= self
                .sync_object(p, r, &origin_api, &dest_api, res, force_delete)
                .await?;
            if service && !deleting {
                let annotation = format!("{ANNOTATION_PREFIX}{}.{idx}", r.spec.identifier);
                let value = annotation_value(
                    &res.dest_namespace,
                    &res.dest_name,
                    &origin_api.ar.api_version,
                    &origin_api.ar.kind,
                );
                let existing = p.remote["metadata"]["annotations"][&annotation].as_str();
                if existing != Some(value.as_str()) {
                    let kcp_api = self
                        .kcp_api(p.key)
                        .map_err(|e| config_err(&field, e.to_string()))?;
                    let patch = json!({"metadata": {"annotations": {&annotation: value}}});
                    let recorded = kcp_api
                        .patch(&p.key.name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map_err(|source| RelatedError::Kube {
                            field: field.clone(),
                            action: "recording the related object on",
                            what: p.key.to_string(),
                            source,
                        })?;
                    self.cache.write_through(recorded);
                    debug!(key = %p.key, %annotation, "recorded related object on the primary");
                    return Ok(Some(Outcome::Requeue(Duration::ZERO)));
                }
            }
        }
        Ok(requeue.then_some(Outcome::Requeue(Duration::from_secs(1))))
    }

    /// Find the originals and the names of their copies.
    async fn resolve(
        &self,
        field: &str,
        r: &Related,
        prim: &Primaries<'_>,
        origin_api: &SideApi,
    ) -> Result<Vec<Resolved>, RelatedError> {
        let plugins = self.plugins();
        let templates = plugins.templates.as_deref().ok_or_else(|| {
            config_err(
                field,
                "no template evaluator is configured (internal error)",
            )
        })?;
        let ns_of = |v: &Value| {
            v["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let namespaces: Vec<(String, String)> = match &r.spec.object.namespace {
            None => {
                let (o, d) = (ns_of(prim.origin), ns_of(prim.dest));
                if o.is_empty() || d.is_empty() {
                    return Err(config_err(
                        field,
                        "the primary object (or its copy) is cluster-scoped, so object.namespace must say where the related objects are",
                    ));
                }
                vec![(o, d)]
            }
            Some(spec) => {
                self.resolve_names(
                    &format!("{field}.object.namespace"),
                    spec,
                    prim,
                    templates,
                    None,
                )
                .await?
            }
        };
        let mut out = Vec::new();
        for (origin_ns, dest_ns) in namespaces {
            let names = self
                .resolve_names(
                    &format!("{field}.object"),
                    &r.spec.object.spec,
                    prim,
                    templates,
                    Some((origin_api, origin_ns.as_str())),
                )
                .await?;
            for (origin_name, dest_name) in names {
                let got = origin_api
                    .get(&origin_ns, &origin_name)
                    .await
                    .map_err(|source| RelatedError::Kube {
                        field: field.into(),
                        action: "reading",
                        what: format!("{origin_ns}/{origin_name}"),
                        source,
                    })?;
                // Not there (yet): nothing to do.
                if let Some(original) = got {
                    out.push(Resolved {
                        original,
                        dest_namespace: dest_ns.clone(),
                        dest_name,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Origin → destination names (of objects when `objects` is given,
    /// else of namespaces).
    async fn resolve_names(
        &self,
        field: &str,
        spec: &RelatedResourceObjectSpec,
        prim: &Primaries<'_>,
        templates: &dyn Templates,
        objects: Option<(&SideApi, &str)>,
    ) -> Result<Vec<(String, String)>, RelatedError> {
        let what = if objects.is_some() {
            "names"
        } else {
            "namespaces"
        };
        if let Some(reference) = &spec.reference {
            let o = reference_values(prim.origin, reference)
                .map_err(|e| config_err(field, format!("reference: {e}")))?;
            if o.is_empty() {
                return Ok(vec![]);
            }
            let d = reference_values(prim.dest, reference)
                .map_err(|e| config_err(field, format!("reference: {e}")))?;
            return pair_values(what, o, d).map_err(|e| config_err(field, e));
        }
        if let Some(t) = spec.template.as_ref().and_then(|t| t.template.as_deref()) {
            return Ok(prim
                .template_both_sides(templates, t)
                .await
                .map_err(|e| config_err(field, format!("template: {e}")))?
                .into_iter()
                .collect());
        }
        let Some(sel) = &spec.selector else {
            return Err(config_err(
                field,
                "set one of reference, selector or template",
            ));
        };
        let labels = prim
            .template_label_selector(templates, sel)
            .await
            .map_err(|e| config_err(field, format!("selector: {e}")))?;
        let found: Vec<(String, Option<Value>)> = match objects {
            Some((api, ns)) => api
                .list(ns, &labels)
                .await
                .map_err(|source| RelatedError::Kube {
                    field: field.into(),
                    action: "listing",
                    what: format!("{} in namespace {ns} with labels {labels:?}", api.ar.plural),
                    source,
                })?
                .into_iter()
                .map(|o| {
                    let v = serde_json::to_value(&o).ok();
                    (o.metadata.name.unwrap_or_default(), v)
                })
                .collect(),
            None => self
                .namespaces_api(
                    prim.origin_side == RelatedResourceOrigin::Service,
                    prim.cluster,
                )
                .map_err(|e| config_err(field, e.to_string()))?
                .list("", &labels)
                .await
                .map_err(|source| RelatedError::Kube {
                    field: field.into(),
                    action: "listing",
                    what: format!("namespaces with labels {labels:?}"),
                    source,
                })?
                .into_iter()
                .map(|n| (n.metadata.name.unwrap_or_default(), None))
                .collect(),
        };
        let mut out = Vec::new();
        for (name, obj) in found {
            let dest = prim
                .rewrite(templates, sel, &name, obj.as_ref())
                .await
                .map_err(|e| config_err(field, format!("selector.rewrite of {name:?}: {e}")))?;
            if !dest.is_empty() {
                out.push((name, dest));
            }
        }
        Ok(out)
    }

    /// Sync one original to its copy. Returns whether to requeue.
    async fn sync_object(
        &self,
        p: &PrimaryPair<'_>,
        r: &Related,
        origin_api: &SideApi,
        dest_api: &SideApi,
        res: &Resolved,
        force_delete: bool,
    ) -> Result<bool, RelatedError> {
        let field = r.field();
        let service = r.is_service();
        let orig_ns = res.original.metadata.namespace.clone().unwrap_or_default();
        let orig_name = res.original.metadata.name.clone().unwrap_or_default();
        let kerr = |action: &'static str, what: String| {
            let field = field.clone();
            move |source| RelatedError::Kube {
                field,
                action,
                what,
                source,
            }
        };
        let dest = dest_api.api(&res.dest_namespace);
        let dest_what = format!("{}/{}", res.dest_namespace, res.dest_name);
        let existing = dest_api
            .get(&res.dest_namespace, &res.dest_name)
            .await
            .map_err(kerr("reading the copy", dest_what.clone()))?;
        let orig_finalizers = res.original.metadata.finalizers.clone().unwrap_or_default();
        let orig_deleting = res.original.metadata.deletion_timestamp.is_some();

        // Deletion: of the primary (cleanup), or of a kcp original (whose
        // finalizer holds it until its copy is gone).
        if force_delete || (!service && orig_deleting) {
            if let Some(e) = &existing {
                if e.metadata.deletion_timestamp.is_none() {
                    dest_api
                        .delete(&res.dest_namespace, &res.dest_name)
                        .await
                        .map_err(kerr("deleting the copy", dest_what.clone()))?;
                    info!(key = %p.key, identifier = %r.spec.identifier, copy = %dest_what, "deleted related copy");
                }
                return Ok(true);
            }
            if !service && orig_finalizers.iter().any(|f| f == FINALIZER) {
                let kept: Vec<&String> =
                    orig_finalizers.iter().filter(|f| *f != FINALIZER).collect();
                let patch = json!({"metadata": {"finalizers": kept, "resourceVersion": res.original.metadata.resource_version}});
                let released = origin_api
                    .api(&orig_ns)
                    .patch(&orig_name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(kerr(
                        "releasing the finalizer of",
                        format!("{orig_ns}/{orig_name}"),
                    ))?;
                origin_api.remember(released);
            }
            return Ok(false);
        }
        // kcp originals are held by our finalizer until their copy is gone.
        if !service && !orig_finalizers.iter().any(|f| f == FINALIZER) {
            let mut f = orig_finalizers.clone();
            f.push(FINALIZER.to_string());
            let patch = json!({"metadata": {"finalizers": f, "resourceVersion": res.original.metadata.resource_version}});
            let held = origin_api
                .api(&orig_ns)
                .patch(&orig_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(kerr(
                    "adding the finalizer to",
                    format!("{orig_ns}/{orig_name}"),
                ))?;
            origin_api.remember(held);
            return Ok(true);
        }

        let sync_status = r.spec.sync_status == Some(true);
        let original = serde_json::to_value(&res.original)
            .map_err(|e| config_err(&field, format!("the original is not JSON: {e}")))?;
        // With syncStatus, status is a subresource: left out of the content
        // and forwarded through /status. Without, it is ordinary content.
        let mut source = original.clone();
        strip_metadata(&mut source);
        // `v` is the original or a mutation's result checked below: an
        // object; anything else passes through unchanged (and fails to parse
        // as an object later, with an error).
        let as_copy = |mut v: Value| -> Value {
            if let Some(o) = v.as_object_mut() {
                o.insert("apiVersion".into(), json!(dest_api.ar.api_version));
                o.insert("kind".into(), json!(dest_api.ar.kind));
            }
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("name".into(), json!(res.dest_name));
                if res.dest_namespace.is_empty() {
                    meta.remove("namespace");
                } else {
                    meta.insert("namespace".into(), json!(res.dest_namespace));
                }
            }
            v
        };
        let existing_json = existing.as_ref().and_then(|e| serde_json::to_value(e).ok());
        if let Some(m) = &r.mutator {
            let projected;
            let other = match &existing_json {
                Some(e) => e,
                None => {
                    projected = as_copy(source.clone());
                    &projected
                }
            };
            m.mutate_spec(p.origin, &mut source, Some(other))
                .await
                .map_err(|e| config_err(&field, format!("mutation: {e}")))?;
            if !source["metadata"].is_object() {
                return Err(config_err(
                    &field,
                    "the spec mutation returned something that is not an object with metadata",
                ));
            }
        }
        let forwarded_status = source.get("status").cloned().unwrap_or(Value::Null);
        if sync_status && let Some(o) = source.as_object_mut() {
            o.remove("status");
        }
        let mut state = source.clone();
        if let Some(o) = state.as_object_mut() {
            o.insert("apiVersion".into(), json!(origin_api.ar.api_version));
            o.insert("kind".into(), json!(origin_api.ar.kind));
        }
        let desired = as_copy(source);
        let state_key = ObjectKey {
            cluster: if service {
                String::new()
            } else {
                p.key.cluster.clone()
            },
            namespace: Some(orig_ns.clone()).filter(|n| !n.is_empty()),
            name: orig_name.clone(),
        };
        let (pav, pkind) = (
            self.remote.ar.api_version.as_str(),
            self.remote.ar.kind.as_str(),
        );
        let mut changed = false;
        match &existing {
            None => {
                if !res.dest_namespace.is_empty() {
                    if service {
                        ensure_kcp_namespace(&dest_api.client, &res.dest_namespace)
                            .await
                            .map_err(kerr("creating the namespace", res.dest_namespace.clone()))?;
                    } else {
                        crate::namespace::ensure(&self.service, &res.dest_namespace)
                            .await
                            .map_err(|e| RelatedError::Kube {
                                field: field.clone(),
                                action: e.action,
                                what: res.dest_namespace.clone(),
                                source: e.source,
                            })?;
                    }
                }
                let obj: DynamicObject = serde_json::from_value(desired).map_err(|e| {
                    config_err(&field, format!("the copy is not a valid object: {e}"))
                })?;
                let created = match dest.create(&PostParams::default(), &obj).await {
                    Ok(c) => c,
                    // The cache has not seen the copy yet (it trails the
                    // API by a watch event): check again shortly.
                    Err(kube::Error::Api(s)) if s.code == 409 && dest_api.cached() => {
                        debug!(key = %p.key, copy = %dest_what, "related copy exists but is not cached yet");
                        return Ok(true);
                    }
                    Err(e) => return Err(kerr("creating the copy", dest_what.clone())(e)),
                };
                dest_api.remember(created);
                info!(key = %p.key, identifier = %r.spec.identifier, copy = %dest_what, "created related copy");
                changed = true;
            }
            Some(e) => {
                let last = self
                    .state
                    .get_entry(p.key, pav, pkind, &state_key)
                    .await
                    .map_err(kerr(
                        "reading the sync state of",
                        format!("{orig_ns}/{orig_name}"),
                    ))?;
                match last {
                    Some(last) => {
                        let patch = patch::diff(
                            &super::syncer::without_identity(&last),
                            &super::syncer::without_identity(&state),
                        );
                        if let Some(patch) =
                            patch.filter(|p| p.as_object().is_some_and(|m| !m.is_empty()))
                        {
                            let patched = dest
                                .patch(
                                    &res.dest_name,
                                    &PatchParams::default(),
                                    &Patch::Merge(&patch),
                                )
                                .await
                                .map_err(kerr("patching the copy", dest_what.clone()))?;
                            dest_api.remember(patched);
                            info!(key = %p.key, identifier = %r.spec.identifier, copy = %dest_what, "updated related copy");
                            changed = true;
                        }
                    }
                    None => {
                        // A serialized DynamicObject: an object with a
                        // metadata object, so the indexing below cannot panic.
                        let mut obj = serde_json::to_value(e).map_err(|e| {
                            config_err(&field, format!("the copy is not JSON: {e}"))
                        })?;
                        for (k, v) in desired.as_object().into_iter().flatten() {
                            if !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status")
                            {
                                obj[k] = v.clone();
                            }
                        }
                        for f in ["labels", "annotations"] {
                            if let Some(m) = desired["metadata"][f].as_object() {
                                if !obj["metadata"][f].is_object() {
                                    obj["metadata"][f] = json!({});
                                }
                                for (k, v) in m {
                                    obj["metadata"][f][k] = v.clone();
                                }
                            }
                        }
                        let obj: DynamicObject = serde_json::from_value(obj).map_err(|e| {
                            config_err(&field, format!("the copy is not a valid object: {e}"))
                        })?;
                        let replaced = dest
                            .replace(&res.dest_name, &PostParams::default(), &obj)
                            .await
                            .map_err(kerr("updating the copy", dest_what.clone()))?;
                        dest_api.remember(replaced);
                        changed = true;
                    }
                }
            }
        }
        self.state
            .put_entry(p.key, pav, pkind, &state_key, &state)
            .await
            .map_err(kerr(
                "storing the sync state of",
                format!("{orig_ns}/{orig_name}"),
            ))?;

        if sync_status {
            changed |= self
                .forward_status(
                    p,
                    r,
                    dest_api,
                    &res.dest_namespace,
                    &res.dest_name,
                    &dest_what,
                    &original,
                    forwarded_status,
                )
                .await?;
        }
        Ok(changed)
    }
}

impl SyncContext {
    /// `syncStatus`: write the original's status to the copy through
    /// `/status`. A copy without the subresource gets a Warning Event (on
    /// the kcp-side related object) instead of an endless retry.
    #[allow(clippy::too_many_arguments)]
    async fn forward_status(
        &self,
        p: &PrimaryPair<'_>,
        r: &Related,
        dest_api: &SideApi,
        dest_ns: &str,
        dest_name: &str,
        dest_what: &str,
        original: &Value,
        status: Value,
    ) -> Result<bool, RelatedError> {
        let field = r.field();
        let kerr = |action: &'static str| {
            let (field, what) = (field.clone(), dest_what.to_string());
            move |source| RelatedError::Kube {
                field,
                action,
                what,
                source,
            }
        };
        let Some(current) = dest_api
            .get(dest_ns, dest_name)
            .await
            .map_err(kerr("reading the copy"))?
        else {
            return Ok(false);
        };
        let mut cur = serde_json::to_value(&current)
            .map_err(|e| config_err(&field, format!("the copy is not JSON: {e}")))?;
        if patch::json_eq(cur.get("status").unwrap_or(&Value::Null), &status) {
            return Ok(false);
        }
        cur["status"] = status;
        let obj: DynamicObject = serde_json::from_value(cur.clone())
            .map_err(|e| config_err(&field, format!("the copy is not a valid object: {e}")))?;
        match dest_api
            .api(dest_ns)
            .replace_status(dest_name, &PostParams::default(), &obj)
            .await
        {
            Ok(updated) => {
                dest_api.remember(updated);
                debug!(key = %p.key, identifier = %r.spec.identifier, copy = %dest_what, "forwarded status of related object");
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                warn!(key = %p.key, identifier = %r.spec.identifier, copy = %dest_what, "syncStatus is set but the copy has no status subresource");
                let kcp_side = if r.is_service() { &cur } else { original };
                self.emit(
                    p.key,
                    kcp_side,
                    true,
                    STATUS_SUBRESOURCE_MISSING,
                    format!(
                        "{field}: cannot sync status: the destination resource has no status subresource; set syncStatus: false or add subresources.status to its CRD"
                    ),
                );
                Ok(false)
            }
            Err(e) => Err(kerr("updating the status of the copy")(e)),
        }
    }
}

/// The value of a `related-resources.syncagent.kcp.io/<id>.<index>`
/// annotation, byte for byte as upstream's `json.Marshal` of its struct
/// (field order namespace, name, apiVersion, kind; namespace omitted when
/// empty), so an upstream agent and this one agree on it.
pub fn annotation_value(namespace: &str, name: &str, api_version: &str, kind: &str) -> String {
    let mut fields = Vec::with_capacity(4);
    if !namespace.is_empty() {
        fields.push(("namespace", namespace));
    }
    fields.extend([("name", name), ("apiVersion", api_version), ("kind", kind)]);
    super::gojson::string_struct(&fields)
}

/// Create a Namespace in the consumer workspace (through the virtual
/// workspace, which needs the `namespaces` claim) unless it exists.
async fn ensure_kcp_namespace(client: &Client, ns: &str) -> Result<(), kube::Error> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    if api.get_opt(ns).await?.is_some() {
        return Ok(());
    }
    let obj = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(ns.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Build the related resources of a PublishedResource: their mutation
/// chains (through the plugin host, as the primary's).
pub async fn build(
    plugins: &crate::plugins::PluginHost,
    pr: &crate::apis::PublishedResource,
) -> Result<Vec<Related>, crate::plugins::PluginSetupError> {
    let mut out = Vec::new();
    for (index, spec) in pr.spec.related.iter().flatten().enumerate() {
        let mutator = match &spec.mutation {
            Some(m) => {
                plugins
                    .mutator_for(pr, &format!("spec.related[{index}].mutation"), m)
                    .await?
            }
            None => None,
        };
        out.push(Related {
            index,
            spec: spec.clone(),
            mutator,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::apis::{RelatedResourceSelectorRewrite, TemplateExpression};

    /// Replaces `{{ .X.y.z }}` with the value at that path; enough to test
    /// which context each template gets.
    struct FakeTemplates;
    impl Templates for FakeTemplates {
        fn render<'a>(
            &'a self,
            _: &'a str,
            template: &'a str,
            values: &'a Value,
        ) -> BoxFuture<'a, Result<String, String>> {
            Box::pin(std::future::ready(fake_render(template, values)))
        }
    }

    fn fake_render(template: &str, values: &Value) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = template;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let end = rest[start..].find("}}").ok_or("unclosed action")? + start;
            let path = rest[start + 2..end].trim().trim_start_matches('.');
            let v = gjson_get(values, path).ok_or(format!("no field {path}"))?;
            out.push_str(&value_string(&v));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        Ok(out.trim().to_string())
    }

    fn reference(path: &str, re: Option<(&str, &str)>) -> RelatedResourceObjectReference {
        RelatedResourceObjectReference {
            path: path.into(),
            regex: re.map(|(p, r)| RegularExpression {
                pattern: Some(p.into()),
                replacement: Some(r.into()),
            }),
        }
    }

    #[test]
    fn reference_finds_values() {
        let obj = json!({"spec": {"secret": " creds ", "list": ["a", "", "c"], "items": [{"n": "x"}, {"n": "y"}], "a.b": "dotted"}});
        assert_eq!(
            reference_values(&obj, &reference("spec.secret", None)).unwrap(),
            ["creds"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.list", None)).unwrap(),
            ["a", "", "c"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.items.#.n", None)).unwrap(),
            ["x", "y"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.items.1.n", None)).unwrap(),
            ["y"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.a\\.b", None)).unwrap(),
            ["dotted"]
        );
        // Missing means "not yet".
        assert!(
            reference_values(&obj, &reference("spec.nope", None))
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.secret", Some(("^(.+)$", "$1-copy")))).unwrap(),
            ["creds-copy"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.secret", Some(("", "fixed")))).unwrap(),
            ["fixed"]
        );
        assert!(reference_values(&obj, &reference("spec.secret", Some(("(", "")))).is_err());
    }

    #[test]
    fn annotation_value_matches_upstream_bytes() {
        assert_eq!(
            annotation_value("default", "db-creds", "v1", "Secret"),
            r#"{"namespace":"default","name":"db-creds","apiVersion":"v1","kind":"Secret"}"#
        );
        assert_eq!(
            annotation_value("", "a<b", "example.com/v1", "Thing"),
            r#"{"name":"a\u003cb","apiVersion":"example.com/v1","kind":"Thing"}"#
        );
    }

    #[test]
    fn pairs_need_equal_counts_and_skip_empty() {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            pair_values("names", v(&["a", "", "c"]), v(&["x", "y", ""])).unwrap(),
            [("a".to_string(), "x".to_string())]
        );
        let e = pair_values("names", v(&["a"]), v(&[])).unwrap_err();
        assert!(e.contains("found 1 names on the origin side, but 0"), "{e}");
    }

    fn prim<'a>(origin: &'a Value, dest: &'a Value, side: RelatedResourceOrigin) -> Primaries<'a> {
        Primaries {
            origin,
            dest,
            origin_side: side,
            cluster: "abc",
            path: Some("root:x"),
        }
    }

    #[tokio::test]
    async fn templates_run_on_both_sides() {
        let local = json!({"metadata": {"name": "local"}});
        let remote = json!({"metadata": {"name": "remote"}});
        let p = prim(&local, &remote, RelatedResourceOrigin::Service);
        let got = p
            .template_both_sides(
                &FakeTemplates,
                "{{ .Object.metadata.name }}-{{ .Side }}-{{ .ClusterName }}",
            )
            .await
            .unwrap();
        assert_eq!(
            got,
            Some(("local-service-abc".into(), "remote-kcp-abc".into()))
        );
        // Empty on one side: nothing.
        let empty = json!({"metadata": {"name": ""}});
        let p = prim(&local, &empty, RelatedResourceOrigin::Service);
        assert_eq!(
            p.template_both_sides(&FakeTemplates, "{{ .Object.metadata.name }}")
                .await
                .unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn selectors_are_templated_and_rewritten() {
        let local = json!({"metadata": {"name": "local"}});
        let remote = json!({"metadata": {"name": "remote"}});
        // Origin kcp: the origin primary is the remote one.
        let p = prim(&remote, &local, RelatedResourceOrigin::Kcp);
        let sel = RelatedResourceObjectSelector {
            match_labels: Some(BTreeMap::from([
                (
                    "owner".to_string(),
                    "{{ .RemoteObject.metadata.name }}".to_string(),
                ),
                (
                    "{{ .LocalObject.metadata.nope }}".to_string(),
                    "x".to_string(),
                ),
                ("fixed".to_string(), "{{ .ClusterName }}".to_string()),
            ])),
            match_expressions: None,
            rewrite: RelatedResourceSelectorRewrite {
                regex: None,
                template: Some(TemplateExpression {
                    template: Some(
                        "{{ .Value }}-{{ .LocalObject.metadata.name }}-{{ .RelatedObject.data.k }}"
                            .into(),
                    ),
                }),
            },
        };
        // The key template errors (missing field) in the fake; a real
        // template yields "" for a missing map key, and empty keys are
        // dropped: test that with a template that renders empty.
        assert!(
            p.template_label_selector(&FakeTemplates, &sel)
                .await
                .is_err()
        );
        let mut sel2 = sel.clone();
        sel2.match_labels = Some(BTreeMap::from([
            (
                "owner".to_string(),
                "{{ .RemoteObject.metadata.name }}".to_string(),
            ),
            (
                "{{ .LocalObject.metadata.empty }}".to_string(),
                "x".to_string(),
            ),
            ("fixed".to_string(), "{{ .ClusterName }}".to_string()),
        ]));
        let local2 = json!({"metadata": {"name": "local", "empty": ""}});
        let p = prim(&remote, &local2, RelatedResourceOrigin::Kcp);
        assert_eq!(
            p.template_label_selector(&FakeTemplates, &sel2)
                .await
                .unwrap(),
            "fixed=abc,owner=remote"
        );
        let related = json!({"data": {"k": "v"}});
        assert_eq!(
            p.rewrite(&FakeTemplates, &sel2, "orig", Some(&related))
                .await
                .unwrap(),
            "orig-local-v"
        );
        let mut sel3 = sel2.clone();
        sel3.rewrite = RelatedResourceSelectorRewrite {
            regex: Some(RegularExpression {
                pattern: Some("^orig$".into()),
                replacement: Some("renamed".into()),
            }),
            template: None,
        };
        assert_eq!(
            p.rewrite(&FakeTemplates, &sel3, "orig", None)
                .await
                .unwrap(),
            "renamed"
        );
    }

    #[test]
    fn gvrs_and_rules() {
        let mut r: RelatedResourceSpec = serde_json::from_value(json!({
            "identifier": "x", "origin": "service", "kind": "Secret",
            "object": {"reference": {"path": "spec.a"}}
        }))
        .unwrap();
        assert_eq!(origin_gvr(&r), ("".into(), "v1".into(), "secrets".into()));
        assert!(spec_problems(&r).is_empty());
        r.projection = Some(crate::apis::RelatedResourceProjection {
            group: None,
            version: None,
            resource: Some("configmaps".into()),
        });
        assert_eq!(dest_gvr(&r), ("".into(), "v1".into(), "configmaps".into()));
        assert_eq!(kcp_gvr(&r), ("".into(), "v1".into(), "configmaps".into()));
        r.sync_status = Some(true);
        assert_eq!(spec_problems(&r), [crate::apis::RELATED_STATUS_NEEDS_WATCH]);
        r.kind = None;
        r.group = Some("g".into());
        r.identity_hash = Some("h".into());
        assert_eq!(
            spec_problems(&r),
            [
                crate::apis::RELATED_KIND_XOR_GVR,
                crate::apis::RELATED_GROUP_NEEDS_GVR,
                crate::apis::RELATED_IDENTITY_NEEDS_GVR,
                crate::apis::RELATED_STATUS_NEEDS_WATCH,
            ]
        );
    }
}
