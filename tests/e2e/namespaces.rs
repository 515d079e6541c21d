//! `spec.managedNamespaceMetadata`: labels and annotations on the
//! service-cluster namespaces the agent places copies in, static and copied
//! from the consumer's kcp Namespace; drift is set back, keys the agent did
//! not set are left alone, and a namespace the service cluster refuses to
//! label is reported, not silent.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use syncweave_tests::env::*;
use syncweave_tests::*;

/// Drift and consumer changes are picked up by the periodic check of
/// PublishedResources that read unwatched inputs (30 s), so allow two.
const WAIT: Duration = Duration::from_secs(90);

const METADATA: &str = "  managedNamespaceMetadata:
    labels: {provider.example.com/managed: \"yes\"}
    annotations: {provider.example.com/contact: ops-team}
    fromConsumerNamespace:
      labels: [team, billing.example.com/*]
      annotations: [services.k8s.aws/owner-account-id]
";

fn label(ns: &Namespace, key: &str) -> Option<String> {
    ns.metadata.labels.as_ref()?.get(key).cloned()
}

fn annotation(ns: &Namespace, key: &str) -> Option<String> {
    ns.metadata.annotations.as_ref()?.get(key).cloned()
}

/// Wait until the service namespace `name` satisfies `ok`.
async fn wait_namespace(
    api: &Api<Namespace>,
    name: &str,
    what: &str,
    ok: impl Fn(&Namespace) -> bool,
) -> Namespace {
    eventually(what, WAIT, || async {
        let ns = api.get_opt(name).await.map_err(|e| e.to_string())?;
        Ok(ns.filter(|n| ok(n)))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn managed_namespace_metadata_is_kept() {
    let env = Env::start("nsmeta", crate::binary()).await;
    env.publish_yaml(&format!("{PUBLISHED_RESOURCE}{METADATA}"))
        .await;
    // Copying from consumer Namespaces needs the claim on them.
    env.wait_for_export_claim("", "namespaces").await;
    let (consumer, client) = env
        .consumer_accepting("consumer", &[("", "events"), ("", "namespaces")])
        .await;
    apply(
        &client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "tenant",
            "labels": {"team": "blue", "billing.example.com/center": "42", "other": "x"},
            "annotations": {"services.k8s.aws/owner-account-id": "123456789012", "note": "n"},
        }}),
    )
    .await
    .unwrap();
    create_crontab_in(&client, "tenant", "job").await;

    // The copy's namespace (the default naming: the consumer's cluster).
    let namespaces: Api<Namespace> = Api::all(env.service_client.clone());
    let svc = consumer.cluster.clone();
    let ns = wait_namespace(&namespaces, &svc, "the namespace with its metadata", |n| {
        label(n, "team").as_deref() == Some("blue")
    })
    .await;
    assert_eq!(
        label(&ns, "provider.example.com/managed").as_deref(),
        Some("yes")
    );
    assert_eq!(
        label(&ns, "billing.example.com/center").as_deref(),
        Some("42")
    );
    assert_eq!(label(&ns, "other"), None, "only selected keys are copied");
    assert_eq!(
        annotation(&ns, "provider.example.com/contact").as_deref(),
        Some("ops-team")
    );
    assert_eq!(
        annotation(&ns, "services.k8s.aws/owner-account-id").as_deref(),
        Some("123456789012")
    );
    assert_eq!(annotation(&ns, "note"), None);
    get_opt(
        &crontabs(&env.service_client, &svc),
        &default_copy_name("tenant", "job"),
    )
    .await
    .unwrap()
    .expect("the copy in that namespace");

    // Someone on the service cluster adds a key of their own and changes
    // one of the agent's: theirs stays, the agent's is set back.
    namespaces
        .patch(
            &svc,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {
                "ops.example.com/keep": "me",
                "provider.example.com/managed": "tampered",
            }}})),
        )
        .await
        .unwrap();
    let ns = wait_namespace(&namespaces, &svc, "the drifted label set back", |n| {
        label(n, "provider.example.com/managed").as_deref() == Some("yes")
    })
    .await;
    assert_eq!(label(&ns, "ops.example.com/keep").as_deref(), Some("me"));

    // The consumer changes one copied key and removes another: the service
    // namespace follows, and keys the agent did not set stay.
    let kcp_namespaces: Api<Namespace> = Api::all(client.clone());
    kcp_namespaces
        .patch(
            "tenant",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {
                "team": "green",
                "billing.example.com/center": null,
            }}})),
        )
        .await
        .unwrap();
    let ns = wait_namespace(&namespaces, &svc, "the consumer's change copied", |n| {
        label(n, "team").as_deref() == Some("green")
            && label(n, "billing.example.com/center").is_none()
    })
    .await;
    assert_eq!(label(&ns, "ops.example.com/keep").as_deref(), Some("me"));
    assert_eq!(
        label(&ns, "provider.example.com/managed").as_deref(),
        Some("yes")
    );
    env.wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
}

/// Bad input: a key Kubernetes would refuse is refused by the agent before
/// it touches a namespace, naming the field; a label the service cluster's
/// own policy refuses fails the object, visibly (PublishedResource not
/// Ready, an Event in the consumer's workspace), until the policy allows it.
#[tokio::test(flavor = "multi_thread")]
async fn refused_namespace_metadata_is_reported() {
    let env = Env::start("nsmeta-bad", crate::binary()).await;
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  managedNamespaceMetadata:\n    labels: {{\"Bad Key\": x}}\n"
    ))
    .await;
    let invalid = env
        .wait_for_ready("publish-crontabs", "False", "InvalidResource")
        .await;
    let msg = invalid["message"].as_str().unwrap();
    assert!(
        msg.contains("spec.managedNamespaceMetadata.labels") && msg.contains("Bad Key"),
        "{msg}"
    );

    // A policy on the service cluster refuses namespaces labelled
    // `tier: forbidden`.
    apply(
        &env.service_client,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "no-forbidden-tier"},
                "spec": {"failurePolicy": "Fail",
                         "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                             "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"]}]},
                         "validations": [{"expression":
                             "!has(object.metadata.labels) || !('tier' in object.metadata.labels) || object.metadata.labels['tier'] != 'forbidden'",
                             "message": "tier: forbidden is not allowed here"}]}}),
    )
    .await
    .unwrap();
    apply(
        &env.service_client,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "no-forbidden-tier"},
                "spec": {"policyName": "no-forbidden-tier", "validationActions": ["Deny"]}}),
    )
    .await
    .unwrap();
    let prs = env.published_resources();
    let mut pr = prs.get("publish-crontabs").await.unwrap();
    pr.data["spec"]["managedNamespaceMetadata"] = json!({"labels": {"tier": "forbidden"}});
    prs.replace("publish-crontabs", &PostParams::default(), &pr)
        .await
        .unwrap();
    let (consumer, client) = env.consumer("consumer").await;
    create_crontab_in(&client, "default", "refused").await;

    let failing = env
        .wait_for_ready("publish-crontabs", "False", "ObjectsFailing")
        .await;
    let msg = failing["message"].as_str().unwrap();
    assert!(
        msg.contains("spec.managedNamespaceMetadata") && msg.contains("not allowed here"),
        "{msg}"
    );
    let events = Api::<k8s_openapi::api::core::v1::Event>::namespaced(client.clone(), "default");
    let event = eventually("a ReconcilingError event", WAIT, || async {
        let list = events
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(list.items.into_iter().find(|e| {
            e.involved_object.name.as_deref() == Some("refused")
                && e.reason.as_deref() == Some("ReconcilingError")
        }))
    })
    .await;
    assert!(
        event
            .message
            .unwrap_or_default()
            .contains("spec.managedNamespaceMetadata"),
    );
    // Nothing was placed in a namespace without its metadata.
    let copies = crontabs(&env.service_client, &consumer.cluster);
    assert!(
        get_opt(&copies, &default_copy_name("default", "refused"))
            .await
            .unwrap()
            .is_none()
    );

    // The provider changes the label: the object goes through.
    let mut pr = prs.get("publish-crontabs").await.unwrap();
    pr.data["spec"]["managedNamespaceMetadata"] = json!({"labels": {"tier": "standard"}});
    prs.replace("publish-crontabs", &PostParams::default(), &pr)
        .await
        .unwrap();
    eventually("the copy placed", WAIT, || async {
        get_opt(&copies, &default_copy_name("default", "refused")).await
    })
    .await;
    let ns: Value = serde_json::to_value(
        Api::<Namespace>::all(env.service_client.clone())
            .get(&consumer.cluster)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(ns["metadata"]["labels"]["tier"], "standard", "{ns}");
    env.wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
}
