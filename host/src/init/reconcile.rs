//! Initializing one workspace: render every source of the InitTarget,
//! create the objects in dependency order, and remove our initializer once
//! all of them exist.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use tracing::{debug, info};

use super::apply::{self, ApplyError, Created, Discovery};
use super::target::{ClusterKey, Target};
use super::{InitError, MISSING_KIND_RETRY};
use crate::apis::kcp::{CLUSTER_ANNOTATION, PATH_ANNOTATION, logical_cluster};
use crate::apis::{InitTarget, InitTemplate};

/// Name of the LogicalCluster object in every workspace.
const LOGICAL_CLUSTER: &str = "cluster";

/// Done: initialized, or nothing (more) to do for this workspace; Gone:
/// the workspace left the virtual workspace (initialized or deleted).
pub(crate) use crate::controller::runner::Outcome;

/// The merge patch removing `ours` from `initializers`: the remaining list,
/// or `null` when ours was the last (kcp's virtual workspace accepts only
/// the removal of its own initializer).
pub fn removal_patch(initializers: &[String], ours: &str) -> Value {
    let remaining: Vec<&String> = initializers.iter().filter(|i| *i != ours).collect();
    if remaining.is_empty() {
        json!({"status": {"initializers": null}})
    } else {
        json!({"status": {"initializers": remaining}})
    }
}

fn initializers_of(lc: &DynamicObject) -> Vec<String> {
    lc.data
        .pointer("/status/initializers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

impl Target {
    pub(crate) async fn reconcile(&self, key: &ClusterKey) -> Result<Outcome, InitError> {
        if !self.is_known(key) {
            return Ok(Outcome::Gone);
        }
        let Some(initializer) = self.initializer() else {
            return Ok(Outcome::Done);
        };
        let target_name = self.id.name.clone();
        let client = self.cluster_client(key)?;
        let lcs: Api<DynamicObject> = Api::all_with(client.clone(), &logical_cluster());
        let Some(lc) = lcs
            .get_opt(LOGICAL_CLUSTER)
            .await
            .map_err(InitError::kube(format!(
                "reading the LogicalCluster of workspace {}",
                key.cluster
            )))?
        else {
            return Ok(Outcome::Done);
        };
        let initializers = initializers_of(&lc);
        if !initializers.contains(&initializer) {
            return Ok(Outcome::Done);
        }
        let annotations = lc.metadata.annotations.clone().unwrap_or_default();
        let cluster_name = annotations
            .get(CLUSTER_ANNOTATION)
            .cloned()
            .unwrap_or_else(|| key.cluster.clone());
        let cluster_path = annotations.get(PATH_ANNOTATION).cloned();
        if cluster_path.is_none() {
            tracing::warn!(init_target = %target_name, cluster = %cluster_name, "the LogicalCluster has no kcp.io/path annotation; templates cannot use .ClusterPath");
        }

        // Always the latest InitTarget: its sources may have changed since
        // the worker started.
        let targets: Api<InitTarget> = Api::all(self.shared.config_client.clone());
        let target = match targets
            .get_opt(&target_name)
            .await
            .map_err(InitError::kube(format!("reading InitTarget {target_name}")))?
        {
            Some(t) if t.metadata.uid.as_deref() == Some(self.id.uid.as_str()) => t,
            // Deleted or replaced: the controller stops this worker.
            _ => return Ok(Outcome::Done),
        };
        let renderer = self
            .shared
            .renderers
            .for_target(&target)
            .await
            .map_err(|source| InitError::Renderer {
                target: target_name.clone(),
                source: Box::new(source),
            })?;
        let templates: Api<InitTemplate> = Api::all(self.shared.config_client.clone());
        let mut discovery = Discovery::new(client);
        let mut waiting = false;

        for (index, source) in target.spec.sources.iter().enumerate() {
            let Some(tref) = &source.template else {
                return Err(InitError::NoSource {
                    target: target_name,
                    index,
                });
            };
            let template = templates
                .get_opt(&tref.name)
                .await
                .map_err(InitError::kube(format!(
                    "InitTarget {target_name}: reading InitTemplate {:?}",
                    tref.name
                )))?
                .ok_or_else(|| InitError::TemplateNotFound {
                    target: target_name.clone(),
                    index,
                    template: tref.name.clone(),
                    workspace: self.shared.config_workspace.clone(),
                })?;
            // On the blocking pool, within the runtime's call limit.
            let mut objects = renderer
                .render(
                    &target_name,
                    &cluster_name,
                    cluster_path.as_deref(),
                    &template.spec.template,
                )
                .await
                .map_err(|source| InitError::Render {
                    target: target_name.clone(),
                    template: tref.name.clone(),
                    source: Box::new(source),
                })?;
            apply::sort_objects(&mut objects);
            for obj in &objects {
                match apply::create(&mut discovery, obj).await {
                    Ok(created) => debug!(
                        init_target = %target_name,
                        cluster = %cluster_name,
                        template = %tref.name,
                        object = %apply::describe(obj),
                        existed = created == Created::AlreadyExisted,
                        "applied object"
                    ),
                    Err(e @ ApplyError::MissingKind { .. }) => {
                        // Likely a CRD of this source not established yet;
                        // later sources still get their chance now.
                        info!(
                            init_target = %target_name,
                            cluster = %cluster_name,
                            template = %tref.name,
                            object = %apply::describe(obj),
                            reason = %e,
                            "kind not served yet; retrying in {}s",
                            MISSING_KIND_RETRY.as_secs()
                        );
                        waiting = true;
                        break;
                    }
                    Err(source) => {
                        return Err(InitError::Apply {
                            target: target_name,
                            template: tref.name.clone(),
                            object: apply::describe(obj),
                            source: Box::new(source),
                        });
                    }
                }
            }
        }
        if waiting {
            return Ok(Outcome::Requeue(MISSING_KIND_RETRY));
        }

        lcs.patch_status(
            LOGICAL_CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&removal_patch(&initializers, &initializer)),
        )
        .await
        .map_err(InitError::kube(format!(
            "removing initializer {initializer} from workspace {cluster_name}"
        )))?;
        info!(
            init_target = %target_name,
            cluster = %cluster_name,
            path = cluster_path.as_deref().unwrap_or(""),
            %initializer,
            "Cluster successfully initialized"
        );
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removal_patch_keeps_the_others() {
        let inits = vec![
            "root:a".to_string(),
            "x:b".to_string(),
            "system:apibindings".to_string(),
        ];
        assert_eq!(
            removal_patch(&inits, "x:b"),
            json!({"status": {"initializers": ["root:a", "system:apibindings"]}})
        );
    }

    #[test]
    fn removal_patch_of_the_last_is_null() {
        assert_eq!(
            removal_patch(&["x:b".to_string()], "x:b"),
            json!({"status": {"initializers": null}})
        );
    }

    #[test]
    fn initializers_are_read_from_status() {
        let lc: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
            "metadata": {"name": "cluster"},
            "status": {"initializers": ["a:b", "c:d"], "phase": "Initializing"},
        }))
        .unwrap();
        assert_eq!(initializers_of(&lc), ["a:b", "c:d"]);
    }
}
