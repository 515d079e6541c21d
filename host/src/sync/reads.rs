//! Plugin reads (contract 0.2) in the agent: what `spec.reads` allows,
//! answered from the agent's caches, and which objects read what.
//!
//! - [`ReadsConfig`]: `spec.reads` as kinds per side, and the allow-list
//!   the runtime names in its refusals;
//! - [`ObjectReads`]: the [`ReadHost`] of one object's pass: it answers
//!   from the caches (never one API request per call), refuses what the
//!   allow-list does not grant with a message naming it, and remembers
//!   what the calls read;
//! - [`ReadDeps`]: which objects' last pass read what, so that a change to
//!   a read object re-syncs exactly those (level-triggered, like
//!   Crossplane's required resources).
//!
//! The caches are the related-object caches ([`super::caches`]): the kinds
//! `spec.reads` allows are watched beside the related kinds
//! ([`super::watches::kinds`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use kube::api::DynamicObject;
use syncweave_runtime::{AllowList, Allowed, ReadError, ReadHost, Resource, Scope, Side};

use super::caches::{Gvr, logical_clusters_gvr, namespaces_gvr};
use crate::apis::PublishedResource;
use crate::controller::store::{KcpCache, KeyParts, ObjectKey, Store};
use syncweave_runtime::rules::Selector;

/// `spec.reads` of one PublishedResource, resolved to kinds.
#[derive(Debug, Clone, Default)]
pub struct ReadsConfig {
    /// `consumerNamespace: true`: the object's own Namespace in kcp.
    pub consumer_namespace: bool,
    /// `logicalCluster: true`: the LogicalCluster of the object's workspace.
    pub logical_cluster: bool,
    /// `related: true`: the kcp-side kinds of the related resources, in the
    /// object's workspace and namespace.
    pub related: BTreeSet<Gvr>,
    /// `service`: service-cluster kinds, each in the namespaces named.
    pub service: BTreeMap<Gvr, Vec<String>>,
    /// The same as an allow-list, for refusals (`PublishedResource/<name>`).
    pub allow: AllowList,
}

fn resource(gvr: &Gvr) -> Resource {
    Resource::new(gvr.0.clone(), gvr.1.clone(), gvr.2.clone())
}

fn gvr(r: &Resource) -> Gvr {
    (r.group.clone(), r.version.clone(), r.resource.clone())
}

impl ReadsConfig {
    /// `spec.reads` of `pr` (allowing nothing when it is unset).
    pub fn of(pr: &PublishedResource) -> ReadsConfig {
        let default = crate::apis::ReadsSpec::default();
        let spec = pr.spec.reads.as_ref().unwrap_or(&default);
        let mut c = ReadsConfig {
            consumer_namespace: spec.consumer_namespace == Some(true),
            logical_cluster: spec.logical_cluster == Some(true),
            ..ReadsConfig::default()
        };
        if spec.related == Some(true) {
            c.related = pr
                .spec
                .related
                .iter()
                .flatten()
                .map(|r| r.kcp_gvr())
                .collect();
        }
        for s in spec.service.iter().flatten() {
            c.service
                .entry((
                    s.group.clone().unwrap_or_default(),
                    s.version.clone(),
                    s.resource.clone(),
                ))
                .or_default()
                .extend(s.namespaces.iter().cloned());
        }
        let mut allowed = Vec::new();
        if c.consumer_namespace {
            allowed.push(Allowed {
                side: Side::Kcp,
                resource: resource(&namespaces_gvr()),
                scope: Scope::Cluster,
            });
        }
        if c.logical_cluster {
            allowed.push(Allowed {
                side: Side::Kcp,
                resource: resource(&logical_clusters_gvr()),
                scope: Scope::Cluster,
            });
        }
        for g in &c.related {
            allowed.push(Allowed {
                side: Side::Kcp,
                resource: resource(g),
                scope: Scope::Namespaces(vec!["<the object's namespace>".into()]),
            });
        }
        for (g, ns) in &c.service {
            allowed.push(Allowed {
                side: Side::Service,
                resource: resource(g),
                scope: Scope::Namespaces(ns.clone()),
            });
        }
        c.allow = AllowList::new(
            format!(
                "PublishedResource/{} (spec.reads)",
                pr.metadata.name.as_deref().unwrap_or_default()
            ),
            allowed,
        );
        c
    }

    /// Whether anything is readable.
    pub fn any(&self) -> bool {
        !self.allow.allowed.is_empty()
    }

