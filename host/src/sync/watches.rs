//! What a sync controller watches, and which keys each watch enqueues:
//! - the endpoint slice lists one virtual-workspace URL per kcp shard that
//!   has consumers; [`follow_shards`] keeps one wildcard watch per URL (every
//!   bound workspace of that shard at once) feeding the kcp cache, and starts
//!   or stops watches as shards join or leave the slice;
//! - [`watch_copies`]: the service-cluster copies, mapped back to their kcp
//!   keys;
//! - [`watch_related`]: related objects on both sides into their caches
//!   ([`super::caches`]), enqueueing primaries whose originals change when
//!   `watch` asks;
//! - [`recheck_on_plugin_change`]: every object, after a plugin swap.
//!
//! Watch events go ahead of what a (re-)list finds
//! ([`crate::controller::queue::Priority`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use super::caches::{Gvr, namespaces_gvr, side_gvr};
use super::context::SyncContext;
use super::error::RelatedError;
use super::labels::*;
use super::related::api_resource;
use crate::apis::kcp::CLUSTER_ANNOTATION;
use crate::apis::selector::Selector;
use crate::controller::feed::watch_changes;
use crate::controller::pack::resource_version;
use crate::controller::queue::WorkQueue;
use crate::controller::store::{Change, KcpCache, KeyParts, ObjectKey};

/// Check every object again whenever the plugins change.
pub(super) async fn recheck_on_plugin_change(
    ctx: Arc<SyncContext>,
    queue: Arc<WorkQueue<ObjectKey>>,
) {
    loop {
        ctx.resync_all.notified().await;
        let keys = ctx.cache.keys();
        info!(published_resource = %ctx.published_resource, objects = keys.len(), "plugins changed; re-checking every object");
        for key in keys {
            queue.add_low(key);
        }
    }
}

/// The copies on the service cluster: every event of a copy (the initial
/// list too) re-checks the kcp object it belongs to.
/// Every copy of the kind (anything with the identity labels), so that the
/// cache alone answers "is there a copy of this kcp object?": a new object
/// costs no request to find out, where a LIST by label per object would
/// make the API server scan every object of the kind each time. Copies of
/// other agents (another kcp syncing into this cluster) are not cached;
/// copies with no agent label (made before agents had names) are, and are
/// adopted.
pub(super) async fn watch_copies(ctx: Arc<SyncContext>, queue: Arc<WorkQueue<ObjectKey>>) {
    let api: Api<DynamicObject> = Api::all_with(ctx.service.clone(), &ctx.local.ar);
    let cfg = watcher::Config::default().labels(REMOTE_CLUSTER_LABEL);
    let copies = &ctx.copies;
    let agent = ctx.agent_name.as_str();
    watch_loop("service", api, cfg, queue, move |ev| {
        let ev = match ev {
            Change::Listed(o) if !super::labels::ours(&o, agent) => return vec![],
            // Relabelled for another agent: no longer this one's.
            Change::Apply(o) | Change::Delete(o) if !super::labels::ours(&o, agent) => {
                if !copies.contains(&o) {
                    return vec![];
                }
                Change::Delete(o)
            }
            ev => ev,
        };
        copies.feed(ev, |o, _| super::labels::local_key(o).into_iter().collect())
    })
    .await;
}

/// Keep one kcp watch per virtual-workspace URL of the endpoint slice (one
/// per shard), following the slice as shards join and leave.
pub(super) async fn follow_shards(ctx: Arc<SyncContext>, queue: Arc<WorkQueue<ObjectKey>>) {
    let mut endpoints = ctx.kcp.endpoints();
    // Dropping a URL's JoinSet aborts its watches.
    let mut shards: HashMap<String, JoinSet<()>> = HashMap::new();
    loop {
        let urls = endpoints.borrow_and_update().clone();
        let gone: Vec<String> = shards
            .keys()
            .filter(|u| !urls.contains(u))
            .cloned()
            .collect();
        for url in gone {
            shards.remove(&url);
            let dropped = ctx.cache.forget_url(&url);
            ctx.related_caches.forget_url(&url);
            ctx.kcp.forget_vw(&url);
            info!(published_resource = %ctx.published_resource, %url, objects = dropped.len(), "shard left the endpoint slice; stopped watching it");
        }
        for url in urls {
            if shards.contains_key(&url) {
                continue;
            }
            info!(published_resource = %ctx.published_resource, %url, "watching shard");
            let url: Arc<str> = url.into();
            // Supervised like the controller's other loops; they end when
            // their set is dropped (the shard left), so no token fires them.
            let never = CancellationToken::new();
            let pr = ctx.published_resource.clone();
            let mut set = JoinSet::new();
            {
                let (ctx, url, queue) = (ctx.clone(), url.clone(), queue.clone());
                set.spawn(crate::controller::supervise::supervised(
                    "kcp-watch",
                    pr.clone(),
                    never.clone(),
                    move || kcp_watch(ctx.clone(), url.clone(), queue.clone()),
                ));
            }
            for gvr in kinds(&ctx, false) {
                let (ctx, url, queue) = (ctx.clone(), url.clone(), queue.clone());
                set.spawn(crate::controller::supervise::supervised(
                    "related-watch",
                    pr.clone(),
                    never.clone(),
                    move || {
                        watch_related(
                            ctx.clone(),
                            false,
                            gvr.clone(),
                            Some(url.clone()),
                            queue.clone(),
                        )
                    },
                ));
            }
            shards.insert(url.to_string(), set);
        }
        if endpoints.changed().await.is_err() {
            // The agent is shutting down; keep the current watches until
            // the controller is cancelled.
            std::future::pending::<()>().await;
        }
    }
}

