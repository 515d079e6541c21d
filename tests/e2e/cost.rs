//! What one new object costs: plugin calls and API writes, read from the
//! agent's own counters. `SYNCWEAVE_E2E_BIN=<older syncweave>` measures an
//! older build the same way (flags used here exist in every version).

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::PostParams;
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);
const OBJECTS: usize = 20;

fn counters(body: &str, prefix: &str) -> BTreeMap<String, u64> {
    body.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|l| l.split_once("} "))
        .map(|(labels, n)| (labels.to_string(), n.trim().parse().unwrap_or(0)))
        .collect()
}

fn sum(m: &BTreeMap<String, u64>, keep: impl Fn(&str) -> bool) -> u64 {
    m.iter().filter(|(k, _)| keep(k)).map(|(_, v)| *v).sum()
}

/// A new object is placed in one reconcile: the naming and mutation plugins
/// run once for it, and the agent writes the finalizer (kcp), the copy and
/// its state (service cluster), plus its Events.
#[tokio::test(flavor = "multi_thread")]
async fn plugin_calls_and_writes_per_new_object() {
    let binary = std::env::var("SYNCWEAVE_E2E_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| crate::binary().to_path_buf());
    let mut env = Env::prepare("cost", &binary).await;
    let metrics = free_port();
    env.start_agent(&[&format!("--metrics-address=127.0.0.1:{metrics}")]);
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-crontabs}
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  mutation:
    spec:
      - regex: {path: spec.image, pattern: "^(.*)$", replacement: "registry.local/$1"}
"#,
    )
    .await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_api = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);
    // One object first, so the sync is warm (caches listed, plugins loaded).
    let create = |name: String| {
        let api = kcp_api.clone();
        async move {
            api.create(
                &PostParams::default(),
                &serde_json::from_value(crontab(&name, "img")).unwrap(),
            )
            .await
            .unwrap();
        }
    };
    create("warm".into()).await;
    eventually("the warm-up copy", WAIT, || async {
        get_opt(&copies, &default_copy_name("default", "warm")).await
    })
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (_, before) = http_get(metrics, "/metrics").await.unwrap();
    for i in 0..OBJECTS {
        create(format!("o-{i}")).await;
    }
    for i in 0..OBJECTS {
        eventually("the copy", WAIT, || async {
            get_opt(&copies, &default_copy_name("default", &format!("o-{i}"))).await
        })
        .await;
    }
    // Until the counters stop moving (Events are posted in the background).
    let mut last = String::new();
    let mut after = String::new();
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (_, m) = http_get(metrics, "/metrics").await.unwrap();
        let now = format!(
            "{:?}{:?}",
            counters(&m, "syncweave_api_requests_total{"),
            counters(&m, "syncweave_plugin_calls_total{")
        );
        if now == last {
            after = m;
            break;
        }
        last = now;
        after = m;
    }
    let delta = |prefix: &str| {
        let (b, a) = (counters(&before, prefix), counters(&after, prefix));
        a.into_iter()
            .map(|(k, v)| {
                let d = v - b.get(&k).copied().unwrap_or(0);
                (k, d)
            })
            .filter(|(_, d)| *d > 0)
            .collect::<BTreeMap<_, _>>()
    };
    let calls = delta("syncweave_plugin_calls_total{");
    let requests = delta("syncweave_api_requests_total{");
    let reconciles = delta("syncweave_reconciles_total{");
    let per = |n: u64| n as f64 / OBJECTS as f64;
    let plugin_calls = sum(&calls, |_| true);
    let writes = sum(&requests, |k| {
        ["create", "update", "patch", "delete"]
            .iter()
            .any(|v| k.contains(&format!("verb=\"{v}\"")))
    });
    println!(
        "per new object ({OBJECTS} objects, {}): {:.2} plugin calls {calls:?}; {:.2} writes incl. Events; \
         {:.2} reconciles; requests {requests:?}",
        binary.display(),
        per(plugin_calls),
        per(writes),
        per(sum(&reconciles, |_| true)),
    );
    // Whether a copy exists is answered by the copies cache: no read of
    // the service cluster per new object (a LIST by label each was one,
    // which the API server answers by scanning every object of the kind).
    // The namespace of the copies was read once, before the warm-up.
    let service_reads = sum(&requests, |k| {
        k.contains("server=\"service\"") && k.contains("verb=\"get\"")
    });
    assert!(
        service_reads < OBJECTS as u64 / 2,
        "{service_reads} reads of the service cluster for {OBJECTS} new objects: {requests:?}"
    );
    // Events go through a budget of their own, not the one objects sync with.
    let events = sum(&requests, |k| k.contains("server=\"kcp-events\""));
    assert!(
        events >= OBJECTS as u64,
        "{events} Events posted for {OBJECTS} new objects: {requests:?}"
    );
    // Naming and mutation run once each per new object.
    assert!(
        per(plugin_calls) <= 2.0,
        "{:.2} plugin calls per new object: {calls:?}",
        per(plugin_calls)
    );
}