    /// The kinds to watch on one side for reads.
    pub fn kinds(&self, service_side: bool) -> BTreeSet<Gvr> {
        if service_side {
            self.service.keys().cloned().collect()
        } else {
            let mut out = self.related.clone();
            if self.consumer_namespace {
                out.insert(namespaces_gvr());
            }
            if self.logical_cluster {
                out.insert(logical_clusters_gvr());
            }
            out
        }
    }
}

/// The name of the one LogicalCluster in every workspace.
const LOGICAL_CLUSTER_NAME: &str = "cluster";

/// What one read looked at, for [`ReadDeps`]: a kind on a side, in a
/// workspace (kcp) and namespace, one object by name or (`None`) every
/// object there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReadTarget {
    pub service: bool,
    pub gvr: Gvr,
    /// The workspace (kcp side), empty on the service side.
    pub cluster: String,
    pub namespace: Option<String>,
    /// `None`: a list (any object there matters).
    pub name: Option<String>,
}

/// The caches a pass's reads are answered from, taken when the pass
/// begins.
enum Source {
    Kcp { cache: Arc<KcpCache>, url: Arc<str> },
    Service(Arc<Store<DynamicObject>>),
}

/// The [`ReadHost`] of one object's pass.
pub struct ObjectReads {
    config: Arc<ReadsConfig>,
    /// The object's workspace and namespace.
    cluster: String,
    namespace: Option<String>,
    sources: BTreeMap<(bool, Gvr), Source>,
    /// Kinds whose discovery failed, with why (not served).
    not_served: BTreeMap<(bool, Gvr), String>,
    /// What the calls of this pass read.
    read: Mutex<BTreeSet<ReadTarget>>,
}

impl ObjectReads {
    pub fn new(
        config: Arc<ReadsConfig>,
        key: &ObjectKey,
        caches: &super::caches::RelatedCaches,
        route: Option<Arc<str>>,
    ) -> ObjectReads {
        let mut sources = BTreeMap::new();
        // A PublishedResource without reads (most) refuses every read in
        // `allowed`, before a source is looked at: take none of them.
        let not_served = if config.any() {
            for g in config.kinds(false) {
                if let (Some(cache), Some(url)) = (caches.kcp(&g), route.clone()) {
                    sources.insert((false, g), Source::Kcp { cache, url });
                }
            }
            for g in config.kinds(true) {
                if let Some(store) = caches.service(&g) {
                    sources.insert((true, g), Source::Service(store));
                }
            }
            caches.not_served()
        } else {
            BTreeMap::new()
        };
        ObjectReads {
            not_served,
            config,
            cluster: key.cluster.clone(),
            namespace: key.namespace.clone(),
            sources,
            read: Mutex::default(),
        }
    }