/// The wildcard watch of one shard's virtual workspace, into the cache.
async fn kcp_watch(ctx: Arc<SyncContext>, url: Arc<str>, queue: Arc<WorkQueue<ObjectKey>>) {
    let client = match ctx.kcp.vw_client(&url, "*") {
        Ok(c) => c,
        Err(e) => {
            error!(%url, error = %e, "cannot build wildcard client");
            return;
        }
    };
    let api: Api<DynamicObject> = Api::all_with(client, &ctx.remote.ar);
    let mut feed = KcpFeed::new(ctx.cache.clone(), url, queue.clone());
    watch_loop("kcp", api, watcher::Config::default(), queue, |ev| {
        feed.on_change(ev)
    })
    .await;
}

/// One shard's kcp events into the cache and the keys to reconcile. The
/// keys of a (re-)list go out when it is complete, at low priority, behind
/// watch events, except objects created since this watch began: those are
/// what consumers make now, in the list only because it was still running
/// (a restart's list of 100 000 objects takes a while), and they go ahead
/// of the backlog as their watch event would have. At most [`FRESH_MAX`]
/// of them, the newest by resourceVersion: creationTimestamp has whole
/// seconds, so a batch made in the second the watch began (a bench's
/// backlog, an import) would otherwise count as new and hold back the
/// watch events behind it.
struct KcpFeed {
    cache: Arc<KcpCache>,
    url: Arc<str>,
    queue: Arc<WorkQueue<ObjectKey>>,
    /// creationTimestamp has whole seconds: objects of the second the watch
    /// began count as new. A clock skew between kcp and the agent only moves
    /// objects between the two priorities.
    began: k8s_openapi::jiff::Timestamp,
    /// Listed objects created since `began`, with their resourceVersions,
    /// until their list is done.
    fresh: Vec<(u64, ObjectKey)>,
}

/// Listed objects handed out as new, at most (see [`KcpFeed`]).
const FRESH_MAX: usize = 32;

impl KcpFeed {
    fn new(cache: Arc<KcpCache>, url: Arc<str>, queue: Arc<WorkQueue<ObjectKey>>) -> Self {
        KcpFeed {
            cache,
            url,
            queue,
            began: k8s_openapi::jiff::Timestamp::now(),
            fresh: Vec::new(),
        }
    }

    fn on_change(&mut self, ev: Change<DynamicObject>) -> Vec<ObjectKey> {
        let (cache, url) = (&self.cache, &self.url);
        match ev {
            Change::ListStart => {
                self.fresh.clear();
                cache.list_started(url);
                vec![]
            }
            Change::Listed(o) => {
                if self.created_since_began(&o)
                    && let Some(k) = crate::controller::store::key_of(&o)
                {
                    self.fresh.push((resource_version(&o).unwrap_or(0), k));
                }
                cache.listed(url, o);
                vec![]
            }
            Change::ListDone => {
                // In the cache first, then handed out.
                let keys = cache.list_done(url);
                self.fresh
                    .sort_unstable_by_key(|(rv, _)| std::cmp::Reverse(*rv));
                for (_, k) in self.fresh.drain(..).take(FRESH_MAX) {
                    self.queue.add(k);
                }
                keys
            }
            Change::Apply(o) => cache.apply(url, o).into_iter().collect(),
            Change::Delete(o) => cache.delete(url, &o).into_iter().collect(),
        }
    }

