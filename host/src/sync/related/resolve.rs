//! Resolving a related resource for one primary: its kinds on both sides
//! (discovered once) and the originals it names, paired with the names of
//! their copies. The originals come from an [`Originals`]: the cluster
//! (through the agent's caches) on the sync path, fixture files in
//! `syncweave render`.

use super::*;

/// Where the originals of one related resource are looked up.
pub(crate) trait Originals: Sync {
    /// The plural of their kind, for messages.
    fn plural(&self) -> &str;
    /// The original `ns/name`, if it exists.
    async fn get(&self, ns: &str, name: &str) -> Result<Option<DynamicObject>, kube::Error>;
    /// The originals in `ns` whose labels match `labels` (a selector string).
    async fn list(&self, ns: &str, labels: &str) -> Result<Vec<DynamicObject>, kube::Error>;
    /// The names of the namespaces on the origin side whose labels match
    /// `labels` (`object.namespace.selector`).
    async fn namespaces(&self, field: &str, labels: &str) -> Result<Vec<String>, RelatedError>;
}

/// The originals in a cluster, for the agent.
pub(super) struct ClusterOriginals<'a> {
    pub(super) pass: &'a RelatedPass<'a>,
    pub(super) api: &'a SideApi,
    pub(super) origin_side: RelatedResourceOrigin,
}

impl Originals for ClusterOriginals<'_> {
    fn plural(&self) -> &str {
        &self.api.ar.plural
    }

    async fn get(&self, ns: &str, name: &str) -> Result<Option<DynamicObject>, kube::Error> {
        self.api.get(ns, name).await
    }

    async fn list(&self, ns: &str, labels: &str) -> Result<Vec<DynamicObject>, kube::Error> {
        self.api.list(ns, labels).await
    }

    async fn namespaces(&self, field: &str, labels: &str) -> Result<Vec<String>, RelatedError> {
        Ok(self
            .pass
            .namespaces_api(
                self.origin_side == RelatedResourceOrigin::Service,
                &self.pass.key.cluster,
            )
            .map_err(|e| config_err(field, e.to_string()))?
            .list("", labels)
            .await
            .map_err(|source| RelatedError::Kube {
                field: field.into(),
                action: "listing",
                what: format!("namespaces with labels {labels:?}"),
                source,
            })?
            .into_iter()
            .map(|n| n.metadata.name.unwrap_or_default())
            .collect())
    }
}

/// Find the originals of related resource `spec` (at `field`) and the
/// names of their copies, in the order of their `namespace/name` (which
/// numbers the annotations recording service-origin copies).
pub(crate) async fn resolve(
    field: &str,
    spec: &RelatedResourceSpec,
    prim: &Primaries<'_>,
    templates: &dyn Templates,
    originals: &impl Originals,
) -> Result<Vec<Resolved>, RelatedError> {
    let ns_of = |v: &Value| {
        v["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let namespaces: Vec<(String, String)> = match &spec.object.namespace {
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
        Some(ns_spec) => {
            resolve_names(
                &format!("{field}.object.namespace"),
                ns_spec,
                prim,
                templates,
                originals,
                None,
            )
            .await?
        }
    };
    let mut out = Vec::new();
    for (origin_ns, dest_ns) in namespaces {
        let names = resolve_names(
            &format!("{field}.object"),
            &spec.object.spec,
            prim,
            templates,
            originals,
            Some(origin_ns.as_str()),
        )
        .await?;
        for (origin_name, dest_name) in names {
            let got = originals
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
    // One key per original, not one per comparison.
    out.sort_by_cached_key(|x| {
        format!(
            "{}/{}",
            x.original.metadata.namespace.as_deref().unwrap_or_default(),
            x.original.metadata.name.as_deref().unwrap_or_default()
        )
    });
    Ok(out)
}

/// Origin → destination names (of objects in namespace `objects_in` when
/// it is given, else of namespaces).
async fn resolve_names(
    field: &str,
    spec: &RelatedResourceObjectSpec,
    prim: &Primaries<'_>,
    templates: &dyn Templates,
    originals: &impl Originals,
    objects_in: Option<&str>,
) -> Result<Vec<(String, String)>, RelatedError> {
    let what = if objects_in.is_some() {
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
    let found: Vec<(String, Option<Value>)> = match objects_in {
        Some(ns) => originals
            .list(ns, &labels)
            .await
            .map_err(|source| RelatedError::Kube {
                field: field.into(),
                action: "listing",
                what: format!(
                    "{} in namespace {ns} with labels {labels:?}",
                    originals.plural()
                ),
                source,
            })?
            .into_iter()
            .map(|o| {
                let v = serde_json::to_value(&o).ok();
                (o.metadata.name.unwrap_or_default(), v)
            })
            .collect(),
        None => originals
            .namespaces(field, &labels)
            .await?
            .into_iter()
            .map(|n| (n, None))
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

/// A found original and where its copy goes.
pub(crate) struct Resolved {
    pub(crate) original: DynamicObject,
    pub(crate) dest_namespace: String,
    pub(crate) dest_name: String,
}

/// Look up the kind of `group/version/resource` through discovery
/// (`plural` is the URL segment).
pub(in crate::sync) async fn api_resource(
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
