//! One reconcile of one kcp object with its copy on the service cluster,
//! top to bottom. kcp is the source of truth for everything but `status`,
//! which flows up. The phases, each in its own module:
//! 1. [`super::deletion`]: the kcp object is being deleted: related
//!    objects in delete mode, then the copy, then the finalizer;
//! 2. filters (`spec.filter`), then the finalizer: the kcp object carries
//!    ours before any copy exists (here);
//! 3. [`super::locate`]: the clients, the workspace path and the copy;
//! 4. [`super::spec`] down: plugins compute the copy (naming, mutations),
//!    which is created, adopted or three-way-patched, and its state kept;
//! 5. [`super::status`] up: the copy's status replaces the kcp object's;
//! 6. [`super::related`] objects, once the primary is in sync.
//!
//! A new object goes through all of them in one pass. The in-sync memo
//! ([`super::context`]) skips a pass whose inputs did not change since it
//! was last in sync; with `spec.reads`, a change to what a pass read
//! clears its entry ([`super::watches`]), and a pass during which a
//! readable object changed is not memoised.

use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use serde_json::json;
use tracing::{debug, info};

use super::context::{InSync, Pass, SyncContext, WROTE};
use super::error::{REQUEUE_SOON, SyncError, kerr, to_json};
use super::events;
use super::labels::FINALIZER;
use super::ports::Origin;
use super::reads::ObjectReads;
use super::spec::Spec;
use crate::apis::selector::SelectorExt;
use crate::controller::runner::Outcome;
use crate::controller::store::ObjectKey;

impl SyncContext {
    pub async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, SyncError> {
        let before = self.versions(key);
        let read_epoch = self.read_deps.epoch();
        if let Some(versions) = before
            && let Some(memo) = self
                .in_sync
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(key)
            && memo.versions == versions
            && memo
                .written_at
                .is_none_or(|t| t.elapsed() < self.resync / 2)
        {
            return Ok(Outcome::Done);
        }
        let (result, wrote) = WROTE
            .scope(Default::default(), async {
                let r = self.reconcile_changed(key).await;
                (r, WROTE.with(|w| w.get()))
            })
            .await;
        // What this reconcile left: its own writes, else what it read. Any
        // other version now (someone changed an object meanwhile) is news
        // for the next check, not in sync.
        let left = match (
            wrote.0.or(before.map(|b| b.0)),
            wrote.1.or(before.map(|b| b.1)),
        ) {
            (Some(k), Some(c)) => Some((k, c)),
            _ => None,
        };
        let mut memo = self.in_sync.lock().unwrap_or_else(|e| e.into_inner());
        match (&result, self.versions(key)) {
            (Ok(Outcome::Done), Some(versions))
                if Some(versions) == left && self.read_deps.epoch() == read_epoch =>
            {
                let written_at = (before != Some(versions)).then(tokio::time::Instant::now);
                memo.insert(
                    key.clone(),
                    InSync {
                        versions,
                        written_at,
                    },
                );
            }
            _ => {
                memo.remove(key);
            }
        }
        result
    }

