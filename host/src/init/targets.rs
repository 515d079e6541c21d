//! The InitTarget controller: keeps the selected InitTargets of the config
//! workspace in memory, resolves each one's `spec.workspaceTypeRef` to the
//! WorkspaceType's logical cluster and name ([`TypeKey`], which is also the
//! initializer kcp puts on the type's workspaces), and hands the target to
//! the one [`worker`](super::worker) of that type.
//!
//! Keying workers by the resolved type, not by the text of the reference,
//! means two spellings of one type (`root:org` and its logical-cluster name)
//! share one worker instead of racing on one initializer; and several
//! InitTargets of one type are applied together, in one pass per workspace
//! (upstream init-agent v0.2 aggregates them the same way). A worker stops
//! when its last InitTarget goes; it never removes an initializer without an
//! InitTarget (upstream's worker keeps running with none and removes it
//! right away).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::status::{Book, Problem, Slot};
use super::worker::{TypeKey, TypeWorker};
use super::{Shared, inittarget_resource, inittemplate_resource, workspacetype_resource};
use crate::apis::InitTarget;
use crate::apis::kcp::CLUSTER_ANNOTATION;
use crate::controller::Controller;
use crate::controller::feed::Feed;
use crate::controller::queue::WorkQueue;
use crate::controller::runner::Outcome;

/// How often a served InitTarget's WorkspaceType is resolved again (a
/// workspace deleted and created again under the same path is another
/// logical cluster).
const RESOLVE_AGAIN: Duration = Duration::from_secs(600);

/// How soon an InitTarget whose WorkspaceType cannot be read is tried again.
const UNRESOLVED_RETRY: Duration = Duration::from_secs(30);

use super::cache::{InitialSync, TargetCache};
pub use super::key::{TargetKey, key_of};

/// What makes an InitTarget another one for its worker: its UID, labels
/// and spec, not its status (the agent's own writes).
fn version_of(o: &DynamicObject) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    o.metadata.uid.hash(&mut h);
    o.metadata.generation.hash(&mut h);
    o.data.get("spec").map(|s| s.to_string()).hash(&mut h);
    h.finish()
}

struct Running {
    worker: Arc<TypeWorker>,
    cancel: CancellationToken,
}

/// Which worker each InitTarget belongs to.
struct Attached {
    ty: TypeKey,
    version: u64,
}

#[derive(Default)]
struct Workers {
    by_type: HashMap<TypeKey, Running>,
    targets: HashMap<TargetKey, Attached>,
}

pub(crate) struct Manager {
    shared: Arc<Shared>,
    cache: Arc<TargetCache>,
    book: Arc<Book>,
    workers: Mutex<Workers>,
    initial: Arc<InitialSync>,
    cancel: CancellationToken,
}