    /// What the calls of this pass read.
    pub fn targets(&self) -> BTreeSet<ReadTarget> {
        self.read.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Check `what` against the allow-list; the namespace it is in for the
    /// target.
    fn allowed(
        &self,
        side: Side,
        g: &Gvr,
        namespace: Option<&str>,
        name: Option<&str>,
        what: &str,
    ) -> Result<(), ReadError> {
        let refuse = || Err(self.config.allow.refusal(what));
        let ok = match side {
            Side::Kcp if *g == namespaces_gvr() && self.config.consumer_namespace => {
                // Only the object's own Namespace, by name.
                namespace.is_none()
                    && name.is_some()
                    && name == self.namespace.as_deref()
                    && self.namespace.is_some()
            }
            Side::Kcp if *g == logical_clusters_gvr() && self.config.logical_cluster => {
                // Only the workspace's own LogicalCluster, by its one name.
                namespace.is_none() && name == Some(LOGICAL_CLUSTER_NAME)
            }
            Side::Kcp => {
                self.config.related.contains(g)
                    && namespace.is_some()
                    && namespace == self.namespace.as_deref()
            }
            Side::Service => self
                .config
                .service
                .get(g)
                .is_some_and(|ns| namespace.is_some_and(|n| ns.iter().any(|x| x == n))),
        };
        if ok { Ok(()) } else { refuse() }
    }

    fn source(&self, service: bool, g: &Gvr, what: &str) -> Result<&Source, ReadError> {
        if let Some(why) = self.not_served.get(&(service, g.clone())) {
            return Err(ReadError::NotServed(format!("{what}: {why}")));
        }
        let s = self.sources.get(&(service, g.clone())).ok_or_else(|| {
            ReadError::Unavailable(format!(
                "{what}: the agent has not started caching these objects yet; retried with the \
                 object"
            ))
        })?;
        let synced = match s {
            Source::Kcp { cache, url } => cache.synced(&[url.to_string()]),
            Source::Service(store) => store.synced(),
        };
        if synced {
            Ok(s)
        } else {
            Err(ReadError::Unavailable(format!(
                "{what}: the agent's cache of these objects has not listed yet; retried with the \
                 object"
            )))
        }
    }

    /// Record a read of this pass (kcp reads are in the object's
    /// workspace).
    fn remember(&self, service: bool, gvr: Gvr, namespace: Option<&str>, name: Option<&str>) {
        let target = ReadTarget {
            service,
            gvr,
            cluster: if service {
                String::new()
            } else {
                self.cluster.clone()
            },
            namespace: namespace.map(str::to_string),
            name: name.map(str::to_string),
        };
        self.read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(target);
    }

    fn count<T>(&self, side: Side, r: &Resource, result: &Result<T, ReadError>) {
        let outcome = match result {
            Ok(_) => "ok",
            Err(ReadError::NotAllowed(_)) => "not_allowed",
            Err(ReadError::NotServed(_)) => "not_served",
            Err(ReadError::Unavailable(_)) => "unavailable",
            Err(ReadError::Invalid(_)) => "invalid",
        };
        let side = match side {
            Side::Kcp => "kcp",
            Side::Service => "service",
        };
        crate::ops::metrics::METRICS
            .plugin_reads
            .get_or_create(&crate::ops::metrics::ReadLabels {
                side,
                resource: r.resource.clone(),
                result: outcome,
            })
            .inc();
    }

    fn get_inner(
        &self,
        side: Side,
        r: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        let g = gvr(r);
        let what = match namespace {
            Some(ns) => format!("get {side} {r} {ns}/{name}"),
            None => format!("get {side} {r} {name}"),
        };
        self.allowed(side, &g, namespace, Some(name), &what)?;
        let service = side == Side::Service;
        let source = self.source(service, &g, &what)?;
        self.remember(service, g, namespace, Some(name));
        let obj = match source {
            Source::Kcp { cache, .. } => cache.get(&ObjectKey::new(KeyParts {
                cluster: self.cluster.clone(),
                namespace: namespace.map(str::to_string),
                name: name.to_string(),
            })),
            Source::Service(store) => store.get_ref(namespace.unwrap_or_default(), name),
        };
        obj.map(|o| to_json(&o)).transpose()
    }

    fn list_inner(
        &self,
        side: Side,
        r: &Resource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, ReadError> {
        let g = gvr(r);
        let what = match namespace {
            Some(ns) => format!("list {side} {r} in {ns}"),
            None => format!("list {side} {r}"),
        };
        let selector = Selector::parse(label_selector.unwrap_or_default())
            .map_err(|e| ReadError::Invalid(format!("{what}: label selector: {e}")))?;
        self.allowed(side, &g, namespace, None, &what)?;
        let service = side == Side::Service;
        let source = self.source(service, &g, &what)?;
        self.remember(service, g, namespace, None);
        let labels_match = |o: &DynamicObject| {
            let labels: std::collections::HashMap<String, String> = o
                .metadata
                .labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            selector.matches(&labels)
        };
        let found = match source {
            Source::Kcp { cache, .. } => cache.list(
                &self.cluster,
                |k| k.namespace.as_deref() == namespace,
                labels_match,
            ),
            Source::Service(store) => {
                store.list(|o| o.metadata.namespace.as_deref() == namespace && labels_match(o))
            }
        };
        found.iter().map(|o| to_json(o)).collect()
    }
}

fn to_json(o: &DynamicObject) -> Result<String, ReadError> {
    serde_json::to_string(o)
        .map_err(|e| ReadError::Unavailable(format!("cannot encode a cached object: {e}")))
}

impl ReadHost for ObjectReads {
    fn get(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        let r = self.get_inner(side, resource, namespace, name);
        self.count(side, resource, &r);
        r
    }

    fn list(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, ReadError> {
        let r = self.list_inner(side, resource, namespace, label_selector);
        self.count(side, resource, &r);
        r
    }
}

/// Which objects' last pass read what: written after every pass (what it
/// read replaces what it read before), looked up when a cached object
/// changes. Bounded by the objects the agent syncs: an object's entry goes
/// with the object ([`ReadDeps::forget`]).
#[derive(Default)]
pub struct ReadDeps {
    inner: Mutex<Deps>,
    /// Counts changes of objects plugins may read: a pass during which it
    /// moved may have read something older than what is cached now (and
    /// recorded its reads too late to be woken), so it is not memoised as
    /// in sync.
    epoch: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct Deps {
    by_object: BTreeMap<ObjectKey, BTreeSet<ReadTarget>>,
    by_target: BTreeMap<ReadTarget, BTreeSet<ObjectKey>>,
}

impl ReadDeps {
    /// `key`'s pass read `targets` (and nothing else).
    pub fn record(&self, key: &ObjectKey, targets: BTreeSet<ReadTarget>) {
        let mut d = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let before = d.by_object.remove(key).unwrap_or_default();
        if before == targets {
            if !targets.is_empty() {
                d.by_object.insert(key.clone(), targets);
            }
            return;
        }
        for t in &before {
            if let Some(keys) = d.by_target.get_mut(t) {
                keys.remove(key);
                if keys.is_empty() {
                    d.by_target.remove(t);
                }
            }
        }
        for t in &targets {
            d.by_target
                .entry(t.clone())
                .or_default()
                .insert(key.clone());
        }
        if !targets.is_empty() {
            d.by_object.insert(key.clone(), targets);
        }
    }

    /// An object of a kind plugins may read changed.
    pub fn bump(&self) {
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Changes so far (see [`ReadDeps::bump`]).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `key` is gone.
    pub fn forget(&self, key: &ObjectKey) {
        self.record(key, BTreeSet::new());
    }

    /// The objects whose last pass read `obj` (a changed object of kind
    /// `gvr` on one side; `cluster` is its workspace on the kcp side).
    pub fn readers(
        &self,
        service: bool,
        gvr: &Gvr,
        cluster: &str,
        obj: &DynamicObject,
    ) -> Vec<ObjectKey> {
        let d = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if d.by_target.is_empty() {
            return Vec::new();
        }
        let cluster = if service { "" } else { cluster };
        let namespace = obj.metadata.namespace.clone().filter(|n| !n.is_empty());
        let one = ReadTarget {
            service,
            gvr: gvr.clone(),
            cluster: cluster.to_string(),
            namespace: namespace.clone(),
            name: obj.metadata.name.clone(),
        };
        let all = ReadTarget {
            name: None,
            ..one.clone()
        };
        let mut out: BTreeSet<ObjectKey> = BTreeSet::new();
        for t in [&one, &all] {
            if let Some(keys) = d.by_target.get(t) {
                out.extend(keys.iter().cloned());
            }
        }
        out.into_iter().collect()
    }

    /// Objects with recorded reads (for tests and metrics).
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_object
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(cluster: &str, ns: &str, name: &str) -> ObjectKey {
        ObjectKey::new(KeyParts {
            cluster: cluster.into(),
            namespace: Some(ns.into()),
            name: name.into(),
        })
    }

    fn obj(v: serde_json::Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    fn ns_target(cluster: &str, name: &str) -> ReadTarget {
        ReadTarget {
            service: false,
            gvr: namespaces_gvr(),
            cluster: cluster.into(),
            namespace: None,
            name: Some(name.into()),
        }
    }

    fn config(yaml: &str) -> Arc<ReadsConfig> {
        let pr: PublishedResource = serde_yaml_ng::from_str(&format!(
            "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {{name: vms}}\n\
             spec:\n  resource: {{apiGroup: g, kind: K}}\n{yaml}"
        ))
        .unwrap();
        Arc::new(ReadsConfig::of(&pr))
    }

    fn configmaps() -> Resource {
        Resource::core("v1", "configmaps")
    }

    /// Service ConfigMaps `cfg/a` (label app=db) and `other/b`, listed.
    fn caches_with_configmaps() -> super::super::caches::RelatedCaches {
        let caches = super::super::caches::RelatedCaches::default();
        let store = caches.service_or_new(&gvr(&configmaps()));
        store.list_started();
        for (ns, name) in [("cfg", "a"), ("other", "b")] {
            store.listed(obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns, "labels": {"app": "db"}}})));
        }
        store.list_done();
        caches
    }

    #[test]
    fn service_reads_are_answered_in_the_named_namespaces_only() {
        let cfg = config(
            "  reads:\n    service: [{version: v1, resource: configmaps, namespaces: [cfg]}]\n",
        );
        let caches = caches_with_configmaps();
        let reads = ObjectReads::new(cfg, &key("c1", "ns", "vm"), &caches, None);
        let got = reads
            .get(Side::Service, &configmaps(), Some("cfg"), "a")
            .unwrap()
            .unwrap();
        assert!(got.contains("\"name\":\"a\""), "{got}");
        assert_eq!(
            reads
                .list(Side::Service, &configmaps(), Some("cfg"), Some("app=db"))
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            reads.get(Side::Service, &configmaps(), Some("cfg"), "zz"),
            Ok(None)
        );
        // Another namespace: refused, naming the allow-list.
        let err = reads
            .get(Side::Service, &configmaps(), Some("other"), "b")
            .unwrap_err();
        let ReadError::NotAllowed(m) = &err else {
            panic!("{err:?}")
        };
        assert!(
            m.contains("outside the read allow-list of PublishedResource/vms (spec.reads)")
                && m.contains("configmaps (v1) in namespaces cfg"),
            "{m}"
        );
        // What was read (refusals are not reads).
        assert_eq!(reads.targets().len(), 3, "{:?}", reads.targets());
    }

    #[test]
    fn nothing_allowed_refuses_every_read_and_names_spec_reads() {
        let caches = caches_with_configmaps();
        let reads = ObjectReads::new(config(""), &key("c1", "ns", "vm"), &caches, None);
        let err = reads
            .list(Side::Service, &configmaps(), Some("cfg"), None)
            .unwrap_err();
        let ReadError::NotAllowed(m) = &err else {
            panic!("{err:?}")
        };
        assert!(m.contains("which allows nothing"), "{m}");
        assert!(reads.targets().is_empty());
    }

    #[test]
    fn a_kind_the_server_does_not_serve_and_a_cache_not_listed_yet_say_so() {
        let cfg = config(
            "  reads:\n    service: [{group: x.example.com, version: v1, resource: widgets, namespaces: [cfg]}]\n",
        );
        let widgets = Resource::new("x.example.com", "v1", "widgets");
        let caches = super::super::caches::RelatedCaches::default();
        // Discovery has not answered yet, then the cache has not listed.
        let reads = ObjectReads::new(cfg.clone(), &key("c1", "ns", "vm"), &caches, None);
        assert!(matches!(
            reads.get(Side::Service, &widgets, Some("cfg"), "w"),
            Err(ReadError::Unavailable(_))
        ));
        caches.service_or_new(&gvr(&widgets));
        let reads = ObjectReads::new(cfg.clone(), &key("c1", "ns", "vm"), &caches, None);
        let err = reads
            .get(Side::Service, &widgets, Some("cfg"), "w")
            .unwrap_err();
        assert!(
            matches!(&err, ReadError::Unavailable(m) if m.contains("has not listed yet")),
            "{err:?}"
        );
        // The server does not serve the kind.
        caches.set_not_served(
            true,
            &gvr(&widgets),
            Some("the API server does not serve widgets in x.example.com/v1".into()),
        );
        let reads = ObjectReads::new(cfg, &key("c1", "ns", "vm"), &caches, None);
        let err = reads
            .get(Side::Service, &widgets, Some("cfg"), "w")
            .unwrap_err();
        assert!(
            matches!(&err, ReadError::NotServed(m) if m.contains("does not serve widgets")),
            "{err:?}"
        );
    }

    #[test]
    fn the_consumer_namespace_is_its_own_only() {
        let cfg = config("  reads: {consumerNamespace: true}\n");
        let caches = super::super::caches::RelatedCaches::default();
        let reads = ObjectReads::new(cfg, &key("c1", "shop", "vm"), &caches, None);
        let ns = Resource::core("v1", "namespaces");
        // Another Namespace, or a list: refused before any cache is asked.
        for r in [
            reads.get(Side::Kcp, &ns, None, "other").map(|_| ()),
            reads.list(Side::Kcp, &ns, None, None).map(|_| ()),
        ] {
            assert!(matches!(r, Err(ReadError::NotAllowed(_))), "{r:?}");
        }
        // Its own: allowed (unavailable here: no shard serves the workspace yet).
        assert!(matches!(
            reads.get(Side::Kcp, &ns, None, "shop"),
            Err(ReadError::Unavailable(_))
        ));
    }

    #[test]
    fn the_logical_cluster_is_its_workspaces_own_answered_from_the_cache_and_wakes_its_reader() {
        let cfg = config("  reads: {logicalCluster: true}\n");
        assert!(cfg.kinds(false).contains(&logical_clusters_gvr()));
        let caches = super::super::caches::RelatedCaches::default();
        let url: Arc<str> = "https://shard/vw".into();
        let cache = caches.kcp_or_new(&logical_clusters_gvr());
        cache.list_started(&url);
        for (cluster, path) in [("c1", "root:team-a"), ("c2", "root:team-b")] {
            cache.listed(
                &url,
                obj(
                    json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
                    "metadata": {"name": "cluster",
                        "annotations": {"kcp.io/cluster": cluster, "kcp.io/path": path}}}),
                ),
            );
        }
        cache.list_done(&url);
        let k = key("c1", "shop", "vm");
        let reads = ObjectReads::new(cfg, &k, &caches, Some(url));
        let lc = Resource::new("core.kcp.io", "v1alpha1", "logicalclusters");
        let got = reads.get(Side::Kcp, &lc, None, "cluster").unwrap().unwrap();
        let got: serde_json::Value = serde_json::from_str(&got).unwrap();
        assert_eq!(got["metadata"]["annotations"]["kcp.io/path"], "root:team-a");
        // Another name, a namespace or a list: refused, naming spec.reads.
        for r in [
            reads.get(Side::Kcp, &lc, None, "other").map(|_| ()),
            reads
                .get(Side::Kcp, &lc, Some("shop"), "cluster")
                .map(|_| ()),
            reads.list(Side::Kcp, &lc, None, None).map(|_| ()),
        ] {
            match r {
                Err(ReadError::NotAllowed(m)) => assert!(m.contains("spec.reads"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        // The read is recorded, so a change of that LogicalCluster (and
        // of no other workspace's) re-syncs the object.
        let deps = ReadDeps::default();
        deps.record(&k, reads.targets());
        let changed = |cluster: &str| {
            obj(
                json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
                "metadata": {"name": "cluster", "annotations": {"kcp.io/cluster": cluster}}}),
            )
        };
        assert_eq!(
            deps.readers(false, &logical_clusters_gvr(), "c1", &changed("c1")),
            vec![k]
        );
        assert!(
            deps.readers(false, &logical_clusters_gvr(), "c2", &changed("c2"))
                .is_empty()
        );
    }

    #[test]
    fn a_changed_object_wakes_exactly_its_readers() {
        let deps = ReadDeps::default();
        deps.record(&key("c1", "a", "x"), [ns_target("c1", "a")].into());
        deps.record(&key("c1", "b", "y"), [ns_target("c1", "b")].into());
        deps.record(&key("c2", "a", "z"), [ns_target("c2", "a")].into());
        let ns_a = obj(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}));
        assert_eq!(
            deps.readers(false, &namespaces_gvr(), "c1", &ns_a),
            vec![key("c1", "a", "x")]
        );
        // Another workspace's Namespace of the same name wakes its own reader.
        assert_eq!(
            deps.readers(false, &namespaces_gvr(), "c2", &ns_a),
            vec![key("c2", "a", "z")]
        );
    }

