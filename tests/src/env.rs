//! A provider / service / consumers setup, shared by the e2e tests and the demo.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::*;
use kube::Client;
use serde_json::json;

pub const CRD: &str = include_str!("../../examples/crontab/crd.yaml");
pub const PUBLISHED_RESOURCE: &str = include_str!("../../examples/crontab/publishedresource.yaml");
pub const APIEXPORT: &str = include_str!("../../examples/crontab/apiexport.yaml");
pub const WASMPLUGIN_CRD: &str =
    include_str!("../../charts/syncweave/crds/syncweave.dev_wasmplugins.yaml");
pub const PR_CRD: &str =
    include_str!("../../charts/syncweave/crds/syncagent.kcp.io_publishedresources.yaml");

pub struct Env {
    pub org: Workspace,
    pub provider: Workspace,
    pub service: Workspace,
    pub service_client: Client,
    pub dir: PathBuf,
    pub agent: Option<Agent>,
    /// The `syncweave` binary to run.
    pub binary: PathBuf,
}

pub const EXPORT: &str = "example.com";
pub const AGENT_NAMESPACE: &str = "syncweave";
pub const AGENT_NAME: &str = "e2e-agent";

impl Env {
    /// Workspaces for provider and service cluster, CRDs installed, the
    /// APIExport created and the agent running.
    pub async fn start(test: &str, binary: &Path) -> Env {
        let kcp = kcp();
        let org = kcp
            .create_workspace("root", &unique(test))
            .await
            .expect("org workspace");
        let provider = kcp
            .create_workspace(&org.path, "provider")
            .await
            .expect("provider workspace");
        let service = kcp
            .create_workspace(&org.path, "service")
            .await
            .expect("service workspace");
        let service_client = kcp.client(&service.path).await.unwrap();
        apply_crds(&service_client, PR_CRD)
            .await
            .expect("PublishedResource CRD");
        apply_crds(&service_client, CRD).await.expect("CronTab CRD");
        apply_crds(&service_client, WASMPLUGIN_CRD)
            .await
            .expect("WasmPlugin CRD");
        let provider_client = kcp.client(&provider.path).await.unwrap();
        apply_yaml(&provider_client, APIEXPORT)
            .await
            .expect("APIExport");

        let dir = kcp.root_dir.join(org.path.replace(':', "_"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut env = Env {
            org,
            provider,
            service,
            service_client,
            dir,
            agent: None,
            binary: binary.to_path_buf(),
        };
        env.start_agent(&[]);
        env
    }

    pub fn start_agent(&mut self, extra: &[&str]) {
        let kcp = kcp();
        let kcp_kc = self.dir.join("kcp.kubeconfig");
        let svc_kc = self.dir.join("service.kubeconfig");
        kcp.write_kubeconfig(&self.provider.path, &kcp_kc).unwrap();
        kcp.write_kubeconfig(&self.service.path, &svc_kc).unwrap();
        let mut args: Vec<String> = [
            "sync",
            "--kcp-kubeconfig",
            kcp_kc.to_str().unwrap(),
            "--kubeconfig",
            svc_kc.to_str().unwrap(),
            "--namespace",
            AGENT_NAMESPACE,
            "--apiexportendpointslice-ref",
            EXPORT,
            "--agent-name",
            AGENT_NAME,
            "--metrics-address",
            "0",
            "--log-format",
            "Console",
            "--log-debug",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        self.agent = None;
        let agent =
            Agent::start(&self.binary, &args, self.dir.join("agent.log")).expect("agent starts");
        self.agent = Some(agent);
    }

    /// Publish a custom PublishedResource manifest.
    pub async fn publish_yaml(&self, yaml: &str) {
        apply_yaml(&self.service_client, yaml)
            .await
            .expect("PublishedResource");
    }

    pub async fn publish(&self) {
        apply_yaml(&self.service_client, PUBLISHED_RESOURCE)
            .await
            .expect("PublishedResource");
    }

    /// A consumer workspace bound to the export, with CronTabs served.
    pub async fn consumer(&self, name: &str) -> (Workspace, Client) {
        let kcp = kcp();
        let ws = kcp
            .create_workspace(&self.org.path, name)
            .await
            .expect("consumer workspace");
        let client = kcp.client(&ws.path).await.unwrap();
        apply(
            &client,
            &json!({
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIBinding",
                "metadata": {"name": EXPORT},
                "spec": {
                    "reference": {"export": {"path": self.provider.path, "name": EXPORT}},
                    "permissionClaims": [{"group": "", "resource": "events", "all": true, "state": "Accepted"}],
                },
            }),
        )
        .await
        .expect("APIBinding");
        let crontabs = dynamic_api(
            &client,
            &gvk("example.com", "v1", "CronTab"),
            "crontabs",
            Some("default"),
        );
        eventually(
            &format!("CronTabs served in consumer {name}"),
            Duration::from_secs(90),
            || async {
                crontabs
                    .list(&Default::default())
                    .await
                    .map(|_| Some(()))
                    .map_err(|e| e.to_string())
            },
        )
        .await;
        (ws, client)
    }
}