/// Run the InitTarget controller, its workers and the status writer until
/// `cancel` fires. InitTargets go through the agent's runner (one queue
/// entry per target); an InitTemplate change retries every waiting
/// workspace at once.
pub(crate) async fn run(shared: Arc<Shared>, selector: String, cancel: CancellationToken) {
    let cache = Arc::new(TargetCache::default());
    let book = Book::new();
    let mgr = Arc::new(Manager {
        shared: shared.clone(),
        cache: cache.clone(),
        book: book.clone(),
        workers: Mutex::new(Workers::default()),
        initial: Arc::new(InitialSync::new()),
        cancel: cancel.clone(),
    });
    let initial = mgr.initial.clone();
    info!(workspace = %shared.config_workspace, %selector, "watching InitTargets");
    let queue: Arc<WorkQueue<TargetKey>> =
        WorkQueue::new(Duration::from_millis(500), UNRESOLVED_RETRY);
    let targets: Api<DynamicObject> =
        Api::all_with(shared.config_client.clone(), &inittarget_resource());
    let templates: Api<DynamicObject> =
        Api::all_with(shared.config_client.clone(), &inittemplate_resource());
    let config_workspace = shared.config_workspace.clone();
    let stop = mgr.clone();
    let kicker = mgr.clone();
    Controller::new(mgr, queue, cancel.clone())
        .feed("inittarget-watch", move |queue| {
            let (cache, targets, selector, config_workspace, initial) = (
                cache.clone(),
                targets.clone(),
                selector.clone(),
                config_workspace.clone(),
                initial.clone(),
            );
            async move {
                let mut feed = Feed::new(key_of, version_of);
                crate::controller::watch::drive_reported(
                    watcher(targets, watcher::Config::default().labels(&selector)),
                    &format!("InitTargets in workspace {config_workspace}"),
                    |e| match crate::controller::watch::status_code(e) {
                        Some(404) => Some(
                            "install the InitTarget and InitTemplate CRDs there \
                             (charts/syncweave/crds/initialization.kcp.io_*.yaml)"
                                .into(),
                        ),
                        Some(401 | 403) => Some(
                            "grant the agent's user get/list/watch on inittargets and \
                             inittemplates there"
                                .into(),
                        ),
                        _ => None,
                    },
                    |ev| {
                        cache.on_event(&ev);
                        if matches!(ev, watcher::Event::InitDone) {
                            initial.listed(cache.keys());
                        }
                        feed.on_event(&ev, &queue);
                    },
                )
                .await
            }
        })
        .feed("inittemplate-watch", move |_| {
            let (templates, kicker) = (templates.clone(), kicker.clone());
            async move {
                crate::controller::watch::drive_reported(
                    watcher(templates, watcher::Config::default()),
                    "InitTemplates",
                    |_| None,
                    |ev| {
                        // A fixed template should not wait for the backoff
                        // of every workspace that failed with the broken one.
                        if matches!(
                            ev,
                            watcher::Event::Apply(_)
                                | watcher::Event::Delete(_)
                                | watcher::Event::InitDone
                        ) {
                            kicker.kick_all();
                        }
                    },
                )
                .await
            }
        })
        .feed("init-status-writer", move |_| {
            super::status::run_writer(book.clone(), shared.clone(), cancel.clone())
        })
        .on_stop(move || stop.stop_all())
        .run()
        .await;
}

impl crate::controller::runner::Reconcile for Manager {
    type Key = TargetKey;
    type Error = String;
    const TASK: &'static str = "inittarget-worker";

    fn name(&self) -> &str {
        "inittargets"
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a TargetKey,
    ) -> futures::future::BoxFuture<'a, Result<Outcome, String>> {
        Box::pin(async move {
            let r = self.reconcile_target(key).await;
            self.initial.reconciled(key);
            r
        })
    }

    fn panicked(&self, message: String) -> String {
        message
    }

    fn record<'a>(
        &'a self,
        key: &'a TargetKey,
        result: &'a Result<Outcome, String>,
        _took: Duration,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = result {
                warn!(init_target = %key, error = %e, "reconciling the InitTarget failed; retrying");
            }
        })
    }

    /// Resolve the WorkspaceType again now and then.
    fn resync_period(&self) -> Option<Duration> {
        Some(RESOLVE_AGAIN)
    }
}

/// What resolving a `workspaceTypeRef` found.
enum Resolved {
    Type(TypeKey),
    Problem(Problem),
}

impl Manager {
    fn workers(&self) -> std::sync::MutexGuard<'_, Workers> {
        self.workers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn kick_all(&self) {
        for r in self.workers().by_type.values() {
            r.worker.kick();
        }
    }

    fn stop_all(&self) {
        let mut w = self.workers();
        for (_, r) in w.by_type.drain() {
            r.cancel.cancel();
        }
        w.targets.clear();
    }

    /// Take `key` off its worker; the worker stops with its last target.
    fn detach(&self, key: &TargetKey) {
        let mut w = self.workers();
        let Some(a) = w.targets.remove(key) else {
            return;
        };
        self.book.clear_workspaces(key);
        let empty = match w.by_type.get(&a.ty) {
            Some(r) => r.worker.remove_target(key),
            None => false,
        };
        if empty && let Some(r) = w.by_type.remove(&a.ty) {
            info!(workspace_type = %a.ty, "no InitTarget serves the WorkspaceType any more; stopping its worker");
            r.cancel.cancel();
        }
    }

