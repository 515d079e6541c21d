//! One pass over one terminating workspace: run the termination steps of
//! every InitTarget of the type that declares `spec.termination` (targets
//! in key order, steps in spec order, each step until its objects are
//! gone), then remove the agent's terminator from the LogicalCluster, and
//! kcp finishes deleting the workspace.
//!
//! kcp deletes a workspace's content as soon as the deletion starts, while
//! terminators are pending: a step that deletes objects kcp deletes too is
//! harmless (it waits for them either way). What a step holds on to is
//! what kcp does not touch before the end (ClusterRoles and their
//! bindings), objects with finalizers, or what a plugin renders for the
//! workspace.
//!
//! A step that fails (an error) or takes longer than its timeout keeps the
//! workspace Terminating and is said: a failing entry in the InitTarget's
//! status, a Warning Event on it, and a `Terminator/<terminator>` condition
//! on the LogicalCluster. It keeps being retried.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::time::Instant;
use tracing::debug;

use super::InitError;
use super::apply::{self, Discovery, Selection};
use super::initialize::{Hooked, LOGICAL_CLUSTER, Workspace, status_list};
use super::key::TargetKey;
use super::status::Finding;
use super::worker::{Phase, TypeWorker, WorkspaceKey};
use crate::apis::{InitTarget, TerminationStep};
use crate::controller::runner::Outcome;

/// How soon a step that waits for objects to go is looked at again.
pub const STEP_RETRY: std::time::Duration = std::time::Duration::from_secs(2);
/// How soon after its timeout it is looked at again.
pub const LATE_STEP_RETRY: std::time::Duration = std::time::Duration::from_secs(15);

/// How many remaining objects a message names.
const NAMED: usize = 3;

impl TypeWorker {
    pub(super) async fn terminate(&self, key: &WorkspaceKey) -> Result<Outcome, InitError> {
        if !self.is_known(key) {
            return Ok(Outcome::Gone);
        }
        let terminator = self.ty.to_string();
        let Some(Hooked { client, lcs, lc }) = self.logical_cluster_of(key).await? else {
            return Ok(Outcome::Done);
        };
        let terminators = status_list(&lc, "terminators");
        if lc.metadata.deletion_timestamp.is_none() || !terminators.contains(&terminator) {
            self.book.forget_workspace(Phase::Terminating, &key.cluster);
            return Ok(Outcome::Done);
        }
        let ws = Workspace::of(&lc, key);
        let members: Vec<(TargetKey, InitTarget)> = self
            .members()
            .into_iter()
            .filter(|(_, t)| t.spec.termination.is_some())
            .collect();
        if members.is_empty() {
            // No target declares termination any more: not ours to remove.
            debug!(workspace_type = %self.ty, cluster = %ws.cluster, "no InitTarget declares spec.termination; leaving the workspace");
            return Ok(Outcome::Done);
        }
        let mut discovery = Discovery::without_discovery(client);
        let mut first_error = None;
        let mut pending = false;
        let mut late = false;
        // What the LogicalCluster's condition says: the first failure.
        let mut blocked: Option<Finding> = None;
        for (tk, target) in &members {
            let found = match self.run_steps(tk, target, &mut discovery, &ws).await {
                Ok(found) => found,
                Err(e) => {
                    let f = Finding::failing("TerminationFailed", e.to_string());
                    first_error.get_or_insert(e);
                    Some(f)
                }
            };
            if let Some(f) = &found {
                pending = true;
                late |= f.failing;
                if f.failing && blocked.is_none() {
                    blocked = Some(f.clone());
                }
            }
            self.book.workspace(
                tk,
                Phase::Terminating,
                &ws.cluster,
                ws.path.as_deref(),
                found,
            );
        }
        self.say_on_logical_cluster(&lcs, &lc, &terminator, blocked.as_ref())
            .await;
        if let Some(e) = first_error {
            return Err(e);
        }
        if pending {
            return Ok(Outcome::Requeue(if late {
                LATE_STEP_RETRY
            } else {
                STEP_RETRY
            }));
        }

        let keys: Vec<TargetKey> = members.into_iter().map(|(k, _)| k).collect();
        self.remove_hook(
            &lcs,
            Phase::Terminating,
            &terminators,
            &terminator,
            &keys,
            &ws,
        )
        .await?;
        self.state().steps.retain(|(c, _, _), _| *c != ws.cluster);
        Ok(Outcome::Done)
    }

    /// Run the steps of one InitTarget up to the first one not done; what
    /// it waits for (or is late with), if anything.
    async fn run_steps(
        &self,
        key: &TargetKey,
        target: &InitTarget,
        discovery: &mut Discovery,
        ws: &Workspace,
    ) -> Result<Option<Finding>, InitError> {
        let problems: Vec<String> = target
            .spec
            .problems()
            .into_iter()
            .filter(|p| p.starts_with("spec.termination"))
            .collect();
        if !problems.is_empty() {
            return Err(InitError::InvalidSpec {
                target: key.name.clone(),
                problem: problems.join("; "),
            });
        }
        for (index, step) in target.spec.termination.iter().flatten().enumerate() {
            let remaining = self
                .run_step(key, target, index, step, discovery, ws)
                .await?;
            let at = (ws.cluster.clone(), key.clone(), index);
            if remaining.is_empty() {
                self.state().steps.remove(&at);
                continue;
            }
            let started = *self.state().steps.entry(at).or_insert_with(Instant::now);
            // Validated above.
            let timeout = step
                .timeout()
                .unwrap_or(crate::apis::init::DEFAULT_STEP_TIMEOUT);
            let mut named: Vec<&str> = remaining.iter().take(NAMED).map(String::as_str).collect();
            if remaining.len() > NAMED {
                named.push("…");
            }
            let objects = format!("{} object(s) remain: {}", remaining.len(), named.join(", "));
            let finding = if started.elapsed() > timeout {
                Finding::failing(
                    "TerminationStepTimedOut",
                    format!(
                        "InitTarget {}: spec.termination[{index}] has not finished within its timeout of {}: {objects}; it is retried, and the workspace stays Terminating until it is done (remove what holds the objects, e.g. their finalizers, or fix the step)",
                        key.name,
                        humantime(timeout)
                    ),
                )
            } else {
                Finding::waiting(
                    "TerminationInProgress",
                    format!(
                        "InitTarget {}: spec.termination[{index}]: waiting for objects to be deleted: {objects}",
                        key.name
                    ),
                )
            };
            return Ok(Some(finding.object(remaining[0].clone())));
        }
        Ok(None)
    }

