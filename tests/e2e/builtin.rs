//! Publishing a resource that has no CRD on the service cluster: apps/v1
//! Deployments, described from the cluster's discovery and OpenAPI, as
//! upstream does.

use std::time::Duration;

use kube::api::PostParams;
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread")]
async fn deployments_are_published_from_openapi() {
    let env = Env::start("builtin", crate::binary()).await;
    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-deployments}\nspec:\n  resource: {apiGroup: apps, kind: Deployment, versions: [v1]}\n",
    )
    .await;
    let schema = env.wait_for_schema("publish-deployments").await;
    assert!(schema.ends_with(".deployments.apps"), "{schema}");

    let (consumer, client) = env
        .consumer_serving(
            "consumer",
            &[("", "events")],
            &gvk("apps", "v1", "Deployment"),
            "deployments",
        )
        .await;
    let deployments = dynamic_api(
        &client,
        &gvk("apps", "v1", "Deployment"),
        "deployments",
        Some("default"),
    );
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "web",
                    "image": "nginx:1.27",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": {"memory": "128Mi", "cpu": "500m"}},
                }]},
            },
        },
    });
    eventually(
        "creating a Deployment in the consumer workspace",
        WAIT,
        || async {
            deployments
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(deployment.clone()).unwrap(),
                )
                .await
                .map(Some)
                .map_err(|e| e.to_string())
        },
    )
    .await;

    // The real API server validates (and defaults) it as a Deployment.
    let local = dynamic_api(
        &env.service_client,
        &gvk("apps", "v1", "Deployment"),
        "deployments",
        Some(&consumer.cluster),
    );
    let name = default_copy_name("default", "web");
    let copy = eventually("the Deployment on the service cluster", WAIT, || async {
        get_opt(&local, &name).await
    })
    .await;
    assert_eq!(copy.data["spec"]["replicas"], 2);
    assert_eq!(
        copy.data["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"],
        "128Mi",
        "quantities survive the published schema"
    );
    assert_eq!(
        copy.data["spec"]["strategy"]["type"], "RollingUpdate",
        "defaulted by the service cluster"
    );

    // Status (written by the cluster's controllers) goes up.
    let mut with_status = copy.clone();
    with_status.data["status"] =
        json!({"replicas": 2, "readyReplicas": 2, "observedGeneration": 1});
    local
        .replace_status(&name, &PostParams::default(), &with_status)
        .await
        .unwrap();
    eventually("Deployment status in kcp", WAIT, || async {
        let d = get_opt(&deployments, "web").await?;
        Ok(d.filter(|d| d.data["status"]["readyReplicas"] == 2))
    })
    .await;
}
