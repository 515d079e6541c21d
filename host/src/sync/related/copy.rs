//! Copying one original to the other side: create or patch the copy, keep
//! the finalizer on kcp-origin originals, record service-origin copies in
//! the primary's annotation, and clean up in delete mode.

use super::*;

impl RelatedPass<'_> {
    /// Sync one original to its copy. Returns whether to requeue.
    pub(super) async fn sync_object(
        &self,
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
        // Ours only: upstream's shared name, or this agent's own
        // (spec.lifecycle.relatedFinalizer).
        let hold = &self.sync.related_finalizer;
        let former = self.sync.former_related_finalizer.as_ref();
        let ours = |f: &String| f == hold || Some(f) == former;
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
                    info!(key = %self.key, identifier = %r.spec.identifier, copy = %dest_what, "deleted related copy");
                }
                return Ok(true);
            }
            if !service && orig_finalizers.iter().any(ours) {
                let kept: Vec<&String> = orig_finalizers.iter().filter(|f| !ours(f)).collect();
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
        // kcp originals are held by our finalizer until their copy is gone;
        // a hold under our former name (the policy changed) moves to the
        // current one, so that an agent that only knows the current name
        // (upstream, after a swap back) can release it.
        let stale = former.is_some_and(|f| orig_finalizers.contains(f));
        if !service && (!orig_finalizers.contains(hold) || stale) {
            let mut f: Vec<String> = orig_finalizers
                .iter()
                .filter(|f| Some(*f) != former)
                .cloned()
                .collect();
            if !f.contains(hold) {
                f.push(hold.clone());
            }
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
        let as_copy = |v: Value| {
            as_copy(
                v,
                &dest_api.ar.api_version,
                &dest_api.ar.kind,
                &res.dest_namespace,
                &res.dest_name,
            )
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
            let reports = m
                .mutate_spec(&self.origin, &mut source, Some(other))
                .await
                .map_err(|e| config_err(&field, format!("mutation: {e}")))?;
            self.reported(reports);
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
        let state_key = ObjectKey::new(KeyParts {
            cluster: if service {
                String::new()
            } else {
                self.key.cluster.clone()
            },
            namespace: Some(orig_ns.clone()).filter(|n| !n.is_empty()),
            name: orig_name.clone(),
        });
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
                        crate::kube::namespace::ensure(&self.service, &res.dest_namespace)
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
                        debug!(key = %self.key, copy = %dest_what, "related copy exists but is not cached yet");
                        return Ok(true);
                    }
                    Err(e) => return Err(kerr("creating the copy", dest_what.clone())(e)),
                };
                dest_api.remember(created);
                info!(key = %self.key, identifier = %r.spec.identifier, copy = %dest_what, "created related copy");
                changed = true;
            }
            Some(e) => {
                let last = self
                    .state
                    .get_entry(self.key, pav, pkind, &state_key)
                    .await
                    .map_err(kerr(
                        "reading the sync state of",
                        format!("{orig_ns}/{orig_name}"),
                    ))?;
                match last {
                    Some(last) => {
                        let patch = patch::diff(
                            &crate::sync::spec::without_identity(&last),
                            &crate::sync::spec::without_identity(&state),
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
                            info!(key = %self.key, identifier = %r.spec.identifier, copy = %dest_what, "updated related copy");
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
            .put_entry(self.key, pav, pkind, &state_key, &state)
            .await
            .map_err(kerr(
                "storing the sync state of",
                format!("{orig_ns}/{orig_name}"),
            ))?;

        if sync_status {
            changed |= self
                .forward_status(
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

/// The copy of `v` (the stripped original, or a mutation's result): the
/// destination's kind, name and namespace (none when `namespace` is
/// empty). `v` is meant to be an object; anything else passes through
/// unchanged (and fails to parse as an object later, with an error).
pub(crate) fn as_copy(
    mut v: Value,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), json!(api_version));
        o.insert("kind".into(), json!(kind));
    }
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("name".into(), json!(name));
        if namespace.is_empty() {
            meta.remove("namespace");
        } else {
            meta.insert("namespace".into(), json!(namespace));
        }
    }
    v
}

/// Create a Namespace in the consumer workspace (through the virtual
/// workspace, which needs the `namespaces` claim) unless it exists.
pub(super) async fn ensure_kcp_namespace(client: &Client, ns: &str) -> Result<(), kube::Error> {
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
