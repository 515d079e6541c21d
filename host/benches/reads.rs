//! What a plugin read costs in the agent, outside the guest: the host side
//! of `reads.get`/`reads.list` (allow-list check, cache lookup, the JSON of
//! the answer) as `sync/reads.rs` answers it from the agent's caches,
//! printed as a table.
//!
//!     cargo bench -p syncweave --bench reads
//!
//! The caches hold what a large provider's agent would: 1 000 workspaces,
//! each with 10 Namespaces, its LogicalCluster and 20 ConfigMaps in one
//! namespace (31 000 cached objects). Rows:
//! - per pass: taking the caches for one object's pass (`ObjectReads::new`,
//!   paid once per reconcile of a PublishedResource with `spec.reads`);
//! - get Namespace / get LogicalCluster: one `get` of the object's own;
//! - list ConfigMaps: a `list` of the 20 in the object's namespace, with and
//!   without a label selector matching half of them.
//!
//! Shared machines are noisy: each row runs five rounds and prints the
//! median of all of them and of the quietest round. The cost of the same
//! answer crossing into a guest is in `cargo bench -p syncweave-runtime
//! --bench plugins` (docs/writing-plugins.md).

use std::sync::Arc;
use std::time::Instant;

use kube::api::DynamicObject;
use serde_json::json;
use syncweave::apis::PublishedResource;
use syncweave::controller::store::{KeyParts, ObjectKey};
use syncweave::sync::caches::{Gvr, RelatedCaches, logical_clusters_gvr, namespaces_gvr};
use syncweave::sync::reads::{ObjectReads, ReadsConfig};
use syncweave_runtime::{ReadHost, Resource, Side};

const WORKSPACES: usize = 1_000;
const NAMESPACES: usize = 10;
const CONFIGMAPS: usize = 20;
const ROUNDS: usize = 5;
const PER_ROUND: usize = 20_000;

fn obj(v: serde_json::Value) -> DynamicObject {
    serde_json::from_value(v).expect("a valid object")
}

fn cluster(w: usize) -> String {
    format!("ws{w:04}")
}

fn configmaps_gvr() -> Gvr {
    (String::new(), "v1".into(), "configmaps".into())
}

/// The caches, listed as the agent's watches would have listed them.
fn caches(url: &Arc<str>) -> RelatedCaches {
    let caches = RelatedCaches::default();
    let fill = |gvr: Gvr, objects: &mut dyn Iterator<Item = DynamicObject>| {
        let cache = caches.kcp_or_new(&gvr);
        cache.list_started(url);
        for o in objects {
            cache.listed(url, o);
        }
        cache.list_done(url);
    };
    fill(
        namespaces_gvr(),
        &mut (0..WORKSPACES).flat_map(|w| {
            (0..NAMESPACES).map(move |n| {
                obj(
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
                    "name": format!("ns{n}"),
                    "labels": {"team": format!("team-{}", w % 17)},
                    "annotations": {"kcp.io/cluster": cluster(w)}}}),
                )
            })
        }),
    );
    fill(
        logical_clusters_gvr(),
        &mut (0..WORKSPACES).map(|w| {
            obj(
                json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
                "metadata": {"name": "cluster", "annotations": {
                    "kcp.io/cluster": cluster(w), "kcp.io/path": format!("root:org:team-{w}")}},
                "status": {"phase": "Ready"}}),
            )
        }),
    );
    fill(
        configmaps_gvr(),
        &mut (0..WORKSPACES).flat_map(|w| {
            (0..CONFIGMAPS).map(move |i| {
                obj(
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                    "name": format!("cm{i}"), "namespace": "ns0",
                    "labels": {"app": if i % 2 == 0 { "db" } else { "web" }},
                    "annotations": {"kcp.io/cluster": cluster(w)}},
                    "data": {"key": "value".repeat(8)}}),
                )
            })
        }),
    );
    caches
}

