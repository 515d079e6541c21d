//! The legacy kcp syncer's workflow: `syncweave cluster register` a
//! physical cluster (here a real kube-apiserver), apply the manifest it
//! writes, run workloads from a consumer workspace, see Pods come back, and
//! `syncweave cluster unregister`.

use std::process::Command;
use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);
const NAME: &str = "gpu-1";

fn syncweave(args: &[&str]) -> (bool, String) {
    let out = Command::new(crate::binary())
        .args(args)
        .output()
        .expect("run syncweave");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn api(
    client: &kube::Client,
    group: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let version = "v1";
    dynamic_api(client, &gvk(group, version, kind), plural, ns)
}

#[tokio::test(flavor = "multi_thread")]
async fn register_a_cluster_run_workloads_and_unregister() {
    let kcp = kcp();
    let org = kcp
        .create_workspace("root", &unique("legacy"))
        .await
        .unwrap();
    let compute = kcp.create_workspace(&org.path, "compute").await.unwrap();
    let dir = kcp.root_dir.join(org.path.replace(':', "_"));
    std::fs::create_dir_all(&dir).unwrap();
    let service = ServiceCluster::start(&dir.join("service")).await.unwrap();
    let cluster = service.admin_client().await.unwrap();

    // 1. Register, as a user with a kubeconfig for the compute workspace.
    let user_kc = dir.join("user.kubeconfig");
    kcp.write_kubeconfig(&compute.path, &user_kc).unwrap();
    let manifest_path = dir.join("syncer.yaml");
    let (ok, out) = syncweave(&[
        "cluster",
        "register",
        NAME,
        "-o",
        manifest_path.to_str().unwrap(),
        "--resources",
        "widgets.example.com",
        "--kubeconfig",
        user_kc.to_str().unwrap(),
    ]);
    assert!(ok, "register failed:\n{out}");
    let kcp_compute = kcp.client(&compute.path).await.unwrap();
    let targets = dynamic_api(
        &kcp_compute,
        &gvk("syncweave.dev", "v1alpha1", "SyncTarget"),
        "synctargets",
        None,
    );
    let t = targets.get(NAME).await.expect("SyncTarget created");
    assert_eq!(
        t.data["spec"]["resources"],
        json!([
            "deployments.apps",
            "services",
            "ingresses.networking.k8s.io",
            "pods",
            "widgets.example.com"
        ])
    );
    let exports = dynamic_api(
        &kcp_compute,
        &gvk("apis.kcp.io", "v1alpha1", "APIExport"),
        "apiexports",
        None,
    );
    exports.get(NAME).await.expect("APIExport created");

    // 2. Apply the manifest to the cluster, as a cluster admin would.
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    assert!(
        !manifest.contains("client-key-data"),
        "the admin's credentials must not leak into the manifest"
    );
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&manifest)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    for d in docs
        .iter()
        .filter(|d| d["kind"] == "CustomResourceDefinition")
    {
        apply_crds(&cluster, &serde_yaml_ng::to_string(d).unwrap())
            .await
            .unwrap();
    }
    for d in docs
        .iter()
        .filter(|d| d["kind"] != "CustomResourceDefinition")
    {
        apply(&cluster, d)
            .await
            .unwrap_or_else(|e| panic!("applying {} {}: {e:#}", d["kind"], d["metadata"]["name"]));
    }

    // There is no kubelet: run the Deployment's container as a process, with
    // the manifest's identities (its ServiceAccount, its kcp kubeconfig).
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let namespace = deployment["metadata"]["namespace"]
        .as_str()
        .unwrap()
        .to_string();
    let sa = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .unwrap();
    let secret = docs.iter().find(|d| d["kind"] == "Secret").unwrap();
    let kcp_kc = dir.join("agent-kcp.kubeconfig");
    std::fs::write(
        &kcp_kc,
        secret["stringData"]["kubeconfig"].as_str().unwrap(),
    )
    .unwrap();
    let token = service
        .service_account_token(&namespace, sa, 24)
        .await
        .unwrap();
    let svc_kc = dir.join("agent-service.kubeconfig");
    service.write_kubeconfig(sa, &token, &svc_kc).unwrap();
    let mut args: Vec<String> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .filter(|a| !a.starts_with("--health-address") && !a.starts_with("--metrics-address"))
        .map(|a| {
            if a.starts_with("--kcp-kubeconfig=") {
                format!("--kcp-kubeconfig={}", kcp_kc.display())
            } else {
                a
            }
        })
        .collect();
    args.extend([
        format!("--kubeconfig={}", svc_kc.display()),
        "--metrics-address=0".into(),
        "--log-format=Console".into(),
        "--log-debug".into(),
    ]);
    let agent = Agent::start(crate::binary(), &args, dir.join("agent.log")).expect("agent starts");

    // 3. The cluster reports what it can serve: the built-in types are
    //    Accepted, a type the cluster does not have is Incompatible.
    let status = eventually("SyncTarget status from the agent", WAIT, || async {
        let t = get_opt(&targets, NAME).await?;
        Ok(t.filter(|t| {
            let rs = t.data["status"]["syncedResources"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let state = |r: &str| {
                rs.iter()
                    .find(|x| x["resource"] == r)
                    .and_then(|x| x["state"].as_str().map(str::to_string))
            };
            [
                "deployments.apps",
                "services",
                "ingresses.networking.k8s.io",
                "pods",
            ]
            .iter()
            .all(|r| state(r).as_deref() == Some("Accepted"))
                && state("widgets.example.com").as_deref() == Some("Incompatible")
        }))
    })
    .await;
    let widgets = status.data["status"]["syncedResources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["resource"] == "widgets.example.com")
        .unwrap()
        .clone();
    assert!(
        widgets["reason"]
            .as_str()
            .is_some_and(|r| r.contains("Widget")),
        "{widgets}"
    );
    assert_eq!(
        status.data["status"]["conditions"][0]["status"], "True",
        "Ready while the agent is connected: {}",
        status.data["status"]
    );
    assert!(status.data["status"]["lastHeartbeatTime"].is_string());

    // 4. A consumer binds the cluster's export and runs a workload.
    let consumer = kcp.create_workspace(&org.path, "team-a").await.unwrap();
    let client = kcp.client(&consumer.path).await.unwrap();
    apply(
        &client,
        &json!({
            "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding",
            "metadata": {"name": NAME},
            "spec": {
                "reference": {"export": {"path": compute.path, "name": NAME}},
                "permissionClaims": [
                    {"group": "", "resource": "events", "all": true, "state": "Accepted"},
                    {"group": "", "resource": "namespaces", "all": true, "state": "Accepted"},
                ],
            },
        }),
    )
    .await
    .unwrap();
    let deployments = api(
        &client,
        "apps",
        "Deployment",
        "deployments",
        Some("default"),
    );
    let services = api(&client, "", "Service", "services", Some("default"));
    eventually(
        "deployments and services served in the consumer workspace",
        WAIT,
        || async {
            deployments
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            services
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(()))
        },
    )
    .await;
    let labels = json!({"app": "web", "tier": "frontend"});
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "labels": labels},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
                    },
                },
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    services
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web"},
                "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
            }))
            .unwrap(),
        )
        .await
        .unwrap();

    // Each consumer workspace gets its own namespace on the cluster.
    let copy_name = default_copy_name("default", "web");
    let cluster_deployments = api(
        &cluster,
        "apps",
        "Deployment",
        "deployments",
        Some(&consumer.cluster),
    );
    let cluster_services = api(&cluster, "", "Service", "services", Some(&consumer.cluster));
    let copy = eventually("the Deployment on the cluster", WAIT, || async {
        get_opt(&cluster_deployments, &copy_name).await
    })
    .await;
    assert_eq!(copy.data["spec"]["replicas"], 2);
    let svc = eventually("the Service on the cluster", WAIT, || async {
        get_opt(&cluster_services, &copy_name).await
    })
    .await;
    assert!(
        svc.data["spec"]["clusterIP"].is_string(),
        "the cluster allocated an IP"
    );

    // 5. A Pod of the Deployment on the cluster appears in the workspace.
    //    (No kube-controller-manager runs here: make the namespace's default
    //    ServiceAccount, which Pod admission requires, ourselves.)
    apply(
        &cluster,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": consumer.cluster}}),
    )
    .await
    .unwrap();
    let cluster_pods = api(&cluster, "", "Pod", "pods", Some(&consumer.cluster));
    cluster_pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web-7d4b9-x2k8p", "labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    // A Pod of something else stays on the cluster.
    cluster_pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "unrelated", "labels": {"app": "other"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let pods = api(&client, "", "Pod", "pods", Some("default"));
    let pod = eventually("the Pod in the consumer workspace", WAIT, || async {
        get_opt(&pods, "web-7d4b9-x2k8p").await
    })
    .await;
    assert_eq!(pod.data["spec"]["containers"][0]["image"], "nginx:1.27");
    assert!(get_opt(&pods, "unrelated").await.unwrap().is_none());

    // --apiexports: the types of an existing APIExport are requested too.
    apply_yaml(
        &kcp_compute,
        r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.gadgets.tools.example.com}
spec:
  group: tools.example.com
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: tools}
spec: {latestResourceSchemas: [v1.gadgets.tools.example.com]}
"#,
    )
    .await
    .unwrap();
    let (ok, out) = syncweave(&[
        "cluster",
        "register",
        "gpu-2",
        "-o",
        "-",
        "--apiexports",
        &format!("{}:tools", compute.path),
        "--kubeconfig",
        user_kc.to_str().unwrap(),
    ]);
    assert!(ok, "register --apiexports failed:\n{out}");
    assert!(
        out.contains("name: gpu-2-gadgets"),
        "the manifest publishes gadgets:\n{out}"
    );
    let t2 = targets.get("gpu-2").await.unwrap();
    assert!(
        t2.data["spec"]["resources"]
            .as_array()
            .unwrap()
            .contains(&json!("gadgets.tools.example.com")),
        "{}",
        t2.data["spec"]
    );
    let (ok, out) = syncweave(&[
        "cluster",
        "unregister",
        "gpu-2",
        "--kubeconfig",
        user_kc.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");

    // 6. Unregister: kcp's side of the registration goes, consumers' objects stay.
    drop(agent);
    let (ok, out) = syncweave(&[
        "cluster",
        "unregister",
        NAME,
        "--kubeconfig",
        user_kc.to_str().unwrap(),
    ]);
    assert!(ok, "unregister failed:\n{out}");
    assert!(
        get_opt(&targets, NAME).await.unwrap().is_none(),
        "SyncTarget removed"
    );
    assert!(
        get_opt(&exports, NAME).await.unwrap().is_none(),
        "APIExport removed"
    );
    let sas = api(
        &kcp_compute,
        "",
        "ServiceAccount",
        "serviceaccounts",
        Some("default"),
    );
    assert!(
        get_opt(&sas, &format!("syncweave-{NAME}"))
            .await
            .unwrap()
            .is_none(),
        "identity removed"
    );
    let kept = kcp.client(&consumer.path).await.unwrap();
    let bindings = dynamic_api(
        &kept,
        &gvk("apis.kcp.io", "v1alpha1", "APIBinding"),
        "apibindings",
        None,
    );
    assert!(
        get_opt(&bindings, NAME).await.unwrap().is_some(),
        "the consumer's binding is theirs to remove"
    );
    let still = api(&kept, "apps", "Deployment", "deployments", Some("default"));
    let web = get_opt(&still, "web").await.unwrap();
    assert!(web.is_some(), "the consumer's Deployment is kept");
}
