//! Reconciling one PublishedResource, top to bottom: its schema (resolved
//! once per change of its inputs), its claim on a group/resource, the
//! APIResourceSchema in kcp, then its sync controller and condition.

use std::sync::Arc;

use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tracing::{info, warn};

use super::{Contribution, Key, Memo, PACE, PublishError, Publisher, Running, SERVE_POLL_MAX};
use crate::apis::PublishedResource;
use crate::controller::runner::Outcome;

/// The Ready reason of a resource that does not sync because a WasmPlugin
/// it uses has no digest that may run.
const WASM_PLUGIN_NOT_READY: &str = "WasmPluginNotReady";

/// Whether a resource may hold the group/resource its schema publishes.
#[derive(Debug, PartialEq, Eq)]
enum Claim {
    /// Nobody older publishes it.
    Free,
    /// An older resource does (named).
    HeldBy(String),
    /// An older resource has not been resolved yet: it might.
    WaitForOlder,
    /// A newer resource still syncs it (it is told to step down).
    Preempting(String),
}

/// Which of two resources was there first (creation time, then name).
type Age = (
    Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    Option<String>,
);

/// What a resource's schema step came to, as far as claims go.
#[derive(Debug, Clone, Copy)]
enum Resolution<'a> {
    /// Its schema publishes this group/resource.
    To(&'a str),
    /// It cannot be resolved (it claims nothing until fixed).
    Failed,
    /// Not resolved yet.
    Pending,
}

/// Whether `name` (created at `mine`) may hold `gr`, given the other
/// resources (name, age, resolution) and the running syncs (name,
/// group/resource). The oldest resource resolving to a group/resource holds
/// it; while an older one is still unresolved it might, so the decision
/// waits; a newer one still syncing it is told to step down first.
fn decide_claim<'a>(
    name: &str,
    mine: &Age,
    gr: &str,
    others: impl Iterator<Item = (&'a str, Age, Resolution<'a>)>,
    mut running: impl Iterator<Item = (&'a str, &'a str)>,
) -> Claim {
    let mut wait = false;
    let mut holder: Option<(Age, &str)> = None;
    for (other, theirs, resolution) in others {
        if other == name || theirs >= *mine {
            continue;
        }
        match resolution {
            Resolution::To(g) if g == gr => {
                if holder.as_ref().is_none_or(|(a, _)| theirs < *a) {
                    holder = Some((theirs, other));
                }
            }
            Resolution::Pending => wait = true,
            Resolution::To(_) | Resolution::Failed => {}
        }
    }
    if let Some((_, owner)) = holder {
        return Claim::HeldBy(owner.to_string());
    }
    if wait {
        return Claim::WaitForOlder;
    }
    match running.find(|(n, g)| *n != name && *g == gr) {
        Some((newer, _)) => Claim::Preempting(newer.to_string()),
        None => Claim::Free,
    }
}

fn age(pr: &PublishedResource) -> Age {
    (
        pr.metadata.creation_timestamp.clone(),
        pr.metadata.name.clone(),
    )
}

