//! The Helm chart, installed with helm into a real kube-apiserver: the
//! objects it renders from an upstream-style values file are accepted by the
//! API server. (There is no kubelet, so the agent's pod does not run; the
//! other e2e tests run the agent with the identity this chart creates.)

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use syncweave_tests::*;

fn helm(kubeconfig: &Path, args: &[&str]) -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(syncweave_tests::kcp::tools_dir().join("helm"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .current_dir(&repo)
        .output()
        .expect("helm runs (tests/setup.sh builds it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "helm {args:?} failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn helm_install_with_upstream_values_is_accepted() {
    let dir = std::env::temp_dir().join(unique("chart"));
    let service = ServiceCluster::start(&dir).await.expect("service cluster");
    let kubeconfig = dir.join("admin.kubeconfig");
    service.write_admin_kubeconfig(&kubeconfig).unwrap();
    let client = service.admin_client().await.unwrap();

    // The sync role, from a values file written for upstream's chart.
    helm(
        &kubeconfig,
        &[
            "install",
            "agent",
            "charts/syncweave",
            "--namespace",
            "provider",
            "--create-namespace",
            "--values",
            "tests/chart/upstream-values.yaml",
        ],
    );
    let deploy = Api::<Deployment>::namespaced(client.clone(), "provider")
        .get("agent-syncweave")
        .await
        .expect("the Deployment");
    let spec = deploy.spec.unwrap().template.spec.unwrap();
    let args = spec.containers[0].args.clone().unwrap_or_default();
    for want in [
        "sync",
        "--apiexportendpointslice-ref=example.com",
        "--agent-name=e2e-agent",
        "--enable-leader-election=true",
    ] {
        assert!(
            args.iter().any(|a| a == want),
            "{want} missing from {args:?}"
        );
    }
    assert_eq!(
        spec.service_account_name.as_deref(),
        Some("agent-syncweave")
    );
    Api::<ServiceAccount>::namespaced(client.clone(), "provider")
        .get("agent-syncweave")
        .await
        .expect("the ServiceAccount");
    assert!(
        Api::<ClusterRole>::all(client.clone())
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|r| r
                .metadata
                .name
                .as_deref()
                .unwrap_or("")
                .contains("agent-syncweave")),
        "the chart's ClusterRole"
    );
    // crds.enabled (upstream's default): the CRDs are installed and served.
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    for name in [
        "publishedresources.syncagent.kcp.io",
        "wasmplugins.syncweave.dev",
    ] {
        let crd = crds
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("CRD {name}: {e}"));
        assert_eq!(crd.spec.scope, "Cluster", "{name}");
    }

    // The init role of the same chart, as a second release.
    helm(
        &kubeconfig,
        &[
            "install",
            "init",
            "charts/syncweave",
            "--namespace",
            "init",
            "--create-namespace",
            "--values",
            "tests/chart/init-values.yaml",
        ],
    );
    let deploy = Api::<Deployment>::namespaced(client.clone(), "init")
        .get("init-syncweave")
        .await
        .expect("the init Deployment");
    let args = deploy.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default();
    assert!(args.iter().any(|a| a == "init"), "{args:?}");

    let status = helm(&kubeconfig, &["status", "agent", "--namespace", "provider"]);
    assert!(status.contains("STATUS: deployed"), "{status}");
    helm(
        &kubeconfig,
        &["uninstall", "agent", "--namespace", "provider"],
    );
    // crds.keep: uninstalling must not delete every PublishedResource.
    crds.get("publishedresources.syncagent.kcp.io")
        .await
        .expect("the CRD survives uninstall");
}