    #[test]
    fn a_pass_replaces_what_the_object_read_and_forget_empties_it() {
        let deps = ReadDeps::default();
        let k = key("c1", "a", "x");
        deps.record(&k, [ns_target("c1", "a")].into());
        deps.record(&k, [ns_target("c1", "b")].into());
        let ns_a = obj(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}));
        assert!(
            deps.readers(false, &namespaces_gvr(), "c1", &ns_a)
                .is_empty()
        );
        deps.forget(&k);
        assert!(deps.is_empty());
        assert!(deps.inner.lock().unwrap().by_target.is_empty());
    }

    #[test]
    fn a_list_is_woken_by_any_object_in_its_namespace() {
        let deps = ReadDeps::default();
        let g: Gvr = (String::new(), "v1".into(), "configmaps".into());
        let k = key("c1", "a", "x");
        deps.record(
            &k,
            [ReadTarget {
                service: true,
                gvr: g.clone(),
                cluster: String::new(),
                namespace: Some("cfg".into()),
                name: None,
            }]
            .into(),
        );
        let cm = |ns: &str| {
            obj(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "any", "namespace": ns}}),
            )
        };
        assert_eq!(deps.readers(true, &g, "ignored", &cm("cfg")), vec![k]);
        assert!(deps.readers(true, &g, "", &cm("other")).is_empty());
    }
}