    /// One step: issue its deletes; the objects that remain.
    async fn run_step(
        &self,
        key: &TargetKey,
        target: &InitTarget,
        index: usize,
        step: &TerminationStep,
        discovery: &mut Discovery,
        ws: &Workspace,
    ) -> Result<Vec<String>, InitError> {
        let Some(d) = &step.delete else {
            return Ok(Vec::new());
        };
        let step_err = |source| InitError::Step {
            target: key.name.clone(),
            step: index,
            source: Box::new(source),
        };
        if let Some(t) = &d.template {
            // What the template renders for this workspace, in the reverse
            // of the order it is created in.
            let (renderer, templates) = self.renderer_of(key, target).await?;
            let mut objects = self
                .render_template(key, &renderer, &templates, &t.name, index, ws)
                .await?;
            apply::sort_objects(&mut objects);
            objects.reverse();
            let mut remaining = Vec::new();
            for obj in &objects {
                let (Some(api_version), Some(kind), Some(name)) = (
                    obj["apiVersion"].as_str(),
                    obj["kind"].as_str(),
                    obj.pointer("/metadata/name").and_then(Value::as_str),
                ) else {
                    // Without a name (generateName) it cannot be found again.
                    continue;
                };
                let sel = Selection {
                    api_version,
                    kind,
                    namespace: obj.pointer("/metadata/namespace").and_then(Value::as_str),
                    name: Some(name),
                    labels: None,
                };
                remaining.extend(
                    apply::delete_selected(discovery, &sel)
                        .await
                        .map_err(step_err)?,
                );
            }
            return Ok(remaining);
        }
        let labels = match &d.selector {
            Some(s) => Some(
                crate::apis::selector::from_label_selector(s)
                    .map_err(|e| InitError::InvalidSpec {
                        target: key.name.clone(),
                        problem: format!("spec.termination[{index}].delete.selector: {e}"),
                    })?
                    .to_string(),
            ),
            None => None,
        };
        let sel = Selection {
            api_version: d.api_version.as_deref().unwrap_or_default(),
            kind: d.kind.as_deref().unwrap_or_default(),
            namespace: d.namespace.as_deref(),
            name: d.name.as_deref(),
            labels,
        };
        apply::delete_selected(discovery, &sel)
            .await
            .map_err(step_err)
    }

    /// Say on the LogicalCluster why its termination is held (a
    /// `Terminator/<terminator>` condition, False), or drop that condition
    /// once nothing fails. Written only on change, over the version read
    /// (kcp's other conditions are kept); best effort: the InitTarget's
    /// status and Events say the same.
    async fn say_on_logical_cluster(
        &self,
        lcs: &Api<DynamicObject>,
        lc: &DynamicObject,
        terminator: &str,
        blocked: Option<&Finding>,
    ) {
        let type_ = format!("Terminator/{terminator}");
        let conditions: Vec<Value> = lc
            .data
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let current = conditions.iter().find(|c| c["type"] == type_.as_str());
        let want = blocked.map(|f| {
            json!({
                "type": type_,
                "status": "False",
                "severity": "Error",
                "reason": f.reason,
                "message": f.message,
            })
        });
        let same = match (current, &want) {
            (None, None) => true,
            (Some(c), Some(w)) => {
                c["status"] == w["status"]
                    && c["reason"] == w["reason"]
                    && c["message"] == w["message"]
            }
            _ => false,
        };
        if same {
            return;
        }
        let mut next: Vec<Value> = conditions
            .iter()
            .filter(|c| c["type"] != type_.as_str())
            .cloned()
            .collect();
        if let Some(mut w) = want {
            w["lastTransitionTime"] = json!(
                k8s_openapi::jiff::Timestamp::now()
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
                    .to_string()
            );
            next.push(w);
        }
        let patch = json!({
            "metadata": {"resourceVersion": lc.metadata.resource_version},
            "status": {"conditions": next},
        });
        if let Err(e) = lcs
            .patch_status(
                LOGICAL_CLUSTER,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            debug!(workspace_type = %self.ty, error = %e, "cannot update the LogicalCluster's condition (retried on the next pass)");
        }
    }
}

/// `5m`, `30s`, `1m30s`, `500ms`.
fn humantime(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    if secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_the_spec() {
        use std::time::Duration;
        assert_eq!(humantime(Duration::from_secs(300)), "5m");
        assert_eq!(humantime(Duration::from_secs(90)), "1m30s");
        assert_eq!(humantime(Duration::from_secs(5)), "5s");
        assert_eq!(humantime(Duration::from_millis(500)), "500ms");
    }
}
