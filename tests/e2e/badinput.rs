//! Bad input is refused with a condition naming the field, and touches
//! nothing else.

use std::time::Duration;

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ListParams, PostParams};
use syncweave::sync::labels::FINALIZER;
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

/// A PublishedResource for a kind kcp serves in every workspace itself
/// (ServiceAccounts), without `projection.group`, would make the agent take
/// hold of the consumers' own objects. It is refused naming
/// `spec.projection.group`; its schema is not exported; no consumer
/// ServiceAccount gets the agent's finalizer; a healthy PublishedResource
/// beside it keeps syncing.
#[tokio::test(flavor = "multi_thread")]
async fn a_kind_kcp_serves_itself_is_refused() {
    let env = Env::start("badinput", crate::binary()).await;
    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-serviceaccounts}\nspec:\n  resource: {apiGroup: \"\", kind: ServiceAccount, versions: [v1]}\n",
    )
    .await;
    env.publish().await;
    let refused = env
        .wait_for_ready("publish-serviceaccounts", "False", "InvalidResource")
        .await;
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(message.contains("spec.projection.group"), "{message}");
    assert!(message.contains("serviceaccounts"), "{message}");

    // The healthy PublishedResource syncs meanwhile.
    let (consumer, client) = env.consumer("consumer").await;
    crontabs(&client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("fine", "img")).unwrap(),
        )
        .await
        .unwrap();
    eventually("the healthy copy", WAIT, || async {
        get_opt(
            &crontabs(&env.service_client, &consumer.cluster),
            &default_copy_name("default", "fine"),
        )
        .await
    })
    .await;
    // Nothing of the consumer's own ServiceAccounts was touched.
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let list = sas.list(&ListParams::default()).await.unwrap();
    assert!(
        !list.items.is_empty(),
        "kcp made the default ServiceAccount"
    );
    for sa in &list.items {
        assert!(
            !sa.metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == FINALIZER),
            "{:?} got the agent's finalizer",
            sa.metadata.name
        );
    }
    // And no schema for serviceaccounts is in the export.
    let export = env.apiexports().await.get(EXPORT).await.unwrap();
    let schemas = export.data["spec"]["latestResourceSchemas"].to_string();
    assert!(!schemas.contains("serviceaccounts"), "{schemas}");
}

/// An object too large for its last-synced state to fit in a Secret
/// (1 MiB) is refused before anything is written: no copy, a Warning Event
/// and the PublishedResource's condition say why and what to do; a small
/// object beside it syncs. Made smaller, it syncs.
#[tokio::test(flavor = "multi_thread")]
async fn an_object_too_large_for_its_state_is_refused_before_any_write() {
    let env = Env::start("oversized", crate::binary()).await;
    env.publish().await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp = crontabs(&client, "default");
    // 1.1 MB in one field: kcp stores it (its limit is higher), a Secret
    // cannot hold its state.
    create(&kcp, crontab("huge", &"x".repeat(1_100_000))).await;
    create(&kcp, crontab("small", "img")).await;

    let failing = env
        .wait_for_ready("publish-crontabs", "False", "ObjectsFailing")
        .await;
    let message = failing["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("huge") && message.contains("at most 1 MiB"),
        "{message}"
    );
    let events = Api::<k8s_openapi::api::core::v1::Event>::namespaced(client.clone(), "default");
    let warning = eventually("a Warning Event on the object", WAIT, || async {
        let list = events
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(list.into_iter().find(|e| {
            e.involved_object.name.as_deref() == Some("huge")
                && e.type_.as_deref() == Some("Warning")
        }))
    })
    .await;
    assert!(
        warning
            .message
            .unwrap_or_default()
            .contains("make the object smaller"),
        "the Event says what to do"
    );

    let copies = crontabs(&env.service_client, &consumer.cluster);
    eventually("the small object's copy", WAIT, || async {
        get_opt(&copies, &default_copy_name("default", "small")).await
    })
    .await;
    let names: Vec<String> = copies
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(
        names,
        [default_copy_name("default", "small")],
        "nothing of the large object was written"
    );

    // Made smaller, it syncs and the resource is Ready again.
    kcp.patch(
        "huge",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"image": "img"}})),
    )
    .await
    .unwrap();
    eventually("the copy once the object is small", WAIT, || async {
        get_opt(&copies, &default_copy_name("default", "huge")).await
    })
    .await;
    env.wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
}

