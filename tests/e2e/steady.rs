//! A quiet steady state, as the Helm chart runs the agent: leader election
//! on, `/readyz` asked every few seconds, the chart's RBAC.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::PostParams;
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

fn reconciles(body: &str) -> u64 {
    body.lines()
        .filter(|l| l.starts_with("syncweave_reconciles_total{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum()
}

/// Requests by (server, verb) that are neither watches nor the leader
/// Lease's renewals.
fn non_watch(m: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    m.iter()
        .filter(|(k, _)| !k.contains("server=\"lease\""))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// Watch requests sent so far (each one a watch opened or re-opened).
async fn watches_sent(metrics: u16) -> u64 {
    let (_, body) = http_get(metrics, "/metrics").await.expect("/metrics");
    body.lines()
        .filter_map(|l| l.strip_prefix("syncweave_api_requests_total{"))
        .filter_map(|l| l.split_once("} "))
        .filter(|(labels, _)| labels.contains("verb=\"watch\""))
        .filter_map(|(_, n)| n.trim().parse::<u64>().ok())
        .sum()
}

/// Wait (at most a minute) until the agent's request counter, watches and
/// the Lease aside, has not moved for 10 s: the first pass after a change,
/// Events and status writes are over.
async fn settle(metrics: u16) {
    let mut last = non_watch(&requests_sent(metrics).await);
    let mut quiet_for = 0;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = non_watch(&requests_sent(metrics).await);
        if now == last {
            quiet_for += 2;
            if quiet_for >= 10 {
                break;
            }
        } else {
            quiet_for = 0;
            last = now;
        }
    }
}

/// Once objects are in sync, a 60 s window in which the periodic check runs
/// (every 20 s here) and `/readyz` is asked every 5 s sends no request but
/// watches: readiness comes from how the servers answered the agent's own
/// requests, the periodic check reads caches, the publisher skips a pass
/// whose inputs did not change. Lease renewals (a GET and a PUT per retry
/// period, inherent to leader election) are counted apart and reported.
#[tokio::test(flavor = "multi_thread")]
async fn steady_state_sends_nothing_but_watches_with_probes_on() {
    let mut env = Env::prepare("steady", crate::binary()).await;
    let (metrics, health) = (free_port(), free_port());
    env.start_agent(&[
        "--enable-leader-election",
        &format!("--metrics-address=127.0.0.1:{metrics}"),
        &format!("--health-address=127.0.0.1:{health}"),
        "--resync-period=20s",
    ]);
    env.publish().await;
    // The kubelet's readiness probe, every 5 s for the whole test.
    let probe = tokio::spawn(async move {
        loop {
            let _ = http_get(health, "/readyz").await;
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    });
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_api = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);
    for i in 0..3 {
        kcp_api
            .create(
                &PostParams::default(),
                &serde_json::from_value(crontab(&format!("steady-{i}"), "img")).unwrap(),
            )
            .await
            .unwrap();
    }
    for i in 0..3 {
        eventually("the copy", WAIT, || async {
            get_opt(
                &copies,
                &default_copy_name("default", &format!("steady-{i}")),
            )
            .await
        })
        .await;
    }
    let ready = eventually("/readyz 200, every check ok", WAIT, || async {
        let (code, body) = http_get(health, "/readyz").await?;
        Ok((code == 200 && body.contains("[+]sync ok")).then_some(body))
    })
    .await;
    assert!(ready.contains("[+]kcp ok"), "{ready}");
    assert!(ready.contains("[+]service-cluster ok"), "{ready}");

    settle(metrics).await;
    let (_, m) = http_get(metrics, "/metrics").await.unwrap();
    let (before, reconciles_before) = (requests_sent(metrics).await, reconciles(&m));
    let watches_before = watches_sent(metrics).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    let (_, m) = http_get(metrics, "/metrics").await.unwrap();
    let (after, reconciles_after) = (requests_sent(metrics).await, reconciles(&m));
    let watches = watches_sent(metrics).await - watches_before;
    let (ready_code, ready_body) = http_get(health, "/readyz").await.unwrap();
    probe.abort();

    // The positive signal: the periodic check ran on every object.
    assert!(
        reconciles_after >= reconciles_before + 6,
        "the periodic check did not run in the window ({reconciles_before} → {reconciles_after})"
    );
    assert_eq!(ready_code, 200, "{ready_body}");
    let lease = |m: &BTreeMap<String, u64>| {
        m.iter()
            .filter(|(k, _)| k.contains("server=\"lease\""))
            .map(|(_, v)| *v)
            .sum::<u64>()
    };
    println!(
        "60 s window: {} reconciles, {watches} watch requests, requests other than watches and the Lease: {:?} → {:?}; Lease requests: {}",
        reconciles_after - reconciles_before,
        non_watch(&before),
        non_watch(&after),
        lease(&after) - lease(&before)
    );
    assert_eq!(
        non_watch(&before),
        non_watch(&after),
        "requests other than watches in a quiet minute"
    );
    // Watches re-open when their server-side timeout (~5 minutes) ends;
    // nothing re-opens one every few seconds to learn whether a server
    // still answers (HTTP/2 pings do that, host/src/liveness.rs), which
    // would be 12 watch requests in this minute.
    assert!(
        watches <= 4,
        "{watches} watch requests in a quiet minute: something re-opens watches as a heartbeat"
    );
}

/// Publishing reacts to a CRD change with the PublishedResource that
/// selects it only: with two resources published and settled, a change to
/// one CRD makes the agent read that CRD and its schema once, and nothing
/// of the other resource (its CRD is not read, its schema not fetched).
#[tokio::test(flavor = "multi_thread")]
async fn a_crd_change_reconciles_only_the_resource_that_selects_it() {
    let mut env = Env::prepare("crd-event", crate::binary()).await;
    let metrics = free_port();
    env.start_agent(&[&format!("--metrics-address=127.0.0.1:{metrics}")]);
    apply_crds(&env.service_client, NOTE_CRD)
        .await
        .expect("Note CRD");
    env.publish().await;
    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-notes}\nspec:\n  resource: {apiGroup: example.com, kind: Note, versions: [v1]}\n",
    )
    .await;
    env.wait_for_schema("publish-crontabs").await;
    env.wait_for_schema("publish-notes").await;
    let _ = env.consumer("consumer").await;
    env.wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
    env.wait_for_ready("publish-notes", "True", "Syncing").await;

    settle(metrics).await;
    let before = requests_sent(metrics).await;
    // A change to the CronTab CRD only (an annotation bumps its
    // resourceVersion; its schema stays the same).
    let crds = dynamic_api(
        &env.service_client,
        &gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
        None,
    );
    crds.patch(
        "crontabs.example.com",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(
            serde_json::json!({"metadata": {"annotations": {"e2e.syncweave.dev/touched": "1"}}}),
        ),
    )
    .await
    .unwrap();
    // The positive signal: the agent read the changed CRD (a LIST by name,
    // what the chart's RBAC allows on CRDs; the request counter files LISTs
    // and GETs both under `get`).
    let delta = |after: &BTreeMap<String, u64>, what: &str| {
        after.get(what).copied().unwrap_or(0) - before.get(what).copied().unwrap_or(0)
    };
    eventually("the agent to read the changed CRD", WAIT, || async {
        let now = requests_sent(metrics).await;
        Ok((delta(&now, r#"server="service",verb="get""#) >= 1).then_some(()))
    })
    .await;
    // Let the pass finish, then compare.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = requests_sent(metrics).await;
    println!("requests for one CRD change: {before:?} → {after:?}");
    assert_eq!(
        delta(&after, r#"server="service",verb="get""#),
        1,
        "one CRD read (the changed one), not one per PublishedResource"
    );
    // The changed resource's schema is looked up once (and the APIExport
    // once); the other resource's is not.
    assert!(
        delta(&after, r#"server="kcp",verb="get""#) <= 2,
        "kcp GETs: {before:?} → {after:?}"
    );
}

/// An APIExport that no workspace has bound yet is not polled: the agent
/// publishes, finds no URL in the endpoint slice, and then sends nothing
/// but watches until a workspace binds the export, which the slice's watch
/// tells it at once (the positive signal: the first object is synced
/// promptly after the quiet window).
#[tokio::test(flavor = "multi_thread")]
async fn an_export_nobody_has_bound_is_not_polled() {
    let mut env = Env::prepare("unbound", crate::binary()).await;
    let metrics = free_port();
    env.start_agent(&[&format!("--metrics-address=127.0.0.1:{metrics}")]);
    env.publish().await;
    env.wait_for_schema("publish-crontabs").await;

    settle(metrics).await;
    let before = requests_sent(metrics).await;
    tokio::time::sleep(Duration::from_secs(40)).await;
    let after = requests_sent(metrics).await;
    assert_eq!(
        non_watch(&before),
        non_watch(&after),
        "requests other than watches while nobody has bound the export"
    );

    let (consumer, client) = env.consumer("consumer").await;
    crontabs(&client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("first", "img")).unwrap(),
        )
        .await
        .unwrap();
    let copies = crontabs(&env.service_client, &consumer.cluster);
    eventually("the first copy", Duration::from_secs(30), || async {
        get_opt(&copies, &default_copy_name("default", "first")).await
    })
    .await;
}
