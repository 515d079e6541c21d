//! Informer caches: watched objects kept in memory for reconciles to read.
//!
//! [`KcpCache`]: every object of the published resource in every bound
//! workspace, across all virtual-workspace URLs (shards) of the endpoint
//! slice, keyed by (logical cluster, namespace, name). kube-runtime's
//! reflector store is not used: it keys by (namespace, name), so same-named
//! objects of two workspaces would overwrite each other. The cache also knows
//! which URL serves each logical cluster: on a sharded kcp, a workspace is
//! only reachable through its own shard's virtual workspace.
//!
//! [`Store`]: the objects of one service-cluster watch, indexed by a lookup
//! key.
//!
//! Reconciles read from here; writes go to the API and are written through,
//! so the next reconcile does not act on what it just changed.
//!
//! Objects are kept serialized and deflated, each cache against its own
//! dictionary ([`super::pack`]); a read inflates and decodes the one object
//! it needs.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kube::api::DynamicObject;

use super::pack::resource_version;
use super::pack::{Cacheable, DictSlot, Packed};
use crate::apis::kcp::CLUSTER_ANNOTATION;

/// Identifies one kcp object across all bound workspaces. Objects with the
/// same namespace/name in two workspaces are two different keys.
///
/// Shared, not copied: one object's key sits in the kcp cache, the in-sync
/// memo, the work queue and its timer at once, and at 100 000 objects
/// three strings per copy were a good part of the agent's memory. A clone
/// is a reference count; the parts read as fields (`key.cluster`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(std::sync::Arc<KeyParts>);

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyParts {
    pub cluster: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn new(parts: KeyParts) -> Self {
        ObjectKey(std::sync::Arc::new(parts))
    }
}

impl std::ops::Deref for ObjectKey {
    type Target = KeyParts;
    fn deref(&self) -> &KeyParts {
        &self.0
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}|{ns}/{}", self.cluster, self.name),
            None => write!(f, "{}|{}", self.cluster, self.name),
        }
    }
}

/// A watch event, named for what it means to a cache.
pub enum Change<K> {
    ListStart,
    Listed(K),
    ListDone,
    Apply(K),
    Delete(K),
}

impl<K> From<kube::runtime::watcher::Event<K>> for Change<K> {
    fn from(ev: kube::runtime::watcher::Event<K>) -> Self {
        use kube::runtime::watcher::Event;
        match ev {
            Event::Init => Change::ListStart,
            Event::InitApply(o) => Change::Listed(o),
            Event::InitDone => Change::ListDone,
            Event::Apply(o) => Change::Apply(o),
            Event::Delete(o) => Change::Delete(o),
        }
    }
}

/// How long a deletion is remembered. The API's answer to the agent's own
/// write can arrive after the watch delivered the object's deletion (e.g.
/// removing the last finalizer, which deletes the object: response and
/// DELETE event race); written through then, it would bring the deleted
/// object back into the cache for good (churn showed them piling up).
/// Answers come within a request timeout, so a minute is ample.
const TOMBSTONE_TTL: Duration = Duration::from_secs(60);
/// At most this many deletions are remembered; a mass deletion drops the
/// oldest first.
const TOMBSTONES_MAX: usize = 50_000;

/// Recently deleted keys and the resourceVersion of their deletion.
struct Tombstones<K> {
    by_key: HashMap<K, (Option<u64>, Instant)>,
    /// Burial order, for expiry; may hold entries already unburied.
    order: VecDeque<(Instant, K)>,
    ttl: Duration,
    max: usize,
}

impl<K> Default for Tombstones<K> {
    fn default() -> Self {
        Tombstones {
            by_key: HashMap::new(),
            order: VecDeque::new(),
            ttl: TOMBSTONE_TTL,
            max: TOMBSTONES_MAX,
        }
    }
}

impl<K: Hash + Eq + Clone> Tombstones<K> {
    /// `key` was deleted at `rv`.
    fn bury(&mut self, key: K, rv: Option<u64>) {
        self.expire();
        let now = Instant::now();
        self.by_key.insert(key.clone(), (rv, now));
        self.order.push_back((now, key));
    }

    /// `key` exists again (the watch says so).
    fn unbury(&mut self, key: &K) {
        if !self.by_key.is_empty() {
            self.by_key.remove(key);
        }
    }

    /// Would writing `key` at `rv` through bring a deleted object back? Yes
    /// unless `rv` is known to be newer than the deletion (recreated).
    fn buried(&mut self, key: &K, rv: Option<u64>) -> bool {
        self.expire();
        match self.by_key.get(key) {
            None => false,
            Some((deleted, _)) => !matches!((rv, deleted), (Some(w), Some(d)) if w > *d),
        }
    }