/// Metadata at the API's limits: a 253-character name, 63-character label
/// keys and values, and annotations just under the 256 KiB total sync as
/// they are. Annotations so close to the limit that the agent's own two
/// (which name the kcp object on the copy) push them over are refused by
/// the service cluster; the condition carries its message (the field and
/// the limit), nothing is written, and trimming them lets it sync.
#[tokio::test(flavor = "multi_thread")]
async fn metadata_at_the_limits_syncs_or_is_refused_clearly() {
    let env = Env::start("limits", crate::binary()).await;
    env.publish().await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);

    let long_name = format!("n{}", "a".repeat(251)) + "z";
    assert_eq!(long_name.len(), 253);
    let key63 = format!("example.com/{}", "k".repeat(63));
    let mut at_limits = crontab(&long_name, "img");
    at_limits["metadata"]["labels"] = serde_json::json!({ key63.clone(): "v".repeat(63) });
    // 200 KiB of annotations: well inside the limit with the agent's own.
    at_limits["metadata"]["annotations"] =
        serde_json::json!({"example.com/blob": "b".repeat(200 * 1024)});
    create(&kcp, at_limits).await;
    let copy = eventually("the copy of the object at the limits", WAIT, || async {
        get_opt(&copies, &default_copy_name("default", &long_name)).await
    })
    .await;
    assert_eq!(
        copy.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(&key63))
            .map(String::len),
        Some(63)
    );
    assert_eq!(
        copy.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("example.com/blob"))
            .map(String::len),
        Some(200 * 1024)
    );

    // Annotations 60 bytes under the limit in kcp (which adds its own
    // `kcp.io/cluster`, 30 bytes): over it with the agent's two (87).
    let mut full = crontab("full", "img");
    let value_len = 256 * 1024 - "example.com/blob".len() - 60;
    full["metadata"]["annotations"] =
        serde_json::json!({"example.com/blob": "b".repeat(value_len)});
    create(&kcp, full).await;
    let failing = env
        .wait_for_ready("publish-crontabs", "False", "ObjectsFailing")
        .await;
    let message = failing["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("full") && message.contains("metadata.annotations"),
        "{message}"
    );
    assert!(
        get_opt(&copies, &default_copy_name("default", "full"))
            .await
            .unwrap()
            .is_none(),
        "no copy was created"
    );
    kcp.patch(
        "full",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(
            serde_json::json!({"metadata": {"annotations": {"example.com/blob": "short"}}}),
        ),
    )
    .await
    .unwrap();
    eventually(
        "the copy once the annotations are trimmed",
        WAIT,
        || async { get_opt(&copies, &default_copy_name("default", "full")).await },
    )
    .await;
    env.wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
}

/// PublishedResources that cannot work are refused with a condition naming
/// the field, while a healthy one keeps syncing: one whose kind the service
/// cluster does not serve, one whose naming template does not parse, and
/// one that publishes the same resource as an
/// older one (two syncs of one resource would fight over every object, and
/// the APIExport lists it once). Given its own group, the second publishes
/// and syncs too.
#[tokio::test(flavor = "multi_thread")]
async fn unworkable_published_resources_are_refused_naming_the_field() {
    let env = Env::start("bad-prs", crate::binary()).await;
    env.publish().await;
    let (consumer, client) = env.consumer("consumer").await;
    env.wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-missing}\nspec:\n  resource: {apiGroup: example.com, kind: NoSuchKind, versions: [v1]}\n",
    )
    .await;
    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-crontabs-again}\nspec:\n  resource: {apiGroup: example.com, kind: CronTab, versions: [v1]}\n",
    )
    .await;

    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-bad-template}\nspec:\n  resource: {apiGroup: example.com, kind: CronTab, versions: [v1]}\n  projection: {group: tmpl.example.com}\n  naming: {name: \"{{ .Object.metadata.name\"}\n",
    )
    .await;
    let bad = env
        .wait_for_ready("publish-bad-template", "False", "SyncNotStarted")
        .await;
    let message = bad["message"].as_str().unwrap_or_default();
    assert!(message.contains("spec.naming"), "{bad}");
    assert!(message.contains("unclosed action"), "{bad}");

    let missing = env
        .wait_for_ready("publish-missing", "False", "InvalidResource")
        .await;
    let message = missing["message"].as_str().unwrap_or_default();
    assert!(message.contains("spec.resource"), "{message}");
    assert!(message.contains("NoSuchKind"), "{message}");

    let conflict = env
        .wait_for_ready("publish-crontabs-again", "False", "ResourceConflict")
        .await;
    let message = conflict["message"].as_str().unwrap_or_default();
    assert!(message.contains("spec.projection"), "{message}");
    assert!(message.contains("publish-crontabs"), "{message}");
    assert!(
        message.contains("already published by PublishedResource publish-crontabs, which is older"),
        "{message}"
    );
    assert!(message.contains("crontabs.example.com"), "{message}");

    // The older resource keeps its resource and syncs.
    crontabs(&client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("fine", "img")).unwrap(),
        )
        .await
        .unwrap();
    let copies = crontabs(&env.service_client, &consumer.cluster);
    eventually("the healthy copy", WAIT, || async {
        get_opt(&copies, &default_copy_name("default", "fine")).await
    })
    .await;
    let state = env
        .wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
    assert_eq!(state["status"], "True");

    // Given a group of its own, the second one publishes and syncs.
    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-crontabs-again}\nspec:\n  resource: {apiGroup: example.com, kind: CronTab, versions: [v1]}\n  projection: {group: again.example.com}\n",
    )
    .await;
    env.wait_for_ready("publish-crontabs-again", "True", "Syncing")
        .await;
    let export = env.apiexports().await.get(EXPORT).await.unwrap();
    let schemas = export.data["spec"]["latestResourceSchemas"].to_string();
    assert!(
        schemas.contains("crontabs.example.com") && schemas.contains("crontabs.again.example.com"),
        "{schemas}"
    );
}