    fn created_since_began(&self, o: &DynamicObject) -> bool {
        o.metadata
            .creation_timestamp
            .as_ref()
            .is_some_and(|t| t.0.as_second() >= self.began.as_second())
    }
}

/// Watch `api` on `side` ("kcp" or "service") for as long as it runs and
/// enqueue the keys `on_change` returns.
pub(super) async fn watch_loop<K, F>(
    side: &'static str,
    api: Api<K>,
    cfg: watcher::Config,
    queue: Arc<WorkQueue<ObjectKey>>,
    on_change: F,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: FnMut(Change<K>) -> Vec<ObjectKey>,
{
    crate::controller::feed::watch_changes(
        side,
        super::forbidden_fix(side),
        api,
        cfg,
        queue,
        on_change,
    )
    .await
}

/// The kinds to cache on one side: every related resource's, and
/// Namespaces where `spec.filter.namespace` (kcp side) or a related
/// resource's `object.namespace.selector` (its origin side) reads them.
pub fn kinds(ctx: &SyncContext, service_side: bool) -> BTreeSet<Gvr> {
    let plugins = ctx.plugins();
    let mut out: BTreeSet<Gvr> = plugins
        .related
        .iter()
        .map(|r| side_gvr(r, service_side))
        .collect();
    let by_namespace_labels = plugins.related.iter().any(|r| {
        r.is_service() == service_side
            && r.spec
                .object
                .namespace
                .as_ref()
                .is_some_and(|n| n.selector.is_some())
    });
    let ns_meta = ctx.namespace_metadata.as_ref();
    // Service side: to see drift; kcp side: the keys copied from there.
    let ns_meta = ns_meta.is_some_and(|m| service_side || m.copies());
    if by_namespace_labels || ns_meta || (!service_side && ctx.namespace_filter.is_some()) {
        out.insert(namespaces_gvr());
    }
    // What `spec.reads` lets plugins read is answered from these caches.
    out.extend(ctx.reads.kinds(service_side));
    out
}

/// How a changed original finds its primaries (`watch` of one related
/// resource whose origin is the watched kind).
enum Trigger {
    /// The primary is the original's owner.
    Owner,
    /// Every primary of the original's workspace whose labels match.
    Selector(Selector),
}

fn triggers(ctx: &SyncContext, service_side: bool, gvr: &Gvr) -> Vec<Trigger> {
    let mut out = Vec::new();
    for r in ctx.plugins().related.iter() {
        if r.is_service() != service_side || r.spec.origin_gvr() != *gvr {
            continue;
        }
        let Some(w) = &r.spec.watch else { continue };
        match &w.by_selector {
            None => out.push(Trigger::Owner),
            Some(sel) => match crate::apis::selector::from_label_selector(sel) {
                Ok(s) => out.push(Trigger::Selector(s)),
                Err(e) => {
                    warn!(published_resource = %ctx.published_resource, identifier = %r.spec.identifier, error = %e, "invalid watch.bySelector; changes of these objects are picked up by the periodic check only")
                }
            },
        }
    }
    out
}

/// Watch one related kind on one side into its cache (kcp side: through
/// the virtual workspace at `kcp_url`, one watch per shard) until the task
/// is aborted, enqueueing primaries whose originals change.
pub async fn watch_related(
    ctx: Arc<SyncContext>,
    service_side: bool,
    gvr: Gvr,
    kcp_url: Option<Arc<str>>,
    queue: Arc<WorkQueue<ObjectKey>>,
) {
    let what = format!("related {}", gvr.2);
    let client = match &kcp_url {
        None => ctx.service.clone(),
        Some(url) => match ctx.kcp.vw_client(url, "*") {
            Ok(c) => c,
            Err(e) => {
                warn!(published_resource = %ctx.published_resource, resource = %gvr.2, error = %e, "cannot watch related objects; reading them from the API");
                return;
            }
        },
    };
    let mut backoff =
        crate::controller::backoff::Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
    let ar = loop {
        match api_resource(&client, &what, gvr.clone(), gvr.2.clone()).await {
            Ok(ar) => {
                ctx.related_caches.set_not_served(service_side, &gvr, None);
                break ar;
            }
            Err(e) => {
                // A plugin read of a kind the server does not serve fails
                // as such (not as "try again").
                let not_served = match &e {
                    RelatedError::Config { .. } => true,
                    RelatedError::Kube { source, .. } => {
                        matches!(source, kube::Error::Api(s) if s.code == 404)
                    }
                };
                ctx.related_caches.set_not_served(
                    service_side,
                    &gvr,
                    not_served.then(|| e.to_string()),
                );
                let retry_in = backoff.next_delay();
                warn!(published_resource = %ctx.published_resource, error = %e, ?retry_in, "cannot watch related objects yet");
                tokio::time::sleep(retry_in).await;
            }
        }
    };
    let triggers = triggers(&ctx, service_side, &gvr);
    info!(published_resource = %ctx.published_resource, resource = %ar.plural, side = if service_side { "service" } else { "kcp" }, url = kcp_url.as_deref().unwrap_or_default(), "caching related objects");
    let api: Api<DynamicObject> = Api::all_with(client, &ar);
    let cfg = watcher::Config::default();
    let ctx = &*ctx;
    let triggers = &triggers;
    let gvr_ref = &gvr;
    let changed = move |o: &DynamicObject| {
        let mut keys = primaries_of(ctx, service_side, o, triggers);
        // Objects whose plugins read this one (spec.reads).
        let cluster = o
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CLUSTER_ANNOTATION))
            .map(String::as_str)
            .unwrap_or_default();
        ctx.read_deps.bump();
        let readers = ctx.read_deps.readers(service_side, gvr_ref, cluster, o);
        if !readers.is_empty() {
            debug!(published_resource = %ctx.published_resource, objects = readers.len(), "an object plugins read changed");
            // Their last pass read what changed: not in sync any more,
            // whatever their own versions say.
            let mut memo = ctx.in_sync.lock().unwrap_or_else(|e| e.into_inner());
            for k in &readers {
                memo.remove(k);
            }
            drop(memo);
            keys.extend(readers);
            keys.sort();
            keys.dedup();
        }
        keys
    };
    match kcp_url {
        None => {
            let store = ctx.related_caches.service_or_new(&gvr);
            // The initial list re-checks nothing: the periodic check does.
            watch_changes(
                "service",
                super::forbidden_fix("service"),
                api,
                cfg,
                queue,
                |ev| store.feed(ev, |o, listed| if listed { vec![] } else { changed(o) }),
            )
            .await;
        }
        Some(url) => {
            let cache = ctx.related_caches.kcp_or_new(&gvr);
            // Related objects show which shard serves a workspace that may
            // hold no primary yet.
            let seen = |o: &DynamicObject| {
                if let Some(cluster) = o
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(CLUSTER_ANNOTATION))
                {
                    ctx.cache.route_seen(cluster, &url);
                }
            };
            watch_changes(
                "kcp",
                super::forbidden_fix("kcp"),
                api,
                cfg,
                queue,
                |ev| match ev {
                    Change::ListStart => {
                        cache.list_started(&url);
                        vec![]
                    }
                    Change::Listed(o) => {
                        seen(&o);
                        cache.listed(&url, o);
                        vec![]
                    }
                    Change::ListDone => {
                        cache.list_done(&url);
                        vec![]
                    }
                    Change::Apply(o) => {
                        seen(&o);
                        let keys = changed(&o);
                        cache.apply(&url, o);
                        keys
                    }
                    Change::Delete(o) => {
                        cache.delete(&url, &o);
                        changed(&o)
                    }
                },
            )
            .await;
        }
    }
}