    /// Put `key` on the worker of `ty`, starting it if needed; a target
    /// already there with a new spec retries the type's workspaces now.
    fn attach(&self, key: &TargetKey, ty: TypeKey, version: u64) {
        let mut w = self.workers();
        if let Some(a) = w.targets.get(key) {
            if a.ty == ty {
                if a.version != version {
                    w.targets.get_mut(key).expect("present").version = version;
                    if let Some(r) = w.by_type.get(&ty) {
                        r.worker.targets_changed();
                        r.worker.kick();
                    }
                }
                return;
            }
            info!(init_target = %key, from = %a.ty, to = %ty, "spec.workspaceTypeRef now names another WorkspaceType; moving it");
            drop(w);
            self.detach(key);
            w = self.workers();
        }
        let running = w.by_type.entry(ty.clone()).or_insert_with(|| {
            let cancel = self.cancel.child_token();
            let worker = TypeWorker::new(
                self.shared.clone(),
                ty.clone(),
                self.cache.clone(),
                self.book.clone(),
                self.initial.clone(),
            );
            info!(workspace_type = %ty, "starting the WorkspaceType's worker");
            tokio::spawn(worker.clone().run(cancel.clone()));
            Running { worker, cancel }
        });
        running.worker.add_target(key.clone());
        w.targets.insert(key.clone(), Attached { ty, version });
    }

    async fn reconcile_target(&self, key: &TargetKey) -> Result<Outcome, String> {
        let Some(cached) = self.cache.get(key) else {
            debug!(init_target = %key, "InitTarget is gone (deleted or no longer selected)");
            self.detach(key);
            self.book.remove(key);
            return Ok(Outcome::Gone);
        };
        let obj = &cached.obj;
        let shown = obj
            .data
            .get("status")
            .and_then(|s| serde_json::from_value(s.clone()).ok());
        self.book.seen(
            key,
            obj.metadata.uid.clone(),
            obj.metadata.generation,
            shown,
        );
        let target = match &cached.target {
            Ok(t) => t,
            Err(e) => {
                self.book.set_problem(
                    key,
                    Slot::Target,
                    Some(Problem {
                        reason: "InvalidSpec",
                        message: format!(
                            "the InitTarget does not match its schema ({e}); fix it (docs/init-target.md)"
                        ),
                    }),
                );
                self.detach(key);
                return Ok(Outcome::Done);
            }
        };
        let version = version_of(obj);
        match self.resolve(key, target).await? {
            Resolved::Problem(p) => {
                self.book.set_problem(key, Slot::Target, Some(p));
                self.book.set_served(key, None, None);
                self.detach(key);
                Ok(Outcome::Requeue(UNRESOLVED_RETRY))
            }
            Resolved::Type(ty) => {
                // The worker fails the workspaces of an invalid target, and
                // says why there too; here it is said once for the target.
                let problems = target.spec.problems();
                self.book.set_problem(
                    key,
                    Slot::Target,
                    (!problems.is_empty()).then(|| Problem {
                        reason: "InvalidSpec",
                        message: format!("{}; fix the InitTarget", problems.join("; ")),
                    }),
                );
                self.attach(key, ty, version);
                Ok(Outcome::Done)
            }
        }
    }

