//! Related resources (`spec.related[]`): objects that belong to a primary
//! object, such as the Secret holding a database's credentials. They are
//! copied from their origin side (`service` or `kcp`) to the other side once
//! the primary is in sync, and cleaned up when the primary is deleted.
//!
//! Per primary ([`run`]), for each entry: [`resolve`]
//! its kinds and the originals it names, [`copy`] each one to the other side,
//! then forward its [`status`] when `syncStatus` asks. [`find`] holds the
//! pure logic over the two primaries (templates run in the sandbox through
//! a [`Templates`] evaluator).

mod copy;
mod find;
mod resolve;
mod status;

use std::time::Duration;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use super::caches::SideApi;
use super::context::Pass;
use super::error::{RelatedError, SyncError, config_err};
use super::patch;
use super::ports::{Related, Templates};
use super::strip::strip_metadata;
use crate::apis::{
    RegularExpression, RelatedResourceObjectReference, RelatedResourceObjectSelector,
    RelatedResourceObjectSpec, RelatedResourceOrigin, RelatedResourceSpec,
};
use crate::controller::runner::Outcome;
use crate::controller::store::{KeyParts, ObjectKey};
pub(crate) use copy::as_copy;
pub(crate) use find::Primaries;
use find::*;
pub(super) use resolve::api_resource;
pub(crate) use resolve::{Originals, Resolved, resolve};

/// Annotation prefix on the kcp primary recording service-origin copies.
pub const ANNOTATION_PREFIX: &str = "related-resources.syncagent.kcp.io/";
/// Warning Event when `syncStatus` is on but the copy has no /status.
pub const STATUS_SUBRESOURCE_MISSING: &str = "StatusSubresourceMissing";

/// The related-object pass of one primary: its [`Pass`] and its copy on
/// the service cluster.
struct RelatedPass<'a> {
    pass: &'a Pass<'a>,
    /// The primary's copy, as JSON.
    local: &'a Value,
}

impl<'a> std::ops::Deref for RelatedPass<'a> {
    type Target = Pass<'a>;
    fn deref(&self) -> &Pass<'a> {
        self.pass
    }
}

/// Process every related resource of the primary of `pass`, whose copy is
/// `local` (after the primary is in sync, or in delete mode while the
/// primary is being deleted). `Some` asks the caller to requeue.
pub(super) async fn run(
    pass: &Pass<'_>,
    local: &Value,
    deleting: bool,
) -> Result<Option<Outcome>, SyncError> {
    let rp = RelatedPass { pass, local };
    for r in &pass.plugins.related {
        if let Some(o) = rp.process_one(r, deleting).await? {
            return Ok(Some(o));
        }
    }
    Ok(None)
}

impl RelatedPass<'_> {
    async fn side_api(
        &self,
        r: &Related,
        service_side: bool,
        key: &ObjectKey,
    ) -> Result<SideApi, RelatedError> {
        let field = r.field();
        let gvr = if r.is_service() == service_side {
            r.spec.origin_gvr()
        } else {
            r.spec.dest_gvr()
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
            (self.local, self.object)
        } else {
            (self.object, self.local)
        };
        let origin_api = self.side_api(r, service, self.key).await?;
        let dest_api = self.side_api(r, !service, self.key).await?;
        let prim = Primaries {
            origin: origin_obj,
            dest: dest_obj,
            origin_side: r.spec.origin,
            cluster: &self.key.cluster,
            path: self.origin.path,
        };
        let plugins = self.plugins.clone();
        let templates = plugins.templates.as_deref().ok_or_else(|| {
            config_err(
                &field,
                "no template evaluator is configured (internal error)",
            )
        })?;
        let originals = resolve::ClusterOriginals {
            pass: self,
            api: &origin_api,
            origin_side: r.spec.origin,
        };
        let resolved = resolve::resolve(&field, &r.spec, &prim, templates, &originals).await?;
        let mut requeue = false;
        for (idx, res) in resolved.iter().enumerate() {
            requeue |= self
                .sync_object(r, &origin_api, &dest_api, res, force_delete)
                .await?;
            if service && !deleting {
                let annotation = format!("{ANNOTATION_PREFIX}{}.{idx}", r.spec.identifier);
                let value = annotation_value(
                    &res.dest_namespace,
                    &res.dest_name,
                    &origin_api.ar.api_version,
                    &origin_api.ar.kind,
                );
                let existing = self.object["metadata"]["annotations"][&annotation].as_str();
                if existing != Some(value.as_str()) {
                    let patch = json!({"metadata": {"annotations": {&annotation: value}}});
                    let recorded = self
                        .kcp_api
                        .patch(
                            &self.key.name,
                            &PatchParams::default(),
                            &Patch::Merge(&patch),
                        )
                        .await
                        .map_err(|source| RelatedError::Kube {
                            field: field.clone(),
                            action: "recording the related object on",
                            what: self.key.to_string(),
                            source,
                        })?;
                    self.cache.write_through(recorded);
                    debug!(key = %self.key, %annotation, "recorded related object on the primary");
                    return Ok(Some(Outcome::Requeue(Duration::ZERO)));
                }
            }
        }
        Ok(requeue.then_some(Outcome::Requeue(Duration::from_secs(1))))
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
