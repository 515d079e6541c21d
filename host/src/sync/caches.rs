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
//! The watches that fill them are [`super::watches::watch_related`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};

use super::ports::Related;
use crate::controller::store::{KcpCache, KeyParts, ObjectKey, Store};

/// Group, version and resource (the plain resource name, also in kcp: the
/// virtual workspace serves a claimed type without its identity hash).
pub type Gvr = (String, String, String);

/// The related-object caches of one sync controller, one per kind and side.
#[derive(Default)]
pub struct RelatedCaches {
    kcp: Mutex<BTreeMap<Gvr, Arc<KcpCache>>>,
    service: Mutex<BTreeMap<Gvr, Arc<Store<DynamicObject>>>>,
    /// Kinds a server does not serve, by side (`true`: service) and kind,
    /// with the discovery error: a plugin read of one fails as not served.
    not_served: Mutex<BTreeMap<(bool, Gvr), String>>,
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

    pub fn kcp_or_new(&self, gvr: &Gvr) -> Arc<KcpCache> {
        self.kcp
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(gvr.clone())
            .or_default()
            .clone()
    }

    pub fn service_or_new(&self, gvr: &Gvr) -> Arc<Store<DynamicObject>> {
        self.service
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(gvr.clone())
            .or_insert_with(|| Store::new(|o: &DynamicObject| o.metadata.namespace.clone()))
            .clone()
    }

    /// Discovery of a kind on one side failed (`None`: it succeeded).
    pub fn set_not_served(&self, service_side: bool, gvr: &Gvr, why: Option<String>) {
        let mut m = self.not_served.lock().unwrap_or_else(|e| e.into_inner());
        match why {
            Some(w) => m.insert((service_side, gvr.clone()), w),
            None => m.remove(&(service_side, gvr.clone())),
        };
    }

    /// The kinds a server does not serve (see [`Self::set_not_served`]).
    pub fn not_served(&self) -> BTreeMap<(bool, Gvr), String> {
        self.not_served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
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

/// kcp's LogicalClusters (one per workspace, named `cluster`), cached when
/// plugins may read them (`spec.reads.logicalCluster`).
pub fn logical_clusters_gvr() -> Gvr {
    (
        "core.kcp.io".into(),
        "v1alpha1".into(),
        "logicalclusters".into(),
    )
}

/// One side of a related resource: a client, the resource on it, and its
/// cache (see [`super::caches`]).
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
        if let (true, Ok(sel)) = (self.cached(), crate::apis::selector::parse(labels)) {
            let matches = |o: &DynamicObject| {
                o.metadata.namespace.as_deref().unwrap_or_default() == ns
                    && crate::apis::selector::matches_labels(&sel, o.metadata.labels.as_ref())
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
