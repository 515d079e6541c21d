//! Spec down: the plugins compute the copy the kcp object asks for
//! (naming, mutation; the projection is the copy's kind), then the copy is
//! created, an unlabelled one adopted, or the copy patched with a
//! three-way merge against the last state, which is kept ([`super::state`]).

use std::time::Duration;

use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tracing::info;

use super::context::Pass;
use super::converge::Phase;
use super::error::{REQUEUE_SOON, SyncError, from_json, kerr};
use super::events;
use super::naming::LocalName;
use super::patch;
use super::state::StateStore;
use super::strip::{drop_subresources, strip_metadata};
use crate::controller::runner::Outcome;
use crate::controller::store::ObjectKey;

/// What the spec step did.
pub(super) enum Spec {
    /// The copy matches: go on with status and related objects.
    InSync,
    /// The copy was just created: go on with it.
    Created(Box<DynamicObject>),
    /// Stop here and check again (after a write that must be seen to settle).
    Requeue(Outcome),
}

/// Spec down for `pass`, with the copy (and its JSON) if one exists.
pub(super) async fn run(
    pass: &Pass<'_>,
    local: Option<(&DynamicObject, &Value)>,
) -> Result<Spec, SyncError> {
    pass.sync_spec(local).await
}

impl Pass<'_> {
    /// The desired service-side object, and the state to remember for it.
    /// The copy the service cluster should have, and the state to remember
    /// (kcp's view: kcp GVK and name). Mutations see the unstripped kcp
    /// object, and as `other` the existing copy or, before one exists, the
    /// projected copy they would otherwise get (as upstream).
    async fn desired(&self, local: Option<&Value>) -> Result<(Value, Value), SyncError> {
        let (key, origin, remote) = (self.key, &self.origin, self.object);
        let plugins = &self.plugins;
        let (name, reports) = plugins
            .namer
            .name(origin, remote)
            .await
            .map_err(|e| SyncError::Naming(e, key.clone()))?;
        self.reported(reports);
        let mut source = remote.clone();
        if let Some(m) = &plugins.mutator {
            let projected;
            let other = match local {
                Some(l) => l,
                None => {
                    projected = self.as_copy(self.stripped(remote.clone()), &name)?;
                    &projected
                }
            };
            let reports = m
                .mutate_spec(origin, &mut source, Some(other))
                .await
                .map_err(|e| SyncError::Mutation(e, key.clone()))?;
            self.reported(reports);
            if !source.is_object() || !source["metadata"].is_object() {
                return Err(SyncError::Mutation(
                    "the spec mutation returned something that is not an object with metadata"
                        .into(),
                    key.clone(),
                ));
            }
        }
        let state = self.stripped(source);
        let desired = self.as_copy(state.clone(), &name)?;
        Ok((desired, state))
    }

    /// `obj` without kcp-only metadata and without the fields of the
    /// subresources the resource has.
    fn stripped(&self, mut obj: Value) -> Value {
        strip_metadata(&mut obj);
        drop_subresources(
            &mut obj,
            self.sync.remote.status_subresource,
            self.sync.remote.scale_subresource,
        );
        obj
    }

    /// `source` under the service cluster's GVK and `name`, with the sync
    /// labels and annotations.
    fn as_copy(&self, mut source: Value, name: &LocalName) -> Result<Value, SyncError> {
        let key = self.key;
        let (labels, annotations) = self.sync_metadata(key, self.origin.path);
        let Some(obj) = source.as_object_mut() else {
            return Err(SyncError::Mutation(
                "the object is not a JSON object".into(),
                key.clone(),
            ));
        };
        obj.insert("apiVersion".into(), json!(self.sync.local.ar.api_version));
        obj.insert("kind".into(), json!(self.sync.local.ar.kind));
        let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Err(SyncError::Mutation(
                "the object has no metadata".into(),
                key.clone(),
            ));
        };
        meta.insert("name".into(), json!(name.name));
        match name
            .namespace
            .clone()
            .filter(|_| self.sync.local.namespaced)
        {
            Some(ns) => meta.insert("namespace".into(), json!(ns)),
            None => meta.remove("namespace"),
        };
        for (field, entries) in [("labels", labels), ("annotations", annotations)] {
            let Some(m) = meta
                .entry(field)
                .or_insert_with(|| json!({}))
                .as_object_mut()
            else {
                return Err(SyncError::Mutation(
                    format!("metadata.{field} is not a map of strings"),
                    key.clone(),
                ));
            };
            for (k, v) in entries {
                m.insert(k, json!(v));
            }
        }
        Ok(source)
    }

    /// Spec down.
    async fn sync_spec(&self, local: Option<(&DynamicObject, &Value)>) -> Result<Spec, SyncError> {
        let (key, remote) = (self.key, self.object);
        let api_version = self.sync.remote.ar.api_version.as_str();
        let kind = self.sync.remote.ar.kind.as_str();
        let (desired, state) = self.desired(local.map(|(_, json)| json)).await?;
        if let Some(ns) = desired["metadata"]["namespace"].as_str() {
            self.keep_namespace_metadata(ns).await?;
        }

        // Checked before any write (and only then: it encodes the state): a
        // copy whose state cannot be stored would be rewritten on every pass.
        let fits = || match StateStore::too_large(key, &state) {
            Some(bytes) => Err(SyncError::StateTooLarge {
                key: key.clone(),
                bytes,
            }),
            None => Ok(()),
        };
        let Some((local, local_json)) = local else {
            fits()?;
            return self.create(desired, &state).await;
        };
        let local_ns = local.metadata.namespace.as_deref();
        let local_name = local.metadata.name.clone().unwrap_or_default();
        let local_api = self.local_api(local_ns);
        // The spec's inputs: what a consumer changes on the kcp object (its
        // generation, labels and annotations), not its resourceVersion,
        // which the agent's own status writes move too.
        let inputs = &spec_inputs(remote);
        let guard = |patch: &Value| {
            self.convergence
                .check(key, Phase::Spec, inputs, patch)
                .map_err(|e| SyncError::NotConverging(e, key.clone()))
        };
        let last = self
            .state
            .get(key, api_version, kind)
            .await
            .map_err(kerr("reading sync state of", key))?;

        let written;
        match last {
            Some(last) => {
                let mut p = patch::diff(&without_identity(&last), &without_identity(&state))
                    .unwrap_or_else(|| json!({}));
                // Repair sync metadata someone removed from the copy.
                inject_missing_metadata(&mut p, local, &desired);
                if p.as_object().is_some_and(|m| m.is_empty()) {
                    self.convergence.settled(key, Phase::Spec);
                    return Ok(Spec::InSync);
                }
                fits()?;
                guard(&p)?;
                let patched = local_api
                    .patch(&local_name, &PatchParams::default(), &Patch::Merge(&p))
                    .await
                    .map_err(kerr("patching service copy of", key))?;
                self.copy_written(patched);
                written = p;
                info!(%key, local = %local_name, "synced spec change to the service cluster");
                self.emit(
                    key,
                    remote,
                    false,
                    events::OBJECT_SYNCED,
                    format!("synced the change to {local_name} on the service cluster"),
                );
            }
            None => {
                // No usable state: take kcp's content wholesale, merge metadata.
                fits()?;
                guard(&state)?;
                let obj = merged_into_copy(key, local_json.clone(), &desired)?;
                let updated = local_api
                    .replace(
                        &local_name,
                        &PostParams::default(),
                        &from_json(key, "the updated service copy", obj)?,
                    )
                    .await
                    .map_err(kerr("updating service copy of", key))?;
                self.copy_written(updated);
                written = state.clone();
                info!(%key, local = %local_name, "updated service copy (no previous state)");
                self.emit(
                    key,
                    remote,
                    false,
                    events::OBJECT_SYNCED,
                    format!("synced the object to {local_name} on the service cluster"),
                );
            }
        }
        self.state
            .put(key, api_version, kind, &state)
            .await
            .map_err(kerr("storing sync state of", key))?;
        self.convergence.wrote(key, Phase::Spec, inputs, &written);
        // Check again at once that it settled (a mutation that keeps
        // changing its answer is caught by the convergence guard).
        Ok(Spec::Requeue(Outcome::Requeue(Duration::ZERO)))
    }

    async fn create(&self, desired: Value, state: &Value) -> Result<Spec, SyncError> {
        let (key, remote) = (self.key, self.object);
        let ns = desired
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let name = desired
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(ns) = &ns {
            self.ensure_namespace(ns).await?;
        }
        let api = self.local_api(ns.as_deref());
        let obj: DynamicObject = serde_json::from_value(desired.clone()).map_err(|e| {
            SyncError::Mutation(format!("the copy is not a valid object: {e}"), key.clone())
        })?;
        let placed = match api.create(&PostParams::default(), &obj).await {
            Ok(created) => {
                self.copy_written(created.clone());
                info!(%key, local = %name, namespace = ns.as_deref().unwrap_or(""), "placed object on the service cluster");
                self.emit(
                    key,
                    remote,
                    false,
                    events::OBJECT_PLACED,
                    format!(
                        "placed on the service cluster as {}{name}",
                        ns.as_deref().map(|n| format!("{n}/")).unwrap_or_default()
                    ),
                );
                Some(created)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // Adopt an existing object: take over its identity metadata.
                let mut existing = api
                    .get(&name)
                    .await
                    .map_err(kerr("reading existing copy of", key))?;
                if existing.metadata.deletion_timestamp.is_some() {
                    return Ok(Spec::Requeue(Outcome::Requeue(REQUEUE_SOON)));
                }
                let (labels, annotations) = self.sync_metadata(key, self.origin.path);
                existing
                    .metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .extend(labels);
                existing
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .extend(annotations);
                let adopted = api
                    .replace(&name, &PostParams::default(), &existing)
                    .await
                    .map_err(kerr("adopting existing copy of", key))?;
                self.copy_written(adopted);
                info!(%key, local = %name, "adopted existing object on the service cluster");
                // Adopted content is brought in line by a patch next pass.
                None
            }
            Err(e) => {
                // The namespace may have been deleted since it was created.
                if let (kube::Error::Api(s), Some(ns)) = (&e, &ns)
                    && s.code == 404
                {
                    self.namespaces
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(ns);
                }
                return Err(kerr("creating service copy of", key)(e));
            }
        };
        let api_version = self.sync.remote.ar.api_version.as_str();
        let kind = self.sync.remote.ar.kind.as_str();
        self.state
            .put(key, api_version, kind, state)
            .await
            .map_err(kerr("storing sync state of", key))?;
        Ok(match placed {
            Some(copy) => Spec::Created(Box::new(copy)),
            None => Spec::Requeue(Outcome::Requeue(Duration::ZERO)),
        })
    }

    /// `spec.managedNamespaceMetadata` on the copy's namespace `ns`: what
    /// this object's consumer Namespace contributes is recorded, and the
    /// namespace written when its keys changed or drifted (read from the
    /// service-side Namespace cache; nothing is written in steady state).
    async fn keep_namespace_metadata(&self, ns: &str) -> Result<(), SyncError> {
        let Some(m) = &self.sync.namespace_metadata else {
            return Ok(());
        };
        let key = self.key;
        if m.copies() {
            let copied = match &key.namespace {
                Some(kcp_ns) => {
                    let api = self.namespaces_api(false, &key.cluster)?;
                    let consumer = api.get("", kcp_ns).await.map_err(|source| SyncError::Kube {
                        action: "reading the consumer Namespace (for spec.managedNamespaceMetadata.fromConsumerNamespace) of",
                        what: format!(
                            "{key}; the consumer's APIBinding must accept the `namespaces` permission claim"
                        ),
                        source,
                    })?;
                    consumer
                        .map(|n| m.copied_from(&n.metadata))
                        .unwrap_or_default()
                }
                None => Default::default(),
            };
            m.contribute(ns, key, copied);
        }
        self.ensure_namespace(ns).await?;
        let desired = m.desired(ns);
        let current = self
            .namespaces_api(true, "")?
            .get("", ns)
            .await
            .map_err(kerr("reading namespace", ns))?;
        if m.needs_apply(ns, &desired, current.as_ref().map(|n| &n.metadata)) {
            m.apply(&self.service, ns, &desired)
                .await
                .map_err(|source| SyncError::NamespaceMetadata {
                    namespace: ns.to_string(),
                    key: key.clone(),
                    source,
                })?;
        }
        Ok(())
    }

    async fn ensure_namespace(&self, ns: &str) -> Result<(), SyncError> {
        if self
            .namespaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(ns)
        {
            return Ok(());
        }
        // Marked so that `workspaceDeletion: Delete` finds what it created.
        let labels = match self.sync.workspace_deletion {
            Some(crate::apis::WorkspaceDeletion::Delete) => [
                (
                    super::labels::CREATED_BY_LABEL.to_string(),
                    self.sync.agent_name.clone(),
                ),
                (
                    super::labels::CREATED_FOR_LABEL.to_string(),
                    self.key.cluster.clone(),
                ),
            ]
            .into(),
            _ => Default::default(),
        };
        crate::kube::namespace::ensure_labelled(&self.service, ns, labels)
            .await
            .map_err(|e| kerr(e.action, ns)(e.source))?;
        self.namespaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ns.to_string());
        Ok(())
    }
}