impl Publisher {
    pub(super) async fn reconcile_resource(&self, name: &str) -> Result<Outcome, PublishError> {
        let Some(pr) = self.published_resource(name) else {
            self.forget(name);
            return Ok(Outcome::Gone);
        };
        let api: Api<PublishedResource> = Api::all(self.service.clone());

        // 1. The schema: reused while its inputs are unchanged.
        let Some(resolved) = self.schema_step(&api, &pr).await? else {
            return Err(PublishError::Resource(format!(
                "PublishedResource {name} cannot be published (see its condition)"
            )));
        };
        let gr = super::schema::group_resource_of(&resolved.schema_name)
            .unwrap_or_default()
            .to_string();

        // 2. The claim: of two resources publishing one group/resource, the
        // older keeps it; the newer publishes and syncs nothing.
        match self.claim(&pr, &gr) {
            Claim::Free => {}
            Claim::HeldBy(owner) => {
                let message = format!(
                    "PublishedResource {name}: spec.projection: {gr} is already published by \
                     PublishedResource {owner}, which is older; give this one another \
                     spec.projection.group or spec.projection.resource, or delete one of them"
                );
                warn!(published_resource = %name, %owner, resource = %gr, "two PublishedResources publish the same resource; the newer is refused");
                self.stop_sync(name, "another PublishedResource publishes its resource");
                self.contribute(name, None);
                self.set_condition(&api, name, "False", "ResourceConflict", &message)
                    .await;
                return Ok(Outcome::Done);
            }
            Claim::WaitForOlder => return Ok(Outcome::Requeue(PACE)),
            Claim::Preempting(newer) => {
                self.queue.add(Key::Resource(newer));
                return Ok(Outcome::Requeue(PACE));
            }
        }

        // 3. The APIResourceSchema in kcp, and its name in the status.
        if self.enabled("apiresourceschema") {
            self.publish_schema(&api, &pr, &resolved).await?;
        }
        self.contribute(
            name,
            Some(Contribution {
                group_resource: gr.clone(),
                schema_name: resolved.schema_name.clone(),
                pr: pr.clone(),
            }),
        );

        // 4. Its sync controller.
        if !self.enabled("sync") {
            return Ok(Outcome::Done);
        }
        if !pr.spec.sync_enabled() {
            self.stop_sync(name, "spec.synchronization.enabled is false");
            return Ok(Outcome::Done);
        }
        // kcp serves the resource only once the export lists its schema:
        // the export's reconcile enqueues this one again when it does.
        if self.enabled("apiexport")
            && !self
                .book()
                .export_schemas
                .as_ref()
                .is_some_and(|s| s.contains(&resolved.schema_name))
        {
            return Ok(Outcome::Done);
        }
        self.manage_sync(&api, &pr, resolved, gr).await
    }

