//! Informer caches of related objects (`spec.related`), on both sides, so
//! that checking an object whose related objects are in sync reads nothing
//! from the API:
//! - kcp-side kinds are watched through every shard's wildcard virtual
//!   workspace into a [`KcpCache`] per kind (keyed by logical cluster,
//!   namespace and name, like the primaries);
//! - service-side kinds are watched cluster-wide into one [`Store`] per
//!   kind, indexed by namespace.
//!
//! The related pass reads originals and copies from here and writes through
//! what it changes. A cache that has not listed once yet (or that the agent
//! may not list/watch) is not used: reads go to the API meanwhile.
//!
//! The same watches enqueue the primary of a changed original when its
//! related resource has `watch` set, finding it in the primaries' caches.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use kube::runtime::watcher;
use tracing::{debug, info, warn};

use super::cache::{Change, KcpCache, Store};
use super::controller::{local_key, watch_loop};
use super::related::{Related, api_resource};
use super::syncer::SyncContext;
use super::{KeyParts, ObjectKey};
use crate::apis::kcp::CLUSTER_ANNOTATION;
use crate::runner::queue::WorkQueue;
use crate::selector::{Selector, SelectorExt};

/// Group, version and resource (the plain resource name, also in kcp: the
/// virtual workspace serves a claimed type without its identity hash).
pub type Gvr = (String, String, String);

/// The related-object caches of one sync controller, one per kind and side.
#[derive(Default)]
pub struct RelatedCaches {
    kcp: Mutex<BTreeMap<Gvr, Arc<KcpCache>>>,
    service: Mutex<BTreeMap<Gvr, Arc<Store<DynamicObject>>>>,
}

impl RelatedCaches {
    /// The cache of a kcp-side kind, if the controller watches it.
    pub fn kcp(&self, gvr: &Gvr) -> Option<Arc<KcpCache>> {
        self.kcp
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(gvr)
            .cloned()
    }

    /// The cache of a service-side kind, if the controller watches it.
    pub fn service(&self, gvr: &Gvr) -> Option<Arc<Store<DynamicObject>>> {
        self.service
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(gvr)
            .cloned()
    }

    fn kcp_or_new(&self, gvr: &Gvr) -> Arc<KcpCache> {
        self.kcp
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(gvr.clone())
            .or_default()
            .clone()
    }

    fn service_or_new(&self, gvr: &Gvr) -> Arc<Store<DynamicObject>> {
        self.service
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(gvr.clone())
            .or_insert_with(|| Store::new(|o: &DynamicObject| o.metadata.namespace.clone()))
            .clone()
    }

    /// A shard left the endpoint slice: drop what its watches brought in.
    pub fn forget_url(&self, url: &str) {
        for c in self.kcp.lock().unwrap_or_else(|e| e.into_inner()).values() {
            c.forget_url(url);
        }
    }
}

/// The kind of related resource `r` on one side: its origin's on the
/// origin side, its projection's on the other.
pub fn side_gvr(r: &Related, service_side: bool) -> Gvr {
    if r.is_service() == service_side {
        r.spec.origin_gvr()
    } else {
        r.spec.dest_gvr()
    }
}

