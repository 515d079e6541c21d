//! One pass over one initializing workspace: render every source of every
//! InitTarget of the type (targets in key order, sources in spec order),
//! create the objects in dependency order, check the objects annotated
//! `initialization.kcp.io/wait-for-ready`, and remove the initializer once
//! every source of every target is applied and every annotated object is
//! ready.
//!
//! As upstream init-agent v0.2:
//! - a kind that is not served yet ends its source for this pass (the rest
//!   of that source waits; later sources and targets still run);
//! - readiness is checked only once every object of a source exists, on
//!   every pass, for objects that existed before too; a not-ready object
//!   holds back only the removal of the initializer, never the creation of
//!   other objects;
//! - both retry after [`WAIT_RETRY`](super::WAIT_RETRY).
//!
//! Unlike upstream, an error in one target does not skip the other
//! targets (their objects are created; the initializer stays until all are
//! done), and the initializer is never removed when no InitTarget is left.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use tracing::{debug, info};

use super::apply::{self, ApplyError, Created, Discovery, Readiness};
use super::key::TargetKey;
use super::status::Finding;
use super::worker::{Phase, TypeWorker, WorkspaceKey};
use super::{InitError, WAIT_FOR_READY, WAIT_RETRY};
use crate::apis::kcp::{CLUSTER_ANNOTATION, PATH_ANNOTATION, logical_cluster};
use crate::apis::{InitTarget, InitTemplate};
use crate::controller::runner::Outcome;

/// Name of the LogicalCluster object in every workspace.
pub(super) const LOGICAL_CLUSTER: &str = "cluster";

/// The merge patch removing `ours` from the list at `status.<field>`: the
/// remaining entries, or `null` when ours was the last (kcp's virtual
/// workspaces accept only the removal of their own entry; a concurrent
/// change of the list makes kcp refuse the patch, and the pass is retried).
pub fn removal_patch(field: &str, list: &[String], ours: &str) -> Value {
    let remaining: Vec<&String> = list.iter().filter(|i| *i != ours).collect();
    let value = if remaining.is_empty() {
        Value::Null
    } else {
        json!(remaining)
    };
    json!({"status": {field: value}})
}