    /// The logical cluster and name of the WorkspaceType `target` names.
    async fn resolve(&self, key: &TargetKey, target: &InitTarget) -> Result<Resolved, String> {
        let r = &target.spec.workspace_type_ref;
        let workspace = if !r.path.is_empty() {
            r.path.clone()
        } else if !key.cluster.is_empty() {
            key.cluster.clone()
        } else {
            self.shared.config_workspace.clone()
        };
        if r.name.is_empty() {
            return Ok(Resolved::Problem(Problem {
                reason: "InvalidSpec",
                message: "spec.workspaceTypeRef.name: must name the WorkspaceType".into(),
            }));
        }
        let client = self
            .shared
            .workspace_client(&workspace)
            .map_err(|e| e.to_string())?;
        let api: Api<DynamicObject> = Api::all_with(client, &workspacetype_resource());
        let not_found = || {
            Resolved::Problem(Problem {
                reason: "WorkspaceTypeNotFound",
                message: format!(
                    "WorkspaceType {:?} not found in workspace {workspace}; create it, or fix spec.workspaceTypeRef",
                    r.name
                ),
            })
        };
        match api.get(&r.name).await {
            Ok(wst) => match wst
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CLUSTER_ANNOTATION))
            {
                Some(cluster) => Ok(Resolved::Type(TypeKey {
                    cluster: cluster.clone(),
                    name: r.name.clone(),
                })),
                None => Ok(Resolved::Problem(Problem {
                    reason: "WorkspaceTypeNotFound",
                    message: format!(
                        "WorkspaceType {:?} in {workspace} has no {CLUSTER_ANNOTATION} annotation: spec.workspaceTypeRef.path must name a kcp workspace",
                        r.name
                    ),
                })),
            },
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(not_found()),
            Err(kube::Error::Api(s)) if s.code == 401 || s.code == 403 => {
                Ok(Resolved::Problem(Problem {
                    reason: "Forbidden",
                    message: format!(
                        "cannot read WorkspaceType {:?} in workspace {workspace} ({}); grant the agent's user access to that workspace and get, list and watch on workspacetypes/{} (docs/rbac.md)",
                        r.name, s.message, r.name
                    ),
                }))
            }
            Err(e) => Err(format!(
                "reading WorkspaceType {:?} in workspace {workspace}: {e}",
                r.name
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target(name: &str, cluster: Option<&str>, spec: serde_json::Value) -> DynamicObject {
        let mut meta = json!({"name": name, "uid": format!("uid-{name}"), "generation": 1});
        if let Some(c) = cluster {
            meta["annotations"] = json!({"kcp.io/cluster": c});
        }
        serde_json::from_value(json!({
            "apiVersion": "initialization.kcp.io/v1alpha1", "kind": "InitTarget",
            "metadata": meta, "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn targets_of_two_workspaces_with_one_name_are_two() {
        let a = key_of(&target("x", Some("c1"), json!({}))).unwrap();
        let b = key_of(&target("x", Some("c2"), json!({}))).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.to_string(), "c1|x");
        assert_eq!(
            key_of(&target("x", None, json!({}))).unwrap().to_string(),
            "x"
        );
    }

    /// The agent's status writes do not make a target another one; a spec
    /// change does.
    #[test]
    fn version_ignores_status() {
        let spec = json!({"workspaceTypeRef": {"name": "t"}, "sources": []});
        let a = target("x", Some("c"), spec.clone());
        let mut b = a.clone();
        b.data["status"] = json!({"workspacesInitialized": 3});
        b.metadata.resource_version = Some("99".into());
        assert_eq!(version_of(&a), version_of(&b));
        let mut c = a.clone();
        c.data["spec"]["sources"] = json!([{"template": {"name": "t"}}]);
        assert_ne!(version_of(&a), version_of(&c));
    }

    #[test]
    fn cache_follows_lists_and_events() {
        let cache = TargetCache::default();
        let a = target(
            "a",
            Some("c"),
            json!({"workspaceTypeRef": {"name": "t"}, "sources": []}),
        );
        let bad = target("b", Some("c"), json!({"sources": "nope"}));
        cache.on_event(&watcher::Event::Init);
        cache.on_event(&watcher::Event::InitApply(a.clone()));
        cache.on_event(&watcher::Event::InitApply(bad.clone()));
        assert!(
            cache.get(&key_of(&a).unwrap()).is_none(),
            "list not done yet"
        );
        cache.on_event(&watcher::Event::InitDone);
        assert!(cache.get(&key_of(&a).unwrap()).unwrap().target.is_ok());
        assert!(cache.get(&key_of(&bad).unwrap()).unwrap().target.is_err());
        cache.on_event(&watcher::Event::Delete(a.clone()));
        assert!(cache.get(&key_of(&a).unwrap()).is_none());
        // A re-list drops what vanished meanwhile.
        cache.on_event(&watcher::Event::Init);
        cache.on_event(&watcher::Event::InitDone);
        assert!(cache.get(&key_of(&bad).unwrap()).is_none());
    }
}