/// Namespaces, cached like a related kind when objects are filtered or
/// related objects selected by namespace labels.
pub fn namespaces_gvr() -> Gvr {
    (String::new(), "v1".into(), "namespaces".into())
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
    if by_namespace_labels || (!service_side && ctx.namespace_filter.is_some()) {
        out.insert(namespaces_gvr());
    }
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
            Some(sel) => match crate::selector::from_label_selector(sel) {
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
pub async fn watch(
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
    let mut backoff = crate::backoff::Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
    let ar = loop {
        match api_resource(&client, &what, gvr.clone(), gvr.2.clone()).await {
            Ok(ar) => break ar,
            Err(e) => {
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
    let changed = move |o: &DynamicObject| primaries_of(ctx, service_side, o, triggers);
    match kcp_url {
        None => {
            let store = ctx.related_caches.service_or_new(&gvr);
            // The initial list re-checks nothing: the periodic check does.
            watch_loop("service", api, cfg, queue, |ev| {
                store.feed(ev, |o, listed| if listed { vec![] } else { changed(o) })
            })
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
            watch_loop("kcp", api, cfg, queue, |ev| match ev {
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
            })
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
        sel.matches(&o.metadata.labels.clone().unwrap_or_default())
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
                            .filter_map(|p| super::cache::key_of(p)),
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

/// One side of a related resource: a client, the resource on it, and its
/// cache (see [`super::related_cache`]).
pub(super) struct SideApi {
    pub client: Client,
    pub ar: ApiResource,
    pub cache: SideCache,
}

pub(super) enum SideCache {
    /// Not watched (yet): read from the API.
    None,
    Service(Arc<Store<DynamicObject>>),
    /// The kind's kcp cache, for the primary's workspace and the shard
    /// that serves it.
    Kcp {
        cache: Arc<KcpCache>,
        cluster: String,
        url: Arc<str>,
    },
}

impl SideApi {
    pub(super) fn api(&self, ns: &str) -> Api<DynamicObject> {
        if ns.is_empty() {
            Api::all_with(self.client.clone(), &self.ar)
        } else {
            Api::namespaced_with(self.client.clone(), ns, &self.ar)
        }
    }

    /// Whether reads can come from the cache: it has listed once.
    pub(super) fn cached(&self) -> bool {
        match &self.cache {
            SideCache::None => false,
            SideCache::Service(s) => s.synced(),
            SideCache::Kcp { cache, url, .. } => cache.synced(&[url.to_string()]),
        }
    }

    fn key(cluster: &str, ns: &str, name: &str) -> ObjectKey {
        ObjectKey::new(KeyParts {
            cluster: cluster.to_string(),
            namespace: Some(ns.to_string()).filter(|n| !n.is_empty()),
            name: name.to_string(),
        })
    }

    /// The object `ns/name` (empty `ns`: cluster-scoped), if it exists.
    ///
    /// A miss in a kcp cache is checked with the API: the wildcard watch
    /// does not see workspaces whose APIBinding has not accepted the
    /// permission claim, and the API's 403 says so where a miss would hide
    /// it. Objects that exist, the steady state, are served from the cache.
    pub(super) async fn get(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<DynamicObject>, kube::Error> {
        if self.cached() {
            let hit = match &self.cache {
                SideCache::Service(s) => return Ok(s.get_ref(ns, name).map(|o| (*o).clone())),
                SideCache::Kcp { cache, cluster, .. } => cache.get(&Self::key(cluster, ns, name)),
                SideCache::None => None,
            };
            if let Some(o) = hit {
                return Ok(Some((*o).clone()));
            }
        }
        self.api(ns).get_opt(name).await
    }

    /// The objects in `ns` whose labels match `labels` (a selector string).
    /// As with [`SideApi::get`], finding nothing in a kcp cache is checked
    /// with the API.
    pub(super) async fn list(
        &self,
        ns: &str,
        labels: &str,
    ) -> Result<Vec<DynamicObject>, kube::Error> {
        // A selector the cache cannot parse goes to the API, which says
        // what is wrong with it.
        if let (true, Ok(sel)) = (self.cached(), crate::selector::parse(labels)) {
            let matches = |o: &DynamicObject| {
                o.metadata.namespace.as_deref().unwrap_or_default() == ns
                    && sel.matches(&o.metadata.labels.clone().unwrap_or_default())
            };
            let found = match &self.cache {
                // Indexed by namespace.
                SideCache::Service(s) if !ns.is_empty() => {
                    s.get_all(ns).into_iter().filter(|o| matches(o)).collect()
                }
                SideCache::Service(s) => s.list(|o| matches(o)),
                SideCache::Kcp { cache, cluster, .. } => cache.list(
                    cluster,
                    |k| k.namespace.as_deref().unwrap_or_default() == ns,
                    |o| matches(o),
                ),
                SideCache::None => vec![],
            };
            if !found.is_empty() || matches!(self.cache, SideCache::Service(_)) {
                return Ok(found.into_iter().map(|o| (*o).clone()).collect());
            }
        }
        Ok(self
            .api(ns)
            .list(&ListParams::default().labels(labels))
            .await?
            .items)
    }

    /// The agent wrote `obj`: remember the API's answer, so the next check
    /// does not act on what this one changed.
    pub(super) fn remember(&self, obj: DynamicObject) {
        match &self.cache {
            SideCache::None => {}
            SideCache::Service(s) => s.write_through(obj),
            SideCache::Kcp {
                cache,
                cluster,
                url,
            } => {
                cache.route_seen(cluster, url);
                cache.write_through(obj);
            }
        }
    }

    /// Delete `ns/name`; an object already gone is fine.
    pub(super) async fn delete(&self, ns: &str, name: &str) -> Result<(), kube::Error> {
        match self.api(ns).delete(name, &DeleteParams::background()).await {
            Ok(deleted) => {
                // Still there, held by finalizers: remember it as deleting.
                if let Some(obj) = deleted.left() {
                    self.remember(obj);
                    return Ok(());
                }
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e),
        }
        match &self.cache {
            SideCache::None => {}
            SideCache::Service(s) => s.forget(ns, name),
            SideCache::Kcp { cache, cluster, .. } => cache.forget(&Self::key(cluster, ns, name)),
        }
        Ok(())
    }
}

impl SyncContext {
    /// The cache of `gvr` on one side, for objects of the workspace
    /// `cluster` (kcp side), if the controller watches that kind.
    pub(super) fn side_cache(&self, service_side: bool, gvr: &Gvr, cluster: &str) -> SideCache {
        if service_side {
            self.related_caches.service(gvr).map(SideCache::Service)
        } else {
            self.related_caches
                .kcp(gvr)
                .zip(self.cache.route(cluster))
                .map(|(cache, url)| SideCache::Kcp {
                    cache,
                    cluster: cluster.to_string(),
                    url,
                })
        }
        .unwrap_or(SideCache::None)
    }

    /// Namespaces on one side (kcp: of the workspace `cluster`), cached
    /// when the PublishedResource filters or selects by namespace labels.
    pub(super) fn namespaces_api(
        &self,
        service_side: bool,
        cluster: &str,
    ) -> Result<SideApi, super::syncer::SyncError> {
        let client = if service_side {
            self.service.clone()
        } else {
            self.kcp_client(cluster)?
        };
        Ok(SideApi {
            client,
            ar: ApiResource::erase::<Namespace>(&()),
            cache: self.side_cache(service_side, &namespaces_gvr(), cluster),
        })
    }
}