/// A new user runs the agent before installing the WasmPlugin CRD: the
/// agent syncs anyway, says once what to apply, and its retries of the
/// failing list back off to the cap instead of running (and logging) every
/// second. Before the fix, kube-runtime's `Init` event before each list
/// attempt counted as progress: ~75 attempts and as many WARN lines in 45 s.
#[tokio::test(flavor = "multi_thread")]
async fn without_the_wasmplugin_crd_the_agent_syncs_and_its_retries_back_off() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::DeleteParams;
    let mut env = Env::prepare("nowasmcrd", crate::binary()).await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.service_client.clone());
    crds.delete("wasmplugins.syncweave.dev", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the WasmPlugin CRD gone", WAIT, || async {
        Ok(crds
            .get_opt("wasmplugins.syncweave.dev")
            .await
            .map_err(|e| e.to_string())?
            .is_none()
            .then_some(()))
    })
    .await;
    let started = std::time::Instant::now();
    env.start_agent(&[]);
    env.publish().await;
    let (consumer, client) = env.consumer("consumer").await;
    crontabs(&client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("synced", "img")).unwrap(),
        )
        .await
        .unwrap();
    eventually("the copy, without the WasmPlugin CRD", WAIT, || async {
        get_opt(
            &crontabs(&env.service_client, &consumer.cluster),
            &default_copy_name("default", "synced"),
        )
        .await
    })
    .await;
    const WINDOW: Duration = Duration::from_secs(45);
    if let Some(rest) = WINDOW.checked_sub(started.elapsed()) {
        tokio::time::sleep(rest).await;
    }
    let elapsed = started.elapsed();
    let log = syncweave_tests::agent::strip_ansi(&env.agent.as_ref().unwrap().log());
    let warned = log
        .lines()
        .filter(|l| l.contains("watching WasmPlugins failed; retrying"))
        .count();
    assert!(
        log.contains("syncweave.dev_wasmplugins.yaml"),
        "the WARN says what to apply"
    );
    let retries: Vec<Duration> = log
        .lines()
        .filter(|l| l.contains("watching WasmPlugins failed"))
        .filter_map(retry_delay)
        .collect();
    // One line, then one a minute (syncweave::controller::watch::REMIND_EVERY).
    let at_most = 1 + (elapsed.as_secs() / 60) as usize;
    assert!(
        (1..=at_most).contains(&warned),
        "{warned} WARN lines in {elapsed:?}; expected at most {at_most}"
    );
    // Backing off 0.8, 1.6, 3.2, 6.4 s, then 10 s (each jittered down to
    // half): about 10 attempts in 45 s, not one every 0.4–0.8 s.
    assert!(
        (3..=14).contains(&retries.len()),
        "{} attempts in {elapsed:?}: {retries:?}",
        retries.len()
    );
    let last = retries.last().copied().unwrap_or_default();
    assert!(
        last >= syncweave::controller::watch::MAX_RETRY / 2,
        "the retries did not reach the cap: {retries:?}"
    );
}

/// The delay in a watch-failure log line's `retry=After(…)` field.
fn retry_delay(line: &str) -> Option<Duration> {
    let d = line.split("retry=After(").nth(1)?.split(')').next()?;
    let (num, unit) = d.split_at(d.find(|c: char| c.is_ascii_alphabetic() || c == 'µ')?);
    let n: f64 = num.parse().ok()?;
    let secs = match unit {
        "s" => n,
        "ms" => n / 1e3,
        "µs" | "us" => n / 1e6,
        "ns" => n / 1e9,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}