    /// What the schema step of `pr` depends on: its spec (uid and
    /// generation), its labels and annotations, the resourceVersion of its
    /// CRD and the WasmPlugin code it uses. `None` while that cannot be told
    /// (the CRD index has not listed). Labels and annotations are in it so
    /// that touching the PublishedResource makes its schema step run again
    /// (repairing an APIResourceSchema someone edited), as upstream's
    /// controller does on every event of the resource; its status is not, so
    /// the agent's own condition writes do not.
    /// A built-in kind (no CRD) is described from the cluster's OpenAPI once
    /// per spec: it changes only when the cluster is upgraded, which
    /// restarts the agent's connections (and a restarted agent resolves
    /// again).
    fn schema_inputs(&self, pr: &PublishedResource) -> Option<String> {
        if !self.crds.listed() {
            return None;
        }
        let r = &pr.spec.resource;
        let crd = self
            .crds
            .version_of(&r.api_group, &r.kind)
            .unwrap_or_else(|| "built-in".into());
        let metadata = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (&pr.metadata.labels, &pr.metadata.annotations).hash(&mut h);
            h.finish()
        };
        Some(format!(
            "{}/{}/{metadata:x}/{crd}/{}",
            pr.metadata.uid.as_deref().unwrap_or_default(),
            pr.metadata.generation.unwrap_or_default(),
            self.wasm_plugins_in_use(pr).1
        ))
    }

    /// The resource's schema, from its memo or resolved anew; `None` when
    /// it cannot be resolved (said on its condition).
    async fn schema_step(
        &self,
        api: &Api<PublishedResource>,
        pr: &Arc<PublishedResource>,
    ) -> Result<Option<Arc<super::schema::Resolved>>, PublishError> {
        let name = pr.metadata.name.clone().unwrap_or_default();
        let inputs = self.schema_inputs(pr);
        let previous = {
            let mut book = self.book();
            match book.memos.get_mut(&name) {
                Some(m) if m.inputs.is_some() && m.inputs == inputs => {
                    // Someone cleared the status (or a write was lost):
                    // publish again, from the same resolution.
                    if pr
                        .status
                        .as_ref()
                        .and_then(|s| s.resource_schema_name.as_deref())
                        != Some(m.resolved.schema_name.as_str())
                    {
                        m.published = false;
                    }
                    return Ok(Some(m.resolved.clone()));
                }
                _ => book.memos.remove(&name),
            }
        };
        let released = previous.and_then(|m| {
            super::schema::group_resource_of(&m.resolved.schema_name).map(str::to_owned)
        });
        let resolved = self.resolve(pr).await;
        let resolved = match resolved {
            Ok(r) => Arc::new(r),
            Err(e) => {
                self.book().unresolvable.insert(name.clone());
                if let Some(gr) = released {
                    self.enqueue_holders_of(&gr, &name);
                }
                warn!(published_resource = %name, error = %e, "cannot publish resource");
                self.stop_sync(&name, "it cannot be published");
                self.contribute(&name, None);
                self.set_condition(api, &name, "False", "InvalidResource", &e.to_string())
                    .await;
                return Ok(None);
            }
        };
        {
            let mut book = self.book();
            book.unresolvable.remove(&name);
            book.memos.insert(
                name.clone(),
                Memo {
                    inputs,
                    resolved: resolved.clone(),
                    published: false,
                },
            );
        }
        // Resources refused for the group/resource this one published
        // before may take it now.
        if let Some(gr) = released
            && super::schema::group_resource_of(&resolved.schema_name) != Some(gr.as_str())
        {
            self.enqueue_holders_of(&gr, &name);
        }
        Ok(Some(resolved))
    }

    async fn resolve(&self, pr: &PublishedResource) -> anyhow::Result<super::schema::Resolved> {
        use super::schema;
        let name = pr.metadata.name.as_deref().unwrap_or_default();
        // The CRD refuses these, but a CRD installed before that validation
        // existed lets them through: never publish a resource whose settings
        // would be silently ignored.
        let unsupported = crate::apis::unsupported_fields(&pr.spec);
        anyhow::ensure!(
            unsupported.is_empty(),
            "PublishedResource {name}: {}",
            unsupported.join("; ")
        );
        let crd = schema::find_crd(&self.service, &self.crds, pr).await?;
        // Version selection and projection both run in the projector plugin;
        // the service side keeps the CRD's own storage version.
        let projected = self.plugins.project(pr, &crd).await?;
        let resolved = schema::to_schema(&crd, &projected, &self.cfg.agent_name);
        let (group, plural) = (&resolved.remote.ar.group, &resolved.remote.ar.plural);
        anyhow::ensure!(
            !schema::served_by_kcp(group, plural),
            "PublishedResource {name}: spec.projection.group: kcp serves {} {plural} in every \
             workspace itself; published as they are, the agent would take hold of the consumers' \
             own {plural}. Set spec.projection.group to an API group of your own (e.g. \
             `{}.example.com`), or spec.projection.resource to another name",
            if group.is_empty() {
                "core/v1".to_string()
            } else {
                group.clone()
            },
            resolved.remote.ar.kind.to_lowercase()
        );
        let unsupported = crate::apis::unsupported_for_scope(&pr.spec, resolved.remote.namespaced);
        anyhow::ensure!(
            unsupported.is_empty(),
            "PublishedResource {name}: {}",
            unsupported.join("; ")
        );
        Ok(resolved)
    }

    /// Whether `pr` may hold `gr`, judged from what the other resources
    /// resolved to.
    fn claim(&self, pr: &PublishedResource, gr: &str) -> Claim {
        let name = pr.metadata.name.as_deref().unwrap_or_default();
        let book = self.book();
        let others = self.prs.state();
        let others = others
            .iter()
            .filter(|o| o.metadata.deletion_timestamp.is_none())
            .filter_map(|o| {
                let n = o.metadata.name.as_deref()?;
                let resolved = match book.memos.get(n) {
                    Some(m) => Resolution::To(
                        super::schema::group_resource_of(&m.resolved.schema_name)
                            .unwrap_or_default(),
                    ),
                    None if book.unresolvable.contains(n) => Resolution::Failed,
                    None => Resolution::Pending,
                };
                Some((n, age(o), resolved))
            });
        let running = book
            .running
            .iter()
            .map(|(n, r)| (n.as_str(), r.group_resource.as_str()));
        decide_claim(name, &age(pr), gr, others, running)
    }

    /// Create the APIResourceSchema (once per resolution) and record its
    /// name in the resource's status.
    async fn publish_schema(
        &self,
        api: &Api<PublishedResource>,
        pr: &PublishedResource,
        resolved: &super::schema::Resolved,
    ) -> Result<(), PublishError> {
        let name = pr.metadata.name.clone().unwrap_or_default();
        if self.book().memos.get(&name).is_some_and(|m| m.published) {
            return Ok(());
        }
        match super::schema::ensure_schema(&self.kcp.export_client, resolved).await {
            Ok(true) => {
                info!(published_resource = %name, schema = %resolved.schema_name, "created APIResourceSchema");
            }
            Ok(false) => {}
            Err(e) => {
                warn!(published_resource = %name, error = %e, "cannot publish the APIResourceSchema");
                self.set_condition(api, &name, "False", "SchemaNotPublished", &e.to_string())
                    .await;
                return Err(PublishError::Resource(e.to_string()));
            }
        }
        if pr
            .status
            .as_ref()
            .and_then(|s| s.resource_schema_name.as_deref())
            != Some(resolved.schema_name.as_str())
        {
            let p = json!({"status": {"resourceSchemaName": resolved.schema_name}});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&p))
                .await
                .map_err(|source| PublishError::Status {
                    name: name.clone(),
                    source,
                })?;
        }
        if let Some(m) = self.book().memos.get_mut(&name) {
            m.published = true;
        }
        Ok(())
    }

    /// Start, swap or keep the resource's sync controller, and set its
    /// condition.
    async fn manage_sync(
        &self,
        api: &Api<PublishedResource>,
        pr: &PublishedResource,
        resolved: Arc<super::schema::Resolved>,
        gr: String,
    ) -> Result<Outcome, PublishError> {
        let name = pr.metadata.name.clone().unwrap_or_default();
        // A WasmPlugin moved to new code is swapped into the running sync
        // (below), so every object runs the new digest from then on, with
        // no restart of the sync or the agent.
        let (plugins_in_use, plugin_versions) = self.wasm_plugins_in_use(pr);
        let fingerprint = format!(
            "{}/{}/{}",
            pr.metadata.uid.as_deref().unwrap_or(""),
            pr.metadata.generation.unwrap_or(0),
            resolved.schema_name
        );
        let syncing_message = if plugins_in_use.is_empty() {
            "objects are being synchronized".to_string()
        } else {
            format!("objects are being synchronized (WasmPlugins in use: {plugins_in_use})")
        };
        let running = self.book().running.get(&name).and_then(|r| {
            (r.fingerprint == fingerprint).then(|| (r.ctx.clone(), r.plugin_versions.clone()))
        });
        if let Some((ctx, versions)) = running {
            if versions != plugin_versions {
                match self.plugin_set(pr, &resolved).await {
                    Ok(set) => {
                        info!(published_resource = %name, plugins = %plugins_in_use, "swapping in new plugin code");
                        ctx.swap_plugins(set);
                        if let Some(r) = self.book().running.get_mut(&name) {
                            r.plugin_versions = plugin_versions;
                        }
                    }
                    Err(e) if self.plugin_not_serving(pr) => {
                        // Fail closed: a WasmPlugin in use has no digest that
                        // may run (its signature no longer verifies under the
                        // keys it names, or it is gone). Its old code must not
                        // keep running here either: stop, as an agent starting
                        // now would not start; its status change restarts us.
                        if let Some(old) = self.book().running.remove(&name) {
                            old.cancel.cancel();
                        }
                        warn!(published_resource = %name, error = %e, "stopped syncing: a WasmPlugin in use has no digest that may run");
                        let msg = format!("stopped syncing: {e}");
                        self.set_condition(api, &name, "False", WASM_PLUGIN_NOT_READY, &msg)
                            .await;
                        return Err(PublishError::Resource(msg));
                    }
                    Err(e) => {
                        // The old code keeps running; say why the new is not used.
                        warn!(published_resource = %name, error = %e, "cannot use the new plugin code");
                        self.set_condition(api, &name, "False", "SyncNotStarted", &e.to_string())
                            .await;
                        return Err(PublishError::Resource(e.to_string()));
                    }
                }
            }
            // Never Ready while objects keep failing, or while a plugin
            // holds back new code.
            self.say_syncing(api, pr, &ctx, ctx.failures.summary(), &syncing_message)
                .await;
            return Ok(Outcome::Done);
        }
        match self.start_sync(pr, &resolved).await {
            Ok(Some((cancel, ctx))) => {
                let old = {
                    let mut book = self.book();
                    book.serve_attempts.remove(&name);
                    book.running.insert(
                        name.clone(),
                        Running {
                            fingerprint,
                            plugin_versions,
                            group_resource: gr,
                            cancel,
                            ctx: ctx.clone(),
                        },
                    )
                };
                if let Some(old) = old {
                    old.cancel.cancel();
                }
                self.say_syncing(api, pr, &ctx, None, &syncing_message)
                    .await;
                Ok(Outcome::Done)
            }
            // No workspace has bound the export yet: the slice's watch
            // enqueues the resource when one does, so nothing is polled.
            Ok(None) if self.kcp.endpoints().borrow().is_empty() => Ok(Outcome::Done),
            // A shard's virtual workspace does not serve the resource yet:
            // no event says when it does, so look again soon.
            Ok(None) => {
                let n = {
                    let mut book = self.book();
                    let n = book.serve_attempts.entry(name).or_default();
                    *n += 1;
                    *n
                };
                Ok(Outcome::Requeue(crate::controller::backoff::nth_delay(
                    super::RETRY_FIRST,
                    SERVE_POLL_MAX,
                    n,
                )))
            }
            Err(e) => {
                warn!(published_resource = %name, error = %e, "cannot start syncing");
                let reason = match self.plugin_not_serving(pr) {
                    true => WASM_PLUGIN_NOT_READY,
                    false => "SyncNotStarted",
                };
                self.set_condition(api, &name, "False", reason, &e.to_string())
                    .await;
                Err(PublishError::Resource(e.to_string()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn at(secs: i64, name: &str) -> Age {
        (
            Some(Time(
                k8s_openapi::jiff::Timestamp::from_second(secs).unwrap(),
            )),
            Some(name.to_string()),
        )
    }

    fn decide(
        me: (&str, i64),
        others: &[(&str, i64, Resolution<'static>)],
        running: &[(&'static str, &'static str)],
    ) -> Claim {
        let owned: Vec<(&str, Age, Resolution)> =
            others.iter().map(|(n, t, r)| (*n, at(*t, n), *r)).collect();
        decide_claim(
            me.0,
            &at(me.1, me.0),
            "crontabs.example.com",
            owned.into_iter(),
            running.iter().copied(),
        )
    }

    const CRONTABS: Resolution = Resolution::To("crontabs.example.com");

    #[test]
    fn the_oldest_resource_holds_a_group_resource() {
        assert_eq!(
            decide(("b", 20), &[("a", 10, CRONTABS)], &[]),
            Claim::HeldBy("a".into())
        );
        // Of several older ones, the refusal names the oldest (the holder).
        assert_eq!(
            decide(("c", 30), &[("b", 20, CRONTABS), ("a", 10, CRONTABS)], &[]),
            Claim::HeldBy("a".into())
        );
        // Newer resources and other group/resources do not count.
        assert_eq!(
            decide(
                ("a", 10),
                &[
                    ("b", 20, CRONTABS),
                    ("x", 5, Resolution::To("other.example.com"))
                ],
                &[]
            ),
            Claim::Free
        );
        // Same creation time: the name decides.
        assert_eq!(
            decide(("b", 10), &[("a", 10, CRONTABS)], &[]),
            Claim::HeldBy("a".into())
        );
    }

    #[test]
    fn an_unresolved_older_resource_is_waited_for_and_a_failed_one_is_not() {
        assert_eq!(
            decide(("b", 20), &[("a", 10, Resolution::Pending)], &[]),
            Claim::WaitForOlder
        );
        assert_eq!(
            decide(("b", 20), &[("a", 10, Resolution::Failed)], &[]),
            Claim::Free
        );
        // A newer unresolved one is no reason to wait.
        assert_eq!(
            decide(("a", 10), &[("b", 20, Resolution::Pending)], &[]),
            Claim::Free
        );
    }

    #[test]
    fn a_newer_resource_still_syncing_is_preempted() {
        assert_eq!(
            decide(
                ("a", 10),
                &[("b", 20, CRONTABS)],
                &[("b", "crontabs.example.com")]
            ),
            Claim::Preempting("b".into())
        );
        // Its own running sync is no conflict.
        assert_eq!(
            decide(("a", 10), &[], &[("a", "crontabs.example.com")]),
            Claim::Free
        );
    }
}