    async fn reconcile_changed(&self, key: &ObjectKey) -> Result<Outcome, SyncError> {
        // Read from the informer cache: the watch keeps it current, and
        // the agent's own writes are written through.
        let Some(remote) = self.cache.get(key) else {
            debug!(%key, "object is gone from kcp");
            self.convergence.forget(key);
            self.read_deps.forget(key);
            self.plugin_reports.forget(key);
            if let Some(m) = &self.namespace_metadata {
                m.forget(key);
            }
            return Ok(Outcome::Gone);
        };
        let mut remote = remote;
        let kcp_api = self.kcp_api(key)?;
        let has_finalizer = remote
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|x| x == FINALIZER));

        // Deletion first: an object accepted earlier that no longer matches
        // a filter must still have its copy removed and its finalizer released.
        if remote.metadata.deletion_timestamp.is_some() {
            return super::deletion::run(self, key, kcp_api, &remote, has_finalizer).await;
        }
        if let Some(f) = &self.resource_filter
            && !crate::apis::selector::matches_labels(f, remote.metadata.labels.as_ref())
        {
            debug!(%key, "object does not match spec.filter.resource; skipping");
            return Ok(Outcome::Done);
        }
        if !self.namespace_admitted(key).await? {
            debug!(%key, "object's namespace does not match spec.filter.namespace; skipping");
            return Ok(Outcome::Done);
        }
        let path = self.workspace_path(&key.cluster).await?;
        if !has_finalizer {
            remote = Arc::new(self.accept(key, &kcp_api, &remote).await?);
        }
        // Each object's JSON form, made once for every phase (and every
        // plugin call) of this pass.
        let remote_json = to_json(key, "the kcp object", &remote)?;
        // Plugin reads of this pass, answered from the caches (or refused,
        // naming `spec.reads`, when it allows nothing).
        let object_reads = Arc::new(ObjectReads::new(
            self.reads.clone(),
            key,
            &self.related_caches,
            self.cache.route(&key.cluster),
        ));
        let read_host = Some(object_reads.clone() as Arc<dyn syncweave_runtime::ReadHost>);
        let pass = Pass {
            sync: self,
            plugins: self.plugins(),
            key,
            origin: Origin::of(key, path.as_deref(), &remote).with_reads(read_host.as_ref()),
            kcp_api,
            object: &remote_json,
            reported: Default::default(),
        };
        let result = self.sync_pass(&pass).await;
        // What the pass read decides which changes wake it, whatever its
        // outcome: a call that failed for want of an object is retried
        // when the object appears.
        if self.reads.any() {
            self.read_deps.record(key, object_reads.targets());
        }
        let reported =
            std::mem::take(&mut *pass.reported.lock().unwrap_or_else(|e| e.into_inner()));
        self.tell_reports(key, &remote_json, &reported, result.is_ok());
        result
    }

    /// Phases 3 to 6 of one pass.
    async fn sync_pass(&self, pass: &Pass<'_>) -> Result<Outcome, SyncError> {
        let key = pass.key;
        let mut local = self.find_local(key).await?;
        if let Some(l) = &local
            && l.metadata.deletion_timestamp.is_some()
        {
            debug!(%key, "service copy is being deleted; leaving it alone");
            return Ok(Outcome::Requeue(REQUEUE_SOON));
        }
        let mut local_json = local
            .as_deref()
            .map(|l| to_json(key, "the service copy", l))
            .transpose()?;
        // A spec that does not settle holds back its own writes only: status
        // and related objects still sync, then the key fails (and backs off).
        let mut unsettled = None;
        match super::spec::run(pass, local.as_deref().zip(local_json.as_ref())).await {
            Ok(Spec::Requeue(outcome)) => return Ok(outcome),
            Ok(Spec::InSync) => {}
            // Just placed: status and related objects follow in this pass.
            Ok(Spec::Created(copy)) => {
                local_json = Some(to_json(key, "the service copy", &copy)?);
                local = Some(Arc::new(*copy));
            }
            Err(e @ SyncError::NotConverging(..)) => unsettled = Some(e),
            Err(e) => return Err(e),
        }
        if let (Some(local), Some(local_json)) = (&local, &local_json)
            && self.remote.status_subresource
        {
            super::status::run(pass, local, local_json).await?;
        }
        // The primary is in sync: now its related objects.
        if let Some(local_json) = &local_json
            && let Some(outcome) = super::related::run(pass, local_json, false).await?
        {
            return Ok(outcome);
        }
        match unsettled {
            Some(e) => Err(e),
            None => Ok(Outcome::Done),
        }
    }

    /// Tell the consumer what the plugins of a pass reported, as Events on
    /// their object (the recorder folds repeats), and count the object's
    /// warnings for the PublishedResource's condition when the pass
    /// completed (a failed pass's reports are partial).
    fn tell_reports(
        &self,
        key: &ObjectKey,
        remote: &serde_json::Value,
        reported: &super::ports::Reports,
        completed: bool,
    ) {
        let said = super::plugin_reports::said(reported);
        for s in &said {
            crate::ops::metrics::METRICS
                .plugin_results
                .get_or_create(&crate::ops::metrics::ResultLabels {
                    published_resource: self.published_resource.clone(),
                    severity: if s.warning { "warning" } else { "normal" },
                })
                .inc();
            self.emit(key, remote, s.warning, &s.reason, s.message.clone());
        }
        if completed {
            self.plugin_reports.passed(key, &said);
        }
    }

    /// Accept a new kcp object: put our finalizer on it before any copy
    /// exists, and tell the consumer. Returns the object as written; the
    /// pass goes on with it, so a new object becomes a copy in this one
    /// reconcile, not one requeue per write.
    async fn accept(
        &self,
        key: &ObjectKey,
        kcp_api: &kube::Api<kube::api::DynamicObject>,
        remote: &kube::api::DynamicObject,
    ) -> Result<kube::api::DynamicObject, SyncError> {
        let mut finalizers = remote.metadata.finalizers.clone().unwrap_or_default();
        finalizers.push(FINALIZER.to_string());
        let p = json!({"metadata": {"finalizers": finalizers, "resourceVersion": remote.metadata.resource_version}});
        let accepted = kcp_api
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&p))
            .await
            .map_err(kerr("adding finalizer to", key))?;
        self.kcp_written(accepted.clone());
        info!(%key, "accepted object (finalizer added)");
        if let Ok(v) = serde_json::to_value(remote) {
            self.emit(
                key,
                &v,
                false,
                events::OBJECT_ACCEPTED,
                "object accepted by the sync agent".into(),
            );
        }
        Ok(accepted)
    }

    /// Whether `spec.filter.namespace` lets the object through. It fails
    /// closed: when the Namespace cannot be read, the reconcile fails (and is
    /// retried) rather than syncing an object that might be excluded.
    /// Cluster-scoped objects have no namespace to filter on.
    async fn namespace_admitted(&self, key: &ObjectKey) -> Result<bool, SyncError> {
        let (Some(filter), Some(ns)) = (&self.namespace_filter, &key.namespace) else {
            return Ok(true);
        };
        let namespaces = self.namespaces_api(false, &key.cluster)?;
        let err = |source| SyncError::Kube {
            action: "reading the Namespace (for spec.filter.namespace) of",
            what: format!(
                "{key}; the consumer's APIBinding must accept the `namespaces` permission claim"
            ),
            source,
        };
        // A Namespace the cache has not seen yet (its watch event may trail
        // the object's) is read from the API.
        let namespace = match namespaces.get("", ns).await.map_err(err)? {
            Some(n) => n,
            None => namespaces.api("").get(ns).await.map_err(err)?,
        };
        Ok(filter.matches(&namespace.metadata.labels.unwrap_or_default()))
    }
}