/// A version of what a spec sync is computed from: the kcp object's
/// generation (spec changes), labels and annotations.
pub(super) fn spec_inputs(remote: &Value) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    remote["metadata"]["labels"].to_string().hash(&mut h);
    remote["metadata"]["annotations"].to_string().hash(&mut h);
    format!(
        "{}/{:x}",
        remote["metadata"]["generation"]
            .as_i64()
            .unwrap_or_default(),
        h.finish()
    )
}

/// apiVersion/kind/name/namespace differ between kcp and service sides by
/// design; they are never part of a patch.
pub(super) fn without_identity(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
    }
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("name");
        meta.remove("namespace");
    }
    v
}

/// The existing copy (`local`, as JSON) with every field of `desired` but
/// its identity, status and scale, and `desired`'s labels and annotations
/// added to its own.
pub(super) fn merged_into_copy(
    key: &ObjectKey,
    mut local: Value,
    desired: &Value,
) -> Result<Value, SyncError> {
    let bad = |message: &str| SyncError::BadObject {
        what: "the service copy",
        key: key.clone(),
        message: message.into(),
    };
    let (Some(obj), Some(want)) = (local.as_object_mut(), desired.as_object()) else {
        return Err(bad("not a JSON object"));
    };
    for (k, v) in want {
        if !matches!(
            k.as_str(),
            "apiVersion" | "kind" | "metadata" | "status" | "scale"
        ) {
            obj.insert(k.clone(), v.clone());
        }
    }
    for field in ["labels", "annotations"] {
        let Some(m) = desired["metadata"][field].as_object() else {
            continue;
        };
        let target = obj
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| bad("metadata is not an object"))?
            .entry(field)
            .or_insert_with(|| json!({}));
        if target.is_null() {
            *target = json!({});
        }
        let target = target
            .as_object_mut()
            .ok_or_else(|| bad(&format!("metadata.{field} is not a map")))?;
        for (k, v) in m {
            target.insert(k.clone(), v.clone());
        }
    }
    Ok(local)
}

/// Add to `patch` the sync labels and annotations of `desired` that the
/// copy lacks. A patch that is not an object (it always is: see
/// `patch::diff` of two objects) is left alone.
pub(super) fn inject_missing_metadata(patch: &mut Value, local: &DynamicObject, desired: &Value) {
    let have_l = local.metadata.labels.clone().unwrap_or_default();
    let have_a = local.metadata.annotations.clone().unwrap_or_default();
    for (field, have) in [("labels", have_l), ("annotations", have_a)] {
        let Some(want) = desired["metadata"][field].as_object() else {
            continue;
        };
        for (k, v) in want {
            let is_sync_key = k.starts_with("syncagent.kcp.io/");
            if is_sync_key && have.get(k).map(|s| json!(s)) != Some(v.clone()) {
                let Some(obj) = patch.as_object_mut() else {
                    return;
                };
                let meta = obj.entry("metadata").or_insert_with(|| json!({}));
                if !meta.is_object() {
                    *meta = json!({});
                }
                let Some(m) = meta.as_object_mut() else {
                    return;
                };
                let m = m.entry(field).or_insert_with(|| json!({}));
                if !m.is_object() {
                    *m = json!({});
                }
                if let Some(m) = m.as_object_mut() {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
    }
}