/// The primaries a changed original belongs to, from the primaries'
/// caches.
fn primaries_of(
    ctx: &SyncContext,
    service_side: bool,
    obj: &DynamicObject,
    triggers: &[Trigger],
) -> Vec<ObjectKey> {
    let ns = obj.metadata.namespace.clone();
    let cluster = obj
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CLUSTER_ANNOTATION))
        .cloned()
        .unwrap_or_default();
    let primary = if service_side {
        &ctx.local.ar
    } else {
        &ctx.remote.ar
    };
    let labels_match = |sel: &Selector, o: &DynamicObject| {
        crate::apis::selector::matches_labels(sel, o.metadata.labels.as_ref())
    };
    let mut out = Vec::new();
    for t in triggers {
        match t {
            Trigger::Owner => {
                let Some(owner) = obj
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.api_version == primary.api_version && o.kind == primary.kind)
                else {
                    continue;
                };
                if service_side {
                    let copy = ctx
                        .copies
                        .get_ref(ns.as_deref().unwrap_or_default(), &owner.name);
                    out.extend(copy.and_then(|c| local_key(&c)));
                } else {
                    out.push(ObjectKey::new(KeyParts {
                        cluster: cluster.clone(),
                        namespace: ns.clone(),
                        name: owner.name.clone(),
                    }));
                }
            }
            Trigger::Selector(sel) => {
                if service_side {
                    out.extend(
                        ctx.copies
                            .list(|c| labels_match(sel, c))
                            .iter()
                            .filter_map(|c| local_key(c)),
                    );
                } else {
                    out.extend(
                        ctx.cache
                            .list(&cluster, |_| true, |p| labels_match(sel, p))
                            .iter()
                            .filter_map(|p| crate::controller::store::key_of(p)),
                    );
                }
            }
        }
    }
    out.sort();
    out.dedup();
    if !out.is_empty() {
        debug!(published_resource = %ctx.published_resource, primaries = out.len(), "related object changed");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::object_key;

    fn crontab(name: &str, created: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "example.com/v1",
            "kind": "CronTab",
            "metadata": {
                "name": name,
                "namespace": "default",
                "resourceVersion": "1",
                "creationTimestamp": created,
                "annotations": {"kcp.io/cluster": "ws1"},
            },
        }))
        .unwrap()
    }

    /// A shard's feed over a fresh cache and queue, and `began` as a
    /// creationTimestamp.
    fn feed() -> (Arc<KcpCache>, Arc<WorkQueue<ObjectKey>>, KcpFeed, String) {
        let cache = KcpCache::new();
        let queue = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(2));
        let feed = KcpFeed::new(cache.clone(), "https://shard".into(), queue.clone());
        let now = feed.began.to_string();
        (cache, queue, feed, now)
    }

    /// A restart's list: the backlog made before the agent started, and
    /// one object a consumer created while the list ran. That one is
    /// reconciled first, though the list hands out keys sorted; the backlog
    /// follows.
    #[tokio::test]
    async fn an_object_created_during_the_initial_list_goes_ahead_of_the_backlog() {
        let (cache, queue, mut feed, now) = feed();
        let keys: Vec<ObjectKey> = [
            Change::ListStart,
            Change::Listed(crontab("old-1", "2026-01-01T00:00:00Z")),
            Change::Listed(crontab("old-2", "2026-01-01T00:00:01Z")),
            Change::Listed(crontab("z-new", &now)),
            Change::Listed(crontab("old-3", "2026-01-01T00:00:02Z")),
            Change::ListDone,
        ]
        .into_iter()
        .flat_map(|ev| feed.on_change(ev))
        .collect();
        // The caller queues what a list returns at low priority.
        for k in keys {
            queue.add_low(k);
        }
        let key = |n| object_key("ws1", Some("default"), n);
        assert_eq!(queue.get().await, Some(key("z-new")));
        assert!(
            cache.get(&key("z-new")).is_some(),
            "in the cache when handed out"
        );
        assert_eq!(queue.get().await, Some(key("old-1")));
        assert_eq!(queue.get().await, Some(key("old-2")));
        assert_eq!(queue.get().await, Some(key("old-3")));
        assert!(feed.fresh.is_empty());
    }

    /// A batch made in the second the watch began (creationTimestamp has
    /// whole seconds) counts as new only up to FRESH_MAX, the newest first:
    /// the consumer's object made after the batch is among them, and the
    /// rest of the batch waits behind watch events.
    #[tokio::test]
    async fn a_batch_made_as_the_watch_began_does_not_all_count_as_new() {
        let (_cache, queue, mut feed, now) = feed();
        let mut events = vec![Change::ListStart];
        for i in 0..100 {
            let mut o = crontab(&format!("batch-{i:03}"), &now);
            o.metadata.resource_version = Some(format!("{}", 1000 + i));
            events.push(Change::Listed(o));
        }
        let mut mine = crontab("mine", &now);
        mine.metadata.resource_version = Some("5000".into());
        events.push(Change::Listed(mine));
        events.push(Change::ListDone);
        for k in events.into_iter().flat_map(|ev| feed.on_change(ev)) {
            queue.add_low(k);
        }
        // A watch event after the list.
        queue.add(object_key("ws1", Some("default"), "watched"));
        assert_eq!(queue.len_by_priority(), (FRESH_MAX + 1, 101 - FRESH_MAX));
        let key = |n: &str| object_key("ws1", Some("default"), n);
        assert_eq!(queue.get().await, Some(key("mine")));
        // Then the newest of the batch.
        assert_eq!(queue.get().await, Some(key("batch-099")));
    }
}