/// Run `f` PER_ROUND times in each of ROUNDS rounds; (median, quietest
/// round's median) in ns per call.
fn time(mut f: impl FnMut()) -> (f64, f64) {
    let mut all = Vec::with_capacity(ROUNDS * PER_ROUND / 100);
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let mut round = Vec::with_capacity(PER_ROUND / 100);
        // Time batches of 100 calls: single calls are below the clock's
        // resolution on some machines.
        for _ in 0..PER_ROUND / 100 {
            let t = Instant::now();
            for _ in 0..100 {
                f();
            }
            round.push(t.elapsed().as_nanos() as f64 / 100.0);
        }
        round.sort_by(f64::total_cmp);
        best = best.min(round[round.len() / 2]);
        all.extend(round);
    }
    all.sort_by(f64::total_cmp);
    (all[all.len() / 2], best)
}

fn main() {
    let url: Arc<str> = "https://shard-1/services/apiexport/root:provider/export".into();
    let t = Instant::now();
    let caches = caches(&url);
    eprintln!(
        "cached {} objects in {:.1} s",
        WORKSPACES * (NAMESPACES + 1 + CONFIGMAPS),
        t.elapsed().as_secs_f64()
    );
    let pr: PublishedResource = serde_yaml_ng::from_str(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: vms}\n\
         spec:\n  resource: {apiGroup: g, kind: K}\n  related:\n  - {identifier: c, origin: kcp, \
         kind: ConfigMap, object: {reference: {path: spec.c}}}\n  reads: {consumerNamespace: true, \
         logicalCluster: true, related: true}\n",
    )
    .expect("a valid PublishedResource");
    let config = Arc::new(ReadsConfig::of(&pr));
    let key = ObjectKey::new(KeyParts {
        cluster: cluster(WORKSPACES / 2),
        namespace: Some("ns0".into()),
        name: "vm".into(),
    });
    let reads = ObjectReads::new(config.clone(), &key, &caches, Some(url.clone()));
    let ns = Resource::core("v1", "namespaces");
    let lc = Resource::new("core.kcp.io", "v1alpha1", "logicalclusters");
    let cms = Resource::core("v1", "configmaps");
    // Check the answers once, so the rows time what they say.
    assert!(reads.get(Side::Kcp, &ns, None, "ns0").unwrap().is_some());
    assert!(
        reads
            .get(Side::Kcp, &lc, None, "cluster")
            .unwrap()
            .is_some()
    );
    assert_eq!(
        reads
            .list(Side::Kcp, &cms, Some("ns0"), Some("app=db"))
            .unwrap()
            .len(),
        CONFIGMAPS / 2
    );

    println!("| host side of a read (sync/reads.rs) | median | quietest round |");
    println!("|---|---|---|");
    let row = |name: &str, (median, best): (f64, f64)| {
        println!(
            "| {name} | {:.2} µs | {:.2} µs |",
            median / 1000.0,
            best / 1000.0
        );
    };
    row(
        "per pass: take the caches (ObjectReads::new)",
        time(|| {
            std::hint::black_box(ObjectReads::new(
                config.clone(),
                &key,
                &caches,
                Some(url.clone()),
            ));
        }),
    );
    row(
        "get the object's Namespace",
        time(|| {
            std::hint::black_box(reads.get(Side::Kcp, &ns, None, "ns0").unwrap());
        }),
    );
    row(
        "get the workspace's LogicalCluster",
        time(|| {
            std::hint::black_box(reads.get(Side::Kcp, &lc, None, "cluster").unwrap());
        }),
    );
    row(
        &format!("list {CONFIGMAPS} ConfigMaps in the namespace"),
        time(|| {
            std::hint::black_box(reads.list(Side::Kcp, &cms, Some("ns0"), None).unwrap());
        }),
    );
    row(
        &format!("list them with selector app=db ({} match)", CONFIGMAPS / 2),
        time(|| {
            std::hint::black_box(
                reads
                    .list(Side::Kcp, &cms, Some("ns0"), Some("app=db"))
                    .unwrap(),
            );
        }),
    );
    row(
        "a refused read (outside spec.reads)",
        time(|| {
            std::hint::black_box(reads.get(Side::Kcp, &ns, None, "other").unwrap_err());
        }),
    );
}