    fn expire(&mut self) {
        let now = Instant::now();
        while let Some((at, _)) = self.order.front() {
            if now.duration_since(*at) < self.ttl && self.order.len() <= self.max {
                break;
            }
            let (at, key) = self.order.pop_front().expect("front exists");
            if self.by_key.get(&key).is_some_and(|(_, t)| *t == at) {
                self.by_key.remove(&key);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_key.len()
    }
}

#[derive(Default)]
pub struct KcpCache {
    inner: RwLock<Inner>,
    /// What every object here is deflated against.
    dict: DictSlot,
}

#[derive(Default)]
struct Inner {
    /// Ordered by workspace first (the key's order), so the objects of one
    /// workspace are a range: a plugin's `list` in its own workspace does
    /// not scan every workspace's objects.
    objects: BTreeMap<ObjectKey, Entry>,
    /// Logical cluster → the URL that serves it.
    routes: HashMap<String, Arc<str>>,
    /// URLs whose initial list has completed.
    synced: HashSet<Arc<str>>,
    /// Objects of a re-list in progress, by URL.
    relisting: HashMap<Arc<str>, Vec<(ObjectKey, Packed)>>,
    tombstones: Tombstones<ObjectKey>,
}

struct Entry {
    obj: Packed,
    url: Arc<str>,
}

/// The key of a kcp object seen through a wildcard virtual workspace (which
/// names the workspace in the `kcp.io/cluster` annotation).
pub fn key_of(obj: &DynamicObject) -> Option<ObjectKey> {
    Some(ObjectKey::new(KeyParts {
        cluster: obj
            .metadata
            .annotations
            .as_ref()?
            .get(CLUSTER_ANNOTATION)?
            .clone(),
        namespace: obj.metadata.namespace.clone(),
        name: obj.metadata.name.clone()?,
    }))
}

impl KcpCache {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// A watch event added or changed `obj` (served by `url`).
    pub fn apply(&self, url: &Arc<str>, obj: DynamicObject) -> Option<ObjectKey> {
        let key = key_of(&obj)?;
        let rv = resource_version(&obj);
        let packed = Packed::pack(obj, &self.dict);
        let mut inner = self.write();
        inner.routes.insert(key.cluster.clone(), url.clone());
        if let Some(e) = inner.objects.get(&key)
            && *e.url == **url
        {
            // The echo of the agent's own write (written through already):
            // the reconcile that wrote it has handled it.
            if rv.is_some() && e.obj.rv == rv {
                return None;
            }
            if e.obj.newer_than(rv) {
                return Some(key);
            }
        }
        match packed {
            Some(obj) => {
                inner.tombstones.unbury(&key);
                inner.objects.insert(
                    key.clone(),
                    Entry {
                        obj,
                        url: url.clone(),
                    },
                );
            }
            None => {
                inner.objects.remove(&key);
            }
        }
        Some(key)
    }

    /// The agent itself changed the object: remember the API's answer.
    pub fn write_through(&self, obj: DynamicObject) {
        let Some(key) = key_of(&obj) else { return };
        let rv = resource_version(&obj);
        let Some(packed) = Packed::pack(obj, &self.dict) else {
            return;
        };
        let mut inner = self.write();
        let Some(url) = inner.routes.get(&key.cluster).cloned() else {
            return;
        };
        let stale = match inner.objects.get(&key) {
            Some(e) => e.obj.newer_than(rv),
            None => inner.tombstones.buried(&key, rv),
        };
        if !stale {
            inner.objects.insert(key, Entry { obj: packed, url });
        }
    }

    /// A watch event deleted `obj`.
    pub fn delete(&self, url: &Arc<str>, obj: &DynamicObject) -> Option<ObjectKey> {
        let key = key_of(obj)?;
        let mut inner = self.write();
        match inner.objects.get(&key) {
            Some(e) if *e.url != **url => {}
            _ => {
                inner.objects.remove(&key);
                inner.tombstones.bury(key.clone(), resource_version(obj));
            }
        }
        Some(key)
    }

    /// A (re-)list from `url` begins.
    pub fn list_started(&self, url: &Arc<str>) {
        self.write().relisting.insert(url.clone(), Vec::new());
    }

    /// One object of the (re-)list from `url`.
    pub fn listed(&self, url: &Arc<str>, obj: DynamicObject) {
        let Some(key) = key_of(&obj) else { return };
        let Some(packed) = Packed::pack(obj, &self.dict) else {
            return;
        };
        if let Some(buf) = self.write().relisting.get_mut(url) {
            buf.push((key, packed));
        }
    }

    /// The (re-)list from `url` is complete: it replaces everything the
    /// cache held from `url`. Returns every key that was or is now present,
    /// so deletions missed while the watch was down are reconciled too.
    pub fn list_done(&self, url: &Arc<str>) -> Vec<ObjectKey> {
        let mut inner = self.write();
        let listed = inner.relisting.remove(url).unwrap_or_default();
        let mut keys: Vec<ObjectKey> = inner
            .objects
            .iter()
            .filter(|(_, e)| *e.url == **url)
            .map(|(k, _)| k.clone())
            .collect();
        inner.objects.retain(|_, e| *e.url != **url);
        for (key, obj) in listed {
            inner.tombstones.unbury(&key);
            inner.routes.insert(key.cluster.clone(), url.clone());
            inner.objects.insert(
                key.clone(),
                Entry {
                    obj,
                    url: url.clone(),
                },
            );
            keys.push(key);
        }
        inner.synced.insert(url.clone());
        keys.sort();
        keys.dedup();
        keys
    }

    /// `url` left the endpoint slice (its shard has no consumers any more):
    /// drop what it served. Returns the keys that were dropped.
    pub fn forget_url(&self, url: &str) -> Vec<ObjectKey> {
        let mut inner = self.write();
        let keys = inner
            .objects
            .iter()
            .filter(|(_, e)| &*e.url == url)
            .map(|(k, _)| k.clone())
            .collect();
        inner.objects.retain(|_, e| &*e.url != url);
        inner.routes.retain(|_, u| &**u != url);
        inner.synced.retain(|u| &**u != url);
        inner.relisting.retain(|u, _| &**u != url);
        keys
    }

    /// Remember that `cluster` is served by `url` (from related-object
    /// watches, which see workspaces that may hold no primary yet).
    pub fn route_seen(&self, cluster: &str, url: &Arc<str>) {
        let mut inner = self.write();
        if inner.routes.get(cluster).is_none_or(|u| u != url) {
            inner.routes.insert(cluster.to_string(), url.clone());
        }
    }

    pub fn get(&self, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        self.read()
            .objects
            .get(key)
            .and_then(|e| e.obj.unpack(&self.dict))
    }

    /// The resourceVersion of the cached `key`, without decoding it.
    pub fn resource_version(&self, key: &ObjectKey) -> Option<u64> {
        self.read().objects.get(key).and_then(|e| e.obj.rv)
    }

    /// Every cached object's key.
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.read().objects.keys().cloned().collect()
    }

    /// The URL serving `cluster`, if any watch has seen it.
    pub fn route(&self, cluster: &str) -> Option<Arc<str>> {
        self.read().routes.get(cluster).cloned()
    }

    /// Every cached object of `cluster` whose key passes `by_key` (checked
    /// first, so only those are decoded) and that `keep` accepts.
    pub fn list(
        &self,
        cluster: &str,
        by_key: impl Fn(&ObjectKey) -> bool,
        keep: impl Fn(&DynamicObject) -> bool,
    ) -> Vec<Arc<DynamicObject>> {
        // The smallest key of the workspace: no namespace sorts first.
        let first = ObjectKey::new(KeyParts {
            cluster: cluster.to_string(),
            namespace: None,
            name: String::new(),
        });
        self.read()
            .objects
            .range(first..)
            .take_while(|(k, _)| k.cluster == cluster)
            .filter(|(k, _)| by_key(k))
            .filter_map(|(_, e)| e.obj.unpack(&self.dict).filter(|o| keep(o)))
            .collect()
    }

    /// The agent deleted the object: forget it now rather than when the
    /// watch says so, so the next reconcile does not delete it again.
    pub fn forget(&self, key: &ObjectKey) {
        self.write().objects.remove(key);
    }

    /// Whether the initial list of every URL in `urls` has completed.
    pub fn synced(&self, urls: &[String]) -> bool {
        let inner = self.read();
        urls.iter().all(|u| inner.synced.iter().any(|s| **s == **u))
    }

    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A single-cluster informer store (the service side): the objects of one
/// watch, found by what the syncer looks them up by (a copy by the kcp
/// object it belongs to, a state Secret by name). Several objects may share
/// a lookup key (two copies claiming the same kcp object): callers see all
/// of them and decide.
pub struct Store<V> {
    inner: RwLock<StoreInner>,
    key_of: fn(&V) -> Option<String>,
    /// What every object here is deflated against.
    dict: DictSlot,
}

struct StoreInner {
    /// By the object's own namespace/name.
    objects: HashMap<Arc<str>, StoreEntry>,
    /// Lookup key → namespace/name of the objects with that key. Both
    /// strings are shared with `objects`: at 100 000 objects, a copy of
    /// each would cost more than the index's tables.
    index: HashMap<Arc<str>, Refs>,
    relist: Option<Vec<(Arc<str>, StoreEntry)>>,
    /// The keys [`Store::feed`] names for the objects of the re-list in
    /// progress, handed out when it completes (not before: until then the
    /// store still holds the old objects, and a reconcile would read them).
    relist_keys: Vec<ObjectKey>,
    synced: bool,
    tombstones: Tombstones<Arc<str>>,
}

struct StoreEntry {
    obj: Packed,
    /// Its lookup key, kept to unindex it without decoding it.
    key: Option<Arc<str>>,
}

/// The objects with one lookup key: almost always one, which needs no
/// allocation of its own.
enum Refs {
    One(Arc<str>),
    Many(Vec<Arc<str>>),
}

impl Refs {
    fn as_slice(&self) -> &[Arc<str>] {
        match self {
            Refs::One(r) => std::slice::from_ref(r),
            Refs::Many(v) => v,
        }
    }

    fn push(&mut self, oref: Arc<str>) {
        match self {
            Refs::One(r) => {
                let first = r.clone();
                *self = Refs::Many(vec![first, oref]);
            }
            Refs::Many(v) => v.push(oref),
        }
    }

    /// Take `oref` out; false when none is left.
    fn remove(&mut self, oref: &str) -> bool {
        match self {
            Refs::One(r) => **r != *oref,
            Refs::Many(v) => {
                v.retain(|o| **o != *oref);
                let left = !v.is_empty();
                if let [one] = v.as_slice() {
                    let one = one.clone();
                    *self = Refs::One(one);
                }
                left
            }
        }
    }
}

fn object_ref<V: kube::Resource>(v: &V) -> String {
    let m = v.meta();
    format!(
        "{}/{}",
        m.namespace.as_deref().unwrap_or_default(),
        m.name.as_deref().unwrap_or_default()
    )
}

impl StoreInner {
    fn remove(&mut self, oref: &str) {
        if let Some(old) = self.objects.remove(oref)
            && let Some(k) = old.key
            && let Some(refs) = self.index.get_mut(&k)
            && !refs.remove(oref)
        {
            self.index.remove(&k);
        }
    }

    /// Insert unless the stored object is newer (a write-through that the
    /// watch has not caught up with yet).
    fn insert(&mut self, oref: Arc<str>, entry: StoreEntry) {
        if let Some(old) = self.objects.get(&oref)
            && old.obj.newer_than(entry.obj.rv)
        {
            return;
        }
        self.remove(&oref);
        if let Some(k) = &entry.key {
            // `remove` above took out any earlier entry of `oref`.
            match self.index.entry(k.clone()) {
                std::collections::hash_map::Entry::Occupied(mut e) => {
                    e.get_mut().push(oref.clone())
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(Refs::One(oref.clone()));
                }
            }
        }
        self.objects.insert(oref, entry);
    }
}

impl<V: Cacheable> Store<V> {
    pub fn new(key_of: fn(&V) -> Option<String>) -> Arc<Self> {
        Arc::new(Store {
            inner: RwLock::new(StoreInner {
                objects: HashMap::new(),
                index: HashMap::new(),
                relist: None,
                relist_keys: Vec::new(),
                synced: false,
                tombstones: Tombstones::default(),
            }),
            key_of,
            dict: DictSlot::default(),
        })
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, StoreInner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, StoreInner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// `v` as kept, with its `namespace/name`; `Err` with just that when
    /// it cannot be packed.
    fn entry(&self, v: V) -> Result<(Arc<str>, StoreEntry), Arc<str>> {
        let oref: Arc<str> = object_ref(&v).into();
        let key = (self.key_of)(&v).map(Arc::from);
        match Packed::pack(v, &self.dict) {
            Some(obj) => Ok((oref, StoreEntry { obj, key })),
            None => Err(oref),
        }
    }

    /// A watch event: `v` exists (as of its resourceVersion).
    pub fn apply(&self, v: V) {
        match self.entry(v) {
            Ok((oref, e)) => {
                let mut inner = self.write();
                inner.tombstones.unbury(&oref);
                inner.insert(oref, e);
            }
            Err(oref) => self.write().remove(&oref),
        }
    }

    /// The agent itself wrote `v`: remember the API's answer, unless the
    /// watch has since seen a newer version or the object's deletion.
    pub fn write_through(&self, v: V) {
        let Ok((oref, e)) = self.entry(v) else {
            return;
        };
        let mut inner = self.write();
        if !inner.objects.contains_key(&oref) && inner.tombstones.buried(&oref, e.obj.rv) {
            return;
        }
        inner.insert(oref, e);
    }

    /// A watch event deleted `v`.
    pub fn delete(&self, v: &V) {
        let oref: Arc<str> = object_ref(v).into();
        let mut inner = self.write();
        inner.remove(&oref);
        inner.tombstones.bury(oref, resource_version(v));
    }

    pub fn list_started(&self) {
        self.write().relist = Some(Vec::new());
    }

    pub fn listed(&self, v: V) {
        let Ok(e) = self.entry(v) else { return };
        if let Some(buf) = self.write().relist.as_mut() {
            buf.push(e);
        }
    }

    /// The (re-)list is complete and replaces the store's content.
    pub fn list_done(&self) {
        let mut inner = self.write();
        if let Some(listed) = inner.relist.take() {
            inner.objects.clear();
            inner.index.clear();
            for (oref, e) in listed {
                inner.tombstones.unbury(&oref);
                inner.insert(oref, e);
            }
        }
        inner.synced = true;
    }

    /// Apply a watch event to the store. Returns the keys to reconcile:
    /// what `keys_of` says of the object the event carried (`true` when it
    /// came with a (re-)list), none for list boundaries.
    pub fn feed(
        &self,
        change: Change<V>,
        keys_of: impl Fn(&V, bool) -> Vec<ObjectKey>,
    ) -> Vec<ObjectKey> {
        match change {
            Change::ListStart => {
                self.list_started();
                self.write().relist_keys.clear();
                vec![]
            }
            // A listed object's keys go out once the list is complete and
            // in the store: handed out at once, a worker could reconcile one
            // against the old content (its copy without the status just
            // set, say) and nothing would wake it again (the lost status
            // of outages::service_apiserver_killed_mid_sync_and_restarted).
            Change::Listed(v) => {
                let keys = keys_of(&v, true);
                self.listed(v);
                self.write().relist_keys.extend(keys);
                vec![]
            }
            Change::ListDone => {
                self.list_done();
                let mut keys = std::mem::take(&mut self.write().relist_keys);
                keys.sort();
                keys.dedup();
                keys
            }
            Change::Apply(v) => {
                // The echo of the agent's own write (written through
                // already) needs no reconcile: its writer handled it.
                let rv = v.meta().resource_version.clone();
                let echo = rv.is_some()
                    && self
                        .read()
                        .objects
                        .get(object_ref(&v).as_str())
                        .is_some_and(|e| e.obj.rv == rv.as_deref().and_then(|r| r.parse().ok()));
                let keys = if echo { vec![] } else { keys_of(&v, false) };
                self.apply(v);
                keys
            }
            Change::Delete(v) => {
                self.delete(&v);
                keys_of(&v, false)
            }
        }
    }

    /// Whether `v` (by namespace/name) is cached.
    pub fn contains(&self, v: &V) -> bool {
        self.read().objects.contains_key(object_ref(v).as_str())
    }

    /// The one object with lookup key `key`; `None` if there is none or
    /// more than one (see [`Store::get_all`]).
    pub fn get(&self, key: &str) -> Option<Arc<V>> {
        let all = self.get_all(key);
        match all.len() {
            1 => all.into_iter().next(),
            _ => None,
        }
    }

    /// The resourceVersion of the one object with lookup key `key`,
    /// without decoding it; `None` if there is none or more than one.
    pub fn resource_version(&self, key: &str) -> Option<u64> {
        let inner = self.read();
        match inner.index.get(key).map(Refs::as_slice) {
            Some([oref]) => inner.objects.get(oref)?.obj.rv,
            _ => None,
        }
    }

    /// Every object with lookup key `key`.
    pub fn get_all(&self, key: &str) -> Vec<Arc<V>> {
        let inner = self.read();
        inner
            .index
            .get(key)
            .map(Refs::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|oref| inner.objects.get(oref)?.obj.unpack(&self.dict))
            .collect()
    }

    /// The object `namespace/name` (an empty namespace for cluster-scoped
    /// objects), whatever its lookup key.
    pub fn get_ref(&self, namespace: &str, name: &str) -> Option<Arc<V>> {
        self.read()
            .objects
            .get(format!("{namespace}/{name}").as_str())?
            .obj
            .unpack(&self.dict)
    }

    /// Every object that `keep` accepts (each one decoded: for rare scans).
    pub fn list(&self, keep: impl Fn(&V) -> bool) -> Vec<Arc<V>> {
        self.read()
            .objects
            .values()
            .filter_map(|e| e.obj.unpack(&self.dict).filter(|v| keep(v)))
            .collect()
    }

    /// The agent deleted `namespace/name`: forget it now rather than when
    /// the watch says so.
    pub fn forget(&self, namespace: &str, name: &str) {
        self.write().remove(&format!("{namespace}/{name}"));
    }

    /// Whether the first list has completed (before that, callers read
    /// from the API instead).
    pub fn synced(&self) -> bool {
        self.read().synced
    }

    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_key_display_matches_upstream() {
        let k = ObjectKey::new(KeyParts {
            cluster: "abc".into(),
            namespace: Some("ns".into()),
            name: "n".into(),
        });
        assert_eq!(k.to_string(), "abc|ns/n");
        let k = ObjectKey::new(KeyParts {
            cluster: "abc".into(),
            namespace: None,
            name: "n".into(),
        });
        assert_eq!(k.to_string(), "abc|n");
    }
    use serde_json::json;

    fn obj(cluster: &str, name: &str, rv: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": rv,
                         "annotations": {"kcp.io/cluster": cluster}}
        }))
        .unwrap()
    }

    fn key(cluster: &str, name: &str) -> ObjectKey {
        crate::testing::object_key(cluster, Some("default"), name)
    }

    /// A list in one workspace sees that workspace's objects only, also
    /// beside a workspace whose name it is a prefix of, and cluster-scoped
    /// ones (no namespace) as well.
    #[test]
    fn a_list_stays_in_its_workspace() {
        let c = KcpCache::new();
        let url: Arc<str> = "https://shard".into();
        for (cluster, name) in [("a", "x"), ("a", "y"), ("ab", "z"), ("b", "w"), ("", "v")] {
            c.apply(&url, obj(cluster, name, "1"));
        }
        let mut ns_less = obj("a", "cluster", "1");
        ns_less.metadata.namespace = None;
        c.apply(&url, ns_less);
        let names = |cluster: &str| {
            let mut v: Vec<String> = c
                .list(cluster, |_| true, |_| true)
                .iter()
                .filter_map(|o| o.metadata.name.clone())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names("a"), ["cluster", "x", "y"]);
        assert_eq!(names("ab"), ["z"]);
        assert_eq!(names("b"), ["w"]);
        assert!(names("c").is_empty());
        let in_default = c.list("a", |k| k.namespace.as_deref() == Some("default"), |_| true);
        assert_eq!(in_default.len(), 2);
    }

    /// Removing the last finalizer deletes the object: when the watch's
    /// DELETE arrives before the API's answer, writing the answer through
    /// must not put the object back (it would stay cached for good).
    #[test]
    fn a_late_write_through_does_not_bring_a_deleted_object_back() {
        let c = KcpCache::new();
        let url: Arc<str> = "https://shard".into();
        c.apply(&url, obj("a", "x", "7"));
        c.delete(&url, &obj("a", "x", "9"));
        c.write_through(obj("a", "x", "8"));
        assert!(c.get(&key("a", "x")).is_none(), "resurrected");
        assert!(c.keys().is_empty());
        // Recreated under the same name: a newer write is the new object.
        c.write_through(obj("a", "x", "12"));
        assert_eq!(c.resource_version(&key("a", "x")), Some(12));
        // A watch event of a recreated object clears the memory too.
        c.delete(&url, &obj("a", "y", "20"));
        c.apply(&url, obj("a", "y", "21"));
        c.delete(&url, &obj("a", "y", "22"));
        c.write_through(obj("a", "y", "21"));
        assert!(c.get(&key("a", "y")).is_none());

        let s = Store::new(|o: &DynamicObject| o.metadata.name.clone());
        s.apply(obj("a", "x", "7"));
        s.delete(&obj("a", "x", "9"));
        s.write_through(obj("a", "x", "8"));
        assert!(s.get("x").is_none(), "resurrected");
        assert!(s.is_empty());
        s.write_through(obj("a", "x", "12"));
        assert_eq!(s.resource_version("x"), Some(12));
        // An older answer never replaces a newer watch event.
        s.apply(obj("a", "z", "30"));
        s.write_through(obj("a", "z", "29"));
        assert_eq!(s.resource_version("z"), Some(30));
    }

    #[test]
    fn deletions_are_remembered_for_a_bounded_time_and_count() {
        let mut t = Tombstones {
            ttl: Duration::from_secs(3600),
            max: 100,
            ..Tombstones::default()
        };
        for i in 0..10_000u64 {
            t.bury(i, Some(i));
        }
        assert!(t.len() <= 101 && t.order.len() <= 101, "{}", t.len());
        assert!(t.buried(&9_999, Some(9_999)));
        assert!(
            !t.buried(&9_999, Some(10_000)),
            "a newer object is not buried"
        );
        assert!(!t.buried(&0, Some(0)), "the oldest were forgotten");
        let mut t = Tombstones {
            ttl: Duration::ZERO,
            ..Tombstones::default()
        };
        t.bury("a", None);
        assert!(!t.buried(&"a", None), "expired");
        assert_eq!((t.len(), t.order.len()), (0, 0));
    }

    #[test]
    fn resource_versions_are_read_without_decoding() {
        let c = KcpCache::new();
        let url: Arc<str> = "https://shard".into();
        c.apply(&url, obj("a", "x", "7"));
        assert_eq!(c.resource_version(&key("a", "x")), Some(7));
        assert_eq!(c.resource_version(&key("a", "y")), None);
        let s = Store::new(|o: &DynamicObject| o.metadata.name.clone());
        s.apply(obj("a", "x", "9"));
        assert_eq!(s.resource_version("x"), Some(9));
        assert_eq!(s.resource_version("nope"), None);
    }

    #[test]
    fn same_name_in_two_workspaces_are_two_entries_with_their_own_routes() {
        let c = KcpCache::new();
        let (u1, u2): (Arc<str>, Arc<str>) = ("https://shard-0".into(), "https://shard-1".into());
        c.apply(&u1, obj("a", "w", "1"));
        c.apply(&u2, obj("b", "w", "1"));
        assert_eq!(c.len(), 2);
        assert_eq!(c.route("a").as_deref(), Some("https://shard-0"));
        assert_eq!(c.route("b").as_deref(), Some("https://shard-1"));
        assert!(c.route("c").is_none());
    }

    #[test]
    fn an_older_event_does_not_replace_a_written_through_object() {
        let c = KcpCache::new();
        let u: Arc<str> = "https://shard-0".into();
        c.apply(&u, obj("a", "w", "5"));
        c.write_through(obj("a", "w", "7"));
        c.apply(&u, obj("a", "w", "6"));
        assert_eq!(
            c.get(&key("a", "w"))
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("7")
        );
        c.apply(&u, obj("a", "w", "8"));
        assert_eq!(
            c.get(&key("a", "w"))
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("8")
        );
    }

    #[test]
    fn a_relist_replaces_only_its_own_urls_objects_and_reports_vanished_keys() {
        let c = KcpCache::new();
        let (u1, u2): (Arc<str>, Arc<str>) = ("https://shard-0".into(), "https://shard-1".into());
        c.apply(&u1, obj("a", "gone", "1"));
        c.apply(&u1, obj("a", "kept", "1"));
        c.apply(&u2, obj("b", "other", "1"));
        assert!(!c.synced(&["https://shard-0".into()]));
        c.list_started(&u1);
        c.listed(&u1, obj("a", "kept", "2"));
        c.listed(&u1, obj("a", "new", "2"));
        let keys = c.list_done(&u1);
        assert_eq!(
            keys,
            vec![key("a", "gone"), key("a", "kept"), key("a", "new")]
        );
        assert!(c.get(&key("a", "gone")).is_none());
        assert!(c.get(&key("b", "other")).is_some());
        assert!(c.synced(&["https://shard-0".into()]));
        assert!(!c.synced(&["https://shard-0".into(), "https://shard-1".into()]));
    }

    #[test]
    fn forgetting_a_url_drops_its_objects_and_routes() {
        let c = KcpCache::new();
        let (u1, u2): (Arc<str>, Arc<str>) = ("https://shard-0".into(), "https://shard-1".into());
        c.apply(&u1, obj("a", "w", "1"));
        c.apply(&u2, obj("b", "w", "1"));
        assert_eq!(c.forget_url("https://shard-1"), vec![key("b", "w")]);
        assert!(c.route("b").is_none());
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn store_relists_and_keeps_newer_written_through_objects() {
        let s: Arc<Store<DynamicObject>> = Store::new(|o| o.metadata.name.clone());
        s.apply(obj("a", "x", "1"));
        assert!(!s.synced());
        s.list_started();
        s.listed(obj("a", "y", "3"));
        s.list_done();
        assert!(s.synced());
        assert!(s.get("x").is_none(), "not in the re-list: gone");
        s.write_through(obj("a", "y", "5"));
        s.apply(obj("a", "y", "4"));
        assert_eq!(
            s.get("y").unwrap().metadata.resource_version.as_deref(),
            Some("5")
        );
        s.delete(&obj("a", "y", "6"));
        assert!(s.is_empty());
    }

    #[test]
    fn two_objects_with_one_lookup_key_are_both_seen() {
        // Keyed by cluster annotation: two copies claiming workspace "a".
        let s: Arc<Store<DynamicObject>> = Store::new(|o| {
            o.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CLUSTER_ANNOTATION).cloned())
        });
        s.apply(obj("a", "one", "1"));
        assert!(s.get("a").is_some());
        s.apply(obj("a", "two", "1"));
        assert_eq!(s.get_all("a").len(), 2);
        assert!(s.get("a").is_none(), "ambiguous: no single answer");
        s.delete(&obj("a", "one", "2"));
        assert_eq!(s.get("a").unwrap().metadata.name.as_deref(), Some("two"));
    }

    #[test]
    fn lookups_by_workspace_and_by_name_and_forgetting() {
        let c = KcpCache::new();
        let u: Arc<str> = "https://shard-0".into();
        c.apply(&u, obj("a", "x", "1"));
        c.apply(&u, obj("a", "y", "1"));
        c.apply(&u, obj("b", "x", "1"));
        let mut names: Vec<String> = c
            .list("a", |_| true, |_| true)
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        names.sort();
        assert_eq!(names, ["x", "y"], "only workspace a's objects");
        assert_eq!(c.list("a", |k| k.name == "y", |_| true).len(), 1);
        c.forget(&key("a", "x"));
        assert!(c.get(&key("a", "x")).is_none());
        assert!(c.get(&key("b", "x")).is_some(), "same name elsewhere kept");

        let s: Arc<Store<DynamicObject>> = Store::new(|o| o.metadata.namespace.clone());
        s.apply(obj("a", "x", "1"));
        assert!(s.get_ref("default", "x").is_some());
        assert!(s.get_ref("other", "x").is_none());
        assert_eq!(s.get_all("default").len(), 1, "indexed by namespace");
        assert_eq!(s.list(|o| o.metadata.name.as_deref() == Some("x")).len(), 1);
        s.forget("default", "x");
        assert!(s.get_ref("default", "x").is_none());
        assert!(s.get_all("default").is_empty());
    }

    #[test]
    fn feeding_watch_events_updates_the_store_and_names_the_keys() {
        let s: Arc<Store<DynamicObject>> = Store::new(|o| o.metadata.name.clone());
        let keys = |o: &DynamicObject, listed: bool| {
            vec![key(
                if listed { "listed" } else { "live" },
                o.metadata.name.as_deref().unwrap(),
            )]
        };
        assert!(s.feed(Change::ListStart, keys).is_empty());
        // A listed object's key waits for the list to be complete: until
        // then the store holds what it held before.
        assert!(s.feed(Change::Listed(obj("a", "x", "1")), keys).is_empty());
        assert!(s.get("x").is_none(), "not in the store before ListDone");
        assert_eq!(s.feed(Change::ListDone, keys), vec![key("listed", "x")]);
        assert!(s.synced() && s.get("x").is_some());
        assert_eq!(
            s.feed(Change::Apply(obj("a", "y", "2")), keys),
            vec![key("live", "y")]
        );
        assert_eq!(
            s.feed(Change::Delete(obj("a", "x", "3")), keys),
            vec![key("live", "x")]
        );
        assert!(s.get("x").is_none() && s.get("y").is_some());
    }

    #[test]
    fn managed_fields_are_not_cached() {
        let c = KcpCache::new();
        let u: Arc<str> = "https://shard-0".into();
        let mut o = obj("a", "w", "1");
        o.metadata.managed_fields = Some(vec![Default::default()]);
        c.apply(&u, o);
        assert!(
            c.get(&key("a", "w"))
                .unwrap()
                .metadata
                .managed_fields
                .is_none()
        );
    }

    #[test]
    fn a_delete_event_removes_the_object() {
        let c = KcpCache::new();
        let u: Arc<str> = "https://shard-0".into();
        let o = obj("a", "w", "1");
        c.apply(&u, o.clone());
        assert_eq!(c.delete(&u, &o), Some(key("a", "w")));
        assert!(c.get(&key("a", "w")).is_none());
        // The workspace is still served by that shard.
        assert!(c.route("a").is_some());
    }
}
