//! Convergence and isolation: a mutation that never settles is held back
//! and reported, and cannot slow down another PublishedResource.

use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(60);

/// A looping PublishedResource (its CEL rule appends to what the copy
/// already has, so every pass wants another write) beside a healthy one
/// whose rule `value * 2.0` yields `6.0` where the API server stores `6`
/// (which used to be seen as a change on every pass).
///
/// - the looping copy is written a bounded number of times, then held back;
///   the PublishedResource's condition and a Warning Event in the
///   consumer's workspace name the path that does not settle; its status
///   still goes up and its deletion still completes;
/// - the healthy PublishedResource syncs, settles (its copy is not written
///   again), and creates and deletes objects promptly meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_mutation_that_never_settles_is_held_back_and_isolated() {
    let mut env = Env::prepare("converge", crate::binary()).await;
    let metrics = free_port();
    // A new object is placed in one reconcile; the periodic check (short
    // here) is what looks at it again and finds the loop.
    env.start_agent(&[
        &format!("--metrics-address=127.0.0.1:{metrics}"),
        "--resync-period=10s",
    ]);
    apply_crds(&env.service_client, NOTE_CRD)
        .await
        .expect("Note CRD");
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-crontabs}
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  mutation:
    spec:
      - cel: {path: spec.cronSpec, expression: "other.spec.cronSpec + '*'"}
"#,
    )
    .await;
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-notes}
spec:
  resource: {kind: Note, apiGroup: example.com, versions: [v1]}
  mutation:
    spec:
      - cel: {path: spec.replicas, expression: "value * 2.0"}
"#,
    )
    .await;
    env.wait_for_schema("publish-crontabs").await;
    env.wait_for_schema("publish-notes").await;
    let (consumer, client) = env.consumer("consumer").await;
    let notes_gvk = gvk("example.com", "v1", "Note");
    let kcp_notes = dynamic_api(&client, &notes_gvk, "notes", Some("default"));
    eventually("Notes served in the consumer workspace", WAIT, || async {
        Ok(kcp_notes.list(&Default::default()).await.ok().map(|_| ()))
    })
    .await;
    let kcp_crontabs = crontabs(&client, "default");
    let local_ns = consumer.cluster.clone();
    let local_crontabs = crontabs(&env.service_client, &local_ns);
    let local_notes = dynamic_api(&env.service_client, &notes_gvk, "notes", Some(&local_ns));

    // The looping object.
    create(&kcp_crontabs, crontab("loop", "img")).await;
    let loop_copy = default_copy_name("default", "loop");
    let reported = eventually(
        "the looping PublishedResource reported Ready=False naming spec.cronSpec",
        WAIT,
        || async {
            let pr = get_opt(&env.published_resources(), "publish-crontabs").await?;
            Ok(pr
                .and_then(|p| ready_false_message(&p))
                .filter(|m| m.contains("spec.cronSpec") && m.contains("does not settle")))
        },
    )
    .await;
    println!("condition: {reported}");
    let copy = local_crontabs.get(&loop_copy).await.unwrap();
    let written = str_at(&copy, "/spec/cronSpec").unwrap().to_string();

    // Held back: over the next 15 s the copy is not written again.
    let before = requests_sent(metrics).await;
    tokio::time::sleep(Duration::from_secs(15)).await;
    let after = requests_sent(metrics).await;
    let copy = local_crontabs.get(&loop_copy).await.unwrap();
    assert_eq!(
        str_at(&copy, "/spec/cronSpec"),
        Some(written.as_str()),
        "the copy was written again while held back"
    );
    let original = crontab("loop", "img")["spec"]["cronSpec"]
        .as_str()
        .unwrap()
        .matches('*')
        .count();
    let stars = written.matches('*').count() - original;
    assert!(
        (1..=4).contains(&stars),
        "the looping copy was written {stars} times (cronSpec {written:?}), expected at most 4"
    );
    let patches = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .filter(|(k, _)| k.contains("server=\"service\"") && k.contains("verb=\"patch\""))
            .map(|(_, v)| *v)
            .sum::<u64>()
    };
    assert_eq!(
        patches(&after),
        patches(&before),
        "no PATCH to the service cluster while the key is held back: {before:?} → {after:?}"
    );

    // A Warning Event on the consumer's object names the path.
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "default");
    eventually("a Warning Event naming spec.cronSpec", WAIT, || async {
        let list = events
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(list.items.into_iter().find(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.involved_object.name.as_deref() == Some("loop")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.contains("spec.cronSpec"))
        }))
    })
    .await;

    // Its status still goes up.
    let mut s = local_crontabs.get(&loop_copy).await.unwrap();
    s.data["status"] = json!({"phase": "Running"});
    local_crontabs
        .replace_status(&loop_copy, &PostParams::default(), &s)
        .await
        .unwrap();
    eventually("the looping object's status in kcp", WAIT, || async {
        Ok(get_opt(&kcp_crontabs, "loop")
            .await?
            .filter(|o| str_at(o, "/status/phase") == Some("Running")))
    })
    .await;

    // Meanwhile the healthy PublishedResource syncs, promptly.
    let started = std::time::Instant::now();
    create(
        &kcp_notes,
        json!({"apiVersion": "example.com/v1", "kind": "Note",
               "metadata": {"name": "n1", "namespace": "default"},
               "spec": {"text": "hello", "replicas": 3}}),
    )
    .await;
    let note_copy = default_copy_name("default", "n1");
    let copy = eventually("the healthy copy", WAIT, || async {
        get_opt(&local_notes, &note_copy).await
    })
    .await;
    println!("healthy copy placed after {:?}", started.elapsed());
    assert_eq!(copy.data.pointer("/spec/replicas"), Some(&json!(6)));
    // Settled: `6.0` against the stored `6` is no change, so the copy is
    // not written again.
    let rv = copy.metadata.resource_version.clone();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        local_notes
            .get(&note_copy)
            .await
            .unwrap()
            .metadata
            .resource_version,
        rv,
        "the healthy copy was written again after it settled"
    );
    let healthy_pr = env
        .published_resources()
        .get("publish-notes")
        .await
        .unwrap();
    assert_eq!(ready_false_message(&healthy_pr), None);

    // Deletions complete on both.
    let started = std::time::Instant::now();
    kcp_notes
        .delete("n1", &DeleteParams::default())
        .await
        .unwrap();
    kcp_crontabs
        .delete("loop", &DeleteParams::default())
        .await
        .unwrap();
    eventually("both kcp objects gone", WAIT, || async {
        let note = get_opt(&kcp_notes, "n1").await?;
        let ct = get_opt(&kcp_crontabs, "loop").await?;
        Ok((note.is_none() && ct.is_none()).then_some(()))
    })
    .await;
    println!("deletions completed after {:?}", started.elapsed());
    assert!(get_opt(&local_notes, &note_copy).await.unwrap().is_none());
    assert!(
        get_opt(&local_crontabs, &loop_copy)
            .await
            .unwrap()
            .is_none()
    );
    // With nothing failing any more, the looping PublishedResource is Ready again.
    eventually("publish-crontabs Ready again", WAIT, || async {
        let pr = get_opt(&env.published_resources(), "publish-crontabs").await?;
        Ok(pr.filter(|p| ready_false_message(p).is_none()).map(|_| ()))
    })
    .await;
}

fn ready_false_message(pr: &DynamicObject) -> Option<String> {
    pr.data
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == "Ready" && c["status"] == "False")
        .and_then(|c| c["message"].as_str().map(str::to_string))
}
