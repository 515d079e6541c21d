//! Resolving a related resource for one primary: its kinds on both sides
//! (discovered once) and the originals it names, paired with the names of
//! their copies.

use super::*;

impl RelatedPass<'_> {
    /// Find the originals and the names of their copies.
    pub(super) async fn resolve(
        &self,
        field: &str,
        r: &Related,
        prim: &Primaries<'_>,
        origin_api: &SideApi,
    ) -> Result<Vec<Resolved>, RelatedError> {
        let plugins = self.plugins.clone();
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
    pub(super) async fn resolve_names(
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
}

/// A found original and where its copy goes.
pub(super) struct Resolved {
    pub(super) original: DynamicObject,
    pub(super) dest_namespace: String,
    pub(super) dest_name: String,
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