/// The strings at `status.<field>` of a LogicalCluster.
pub fn status_list(lc: &DynamicObject, field: &str) -> Vec<String> {
    lc.data
        .pointer(&format!("/status/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The workspace a pass works on.
pub(super) struct Workspace {
    pub cluster: String,
    pub path: Option<String>,
}

impl Workspace {
    pub fn of(lc: &DynamicObject, key: &WorkspaceKey) -> Self {
        let annotations = lc.metadata.annotations.clone().unwrap_or_default();
        Workspace {
            cluster: annotations
                .get(CLUSTER_ANNOTATION)
                .cloned()
                .unwrap_or_else(|| key.cluster.clone()),
            path: annotations.get(PATH_ANNOTATION).cloned(),
        }
    }
}

/// A workspace's LogicalCluster as a hook's virtual workspace shows it,
/// with the client and the API it was read through.
pub(super) struct Hooked {
    pub client: kube::Client,
    pub lcs: Api<DynamicObject>,
    pub lc: DynamicObject,
}

impl TypeWorker {
    /// The LogicalCluster of `key` through its phase's virtual workspace;
    /// `None` once it is gone.
    pub(super) async fn logical_cluster_of(
        &self,
        key: &WorkspaceKey,
    ) -> Result<Option<Hooked>, InitError> {
        let client = self.cluster_client(key)?;
        let lcs: Api<DynamicObject> = Api::all_with(client.clone(), &logical_cluster());
        let lc = lcs
            .get_opt(LOGICAL_CLUSTER)
            .await
            .map_err(InitError::kube(format!(
                "reading the LogicalCluster of workspace {}",
                key.cluster
            )))?;
        Ok(lc.map(|lc| Hooked { client, lcs, lc }))
    }

    /// The workspace `ws` is done with us in `phase`: remove `ours` from
    /// its LogicalCluster's initializers or terminators (`current` as
    /// read), and count it for the InitTargets `keys`.
    pub(super) async fn remove_hook(
        &self,
        lcs: &Api<DynamicObject>,
        phase: Phase,
        current: &[String],
        ours: &str,
        keys: &[TargetKey],
        ws: &Workspace,
    ) -> Result<(), InitError> {
        let hook = phase.hook();
        lcs.patch_status(
            LOGICAL_CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&removal_patch(&format!("{hook}s"), current, ours)),
        )
        .await
        .map_err(InitError::kube(format!(
            "removing {hook} {ours} from workspace {}",
            ws.cluster
        )))?;
        self.book.completed(keys, phase, &ws.cluster);
        let targets: Vec<&str> = keys.iter().map(|k| k.name.as_str()).collect();
        let path = ws.path.as_deref().unwrap_or("");
        match phase {
            // Upstream init-agent's words.
            Phase::Initializing => info!(
                workspace_type = %self.ty, init_targets = ?targets, cluster = %ws.cluster,
                path, initializer = %ours, "Cluster successfully initialized"
            ),
            Phase::Terminating => info!(
                workspace_type = %self.ty, init_targets = ?targets, cluster = %ws.cluster,
                path, terminator = %ours, "workspace terminated; terminator removed"
            ),
        }
        Ok(())
    }

    pub(super) async fn initialize(&self, key: &WorkspaceKey) -> Result<Outcome, InitError> {
        if !self.is_known(key) {
            return Ok(Outcome::Gone);
        }
        let initializer = self.ty.to_string();
        let Some(Hooked { client, lcs, lc }) = self.logical_cluster_of(key).await? else {
            return Ok(Outcome::Done);
        };
        let initializers = status_list(&lc, "initializers");
        if !initializers.contains(&initializer) {
            self.book
                .forget_workspace(Phase::Initializing, &key.cluster);
            return Ok(Outcome::Done);
        }
        let ws = Workspace::of(&lc, key);
        if ws.path.is_none() {
            tracing::warn!(workspace_type = %self.ty, cluster = %ws.cluster, "the LogicalCluster has no kcp.io/path annotation; templates cannot use .ClusterPath");
        }
        let members = self.members();
        if members.is_empty() {
            // The last InitTarget just went: its worker is stopping. Never
            // remove the initializer without having applied anything.
            debug!(workspace_type = %self.ty, cluster = %ws.cluster, "no InitTarget serves the type; leaving the workspace");
            return Ok(Outcome::Done);
        }
        let mut discovery = Discovery::new(client);
        let mut first_error = None;
        let mut waiting = false;
        for (tk, target) in &members {
            let found = match self.apply_target(tk, target, &mut discovery, &ws).await {
                Ok(found) => found,
                Err(e) => {
                    let f = Finding::failing("InitializationFailed", e.to_string());
                    first_error.get_or_insert(e);
                    Some(f)
                }
            };
            waiting |= found.as_ref().is_some_and(|f| !f.failing);
            self.book.workspace(
                tk,
                Phase::Initializing,
                &ws.cluster,
                ws.path.as_deref(),
                found,
            );
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        if waiting {
            return Ok(Outcome::Requeue(WAIT_RETRY));
        }

        let keys: Vec<TargetKey> = members.into_iter().map(|(k, _)| k).collect();
        self.remove_hook(
            &lcs,
            Phase::Initializing,
            &initializers,
            &initializer,
            &keys,
            &ws,
        )
        .await?;
        Ok(Outcome::Done)
    }

    /// The renderer and the InitTemplate client of `target`.
    pub(super) async fn renderer_of(
        &self,
        key: &TargetKey,
        target: &InitTarget,
    ) -> Result<(super::render::Renderer, Api<InitTemplate>), InitError> {
        let renderer = self
            .shared
            .renderers
            .for_target(target)
            .await
            .map_err(|source| InitError::Renderer {
                target: key.name.clone(),
                source: Box::new(source),
            })?;
        // An InitTemplate lives in its InitTarget's workspace.
        let client = if key.cluster.is_empty() {
            self.shared.config_client.clone()
        } else {
            self.shared.workspace_client(&key.cluster)?
        };
        Ok((renderer, Api::all(client)))
    }

    /// Render InitTemplate `name` of `target` for the workspace.
    pub(super) async fn render_template(
        &self,
        key: &TargetKey,
        renderer: &super::render::Renderer,
        templates: &Api<InitTemplate>,
        name: &str,
        index: usize,
        ws: &Workspace,
    ) -> Result<Vec<Value>, InitError> {
        let template = templates
            .get_opt(name)
            .await
            .map_err(InitError::kube(format!(
                "InitTarget {}: reading InitTemplate {name:?}",
                key.name
            )))?
            .ok_or_else(|| InitError::TemplateNotFound {
                target: key.name.clone(),
                index,
                template: name.to_string(),
                workspace: if key.cluster.is_empty() {
                    self.shared.config_workspace.clone()
                } else {
                    key.cluster.clone()
                },
            })?;
        // On the blocking pool, within the runtime's call limit.
        renderer
            .render(
                &key.name,
                &ws.cluster,
                ws.path.as_deref(),
                &template.spec.template,
            )
            .await
            .map_err(|source| InitError::Render {
                target: key.name.clone(),
                template: name.to_string(),
                source: Box::new(source),
            })
    }

    /// Apply every source of one InitTarget; what it still waits for, if
    /// anything.
    async fn apply_target(
        &self,
        key: &TargetKey,
        target: &InitTarget,
        discovery: &mut Discovery,
        ws: &Workspace,
    ) -> Result<Option<Finding>, InitError> {
        if target.spec.sources.is_empty() {
            return Ok(None);
        }
        let (renderer, templates) = self.renderer_of(key, target).await?;
        let mut waits: Vec<Finding> = Vec::new();
        for (index, source) in target.spec.sources.iter().enumerate() {
            let Some(tref) = &source.template else {
                return Err(InitError::InvalidSpec {
                    target: key.name.clone(),
                    problem: format!(
                        "spec.sources[{index}]: no known source configured (set template.name)"
                    ),
                });
            };
            let mut objects = self
                .render_template(key, &renderer, &templates, &tref.name, index, ws)
                .await?;
            apply::sort_objects(&mut objects);
            let mut complete = true;
            for obj in &objects {
                match apply::create(discovery, obj).await {
                    Ok(created) => debug!(
                        init_target = %key,
                        cluster = %ws.cluster,
                        template = %tref.name,
                        object = %apply::describe(obj),
                        existed = created == Created::AlreadyExisted,
                        "applied object"
                    ),
                    Err(e @ ApplyError::MissingKind { .. }) => {
                        // Likely a CRD of this source not established yet;
                        // later sources still get their chance now.
                        info!(
                            init_target = %key,
                            cluster = %ws.cluster,
                            template = %tref.name,
                            object = %apply::describe(obj),
                            reason = %e,
                            "kind not served yet; retrying in {}s",
                            WAIT_RETRY.as_secs()
                        );
                        waits.push(
                            Finding::waiting(
                                "KindNotServed",
                                format!(
                                    "InitTemplate {:?}: {e}; the rest of the template waits (retried every {}s)",
                                    tref.name,
                                    WAIT_RETRY.as_secs()
                                ),
                            )
                            .object(apply::describe(obj)),
                        );
                        complete = false;
                        break;
                    }
                    Err(source) => {
                        return Err(InitError::Apply {
                            target: key.name.clone(),
                            template: tref.name.clone(),
                            object: apply::describe(obj),
                            source: Box::new(source),
                        });
                    }
                }
            }
            if !complete {
                continue;
            }
            for obj in &objects {
                let Some(condition) = apply::wait_for(obj) else {
                    continue;
                };
                let readiness =
                    apply::readiness(discovery, obj, condition)
                        .await
                        .map_err(|source| InitError::Apply {
                            target: key.name.clone(),
                            template: tref.name.clone(),
                            object: apply::describe(obj),
                            source: Box::new(source),
                        })?;
                if let Readiness::Waiting(why) = readiness {
                    debug!(init_target = %key, cluster = %ws.cluster, object = %apply::describe(obj), %condition, %why, "Waiting for condition");
                    waits.push(
                        Finding::waiting(
                            "WaitingForCondition",
                            format!(
                                "InitTemplate {:?}: waiting for {} to have condition {condition}=True ({WAIT_FOR_READY}): {why}",
                                tref.name,
                                apply::describe(obj)
                            ),
                        )
                        .object(apply::describe(obj))
                        .condition(condition),
                    );
                }
            }
        }
        Ok(summarize(waits))
    }
}

/// One finding for many waits: the first, and how many more.
fn summarize(mut waits: Vec<Finding>) -> Option<Finding> {
    let more = waits.len().checked_sub(1)?;
    let mut first = waits.swap_remove(0);
    if more > 0 {
        first.message = format!("{} (and {more} more)", first.message);
    }
    Some(first)
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
            removal_patch("initializers", &inits, "x:b"),
            json!({"status": {"initializers": ["root:a", "system:apibindings"]}})
        );
    }

    #[test]
    fn removal_patch_of_the_last_is_null() {
        assert_eq!(
            removal_patch("terminators", &["x:b".to_string()], "x:b"),
            json!({"status": {"terminators": null}})
        );
    }

    #[test]
    fn lists_are_read_from_status() {
        let lc: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
            "metadata": {"name": "cluster"},
            "status": {"initializers": ["a:b", "c:d"], "terminators": ["e:f"], "phase": "Initializing"},
        }))
        .unwrap();
        assert_eq!(status_list(&lc, "initializers"), ["a:b", "c:d"]);
        assert_eq!(status_list(&lc, "terminators"), ["e:f"]);
    }

    #[test]
    fn many_waits_are_one_finding() {
        assert_eq!(summarize(vec![]), None);
        let f = summarize(vec![
            Finding::waiting("WaitingForCondition", "a").object("A"),
            Finding::waiting("KindNotServed", "b"),
            Finding::waiting("KindNotServed", "c"),
        ])
        .unwrap();
        assert_eq!(f.object.as_deref(), Some("A"));
        assert_eq!(f.message, "a (and 2 more)");
    }
}
