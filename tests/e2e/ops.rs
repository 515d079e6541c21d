//! Running the agent as a provider would: health endpoints that mean
//! something, and least-privilege identities whose missing permissions are
//! reported clearly.

use std::time::Duration;

use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

async fn wait_readyz(port: u16, want: u16, containing: &str) -> String {
    eventually(
        &format!("/readyz {want} with {containing:?}"),
        WAIT,
        || async {
            let (code, body) = http_get(port, "/readyz").await?;
            if code == want && body.contains(containing) {
                Ok(Some(body))
            } else {
                Err(format!("{code}: {body}"))
            }
        },
    )
    .await
}

/// `/healthz` answers from the start, before kcp is usable; `/readyz` turns
/// ready only once the agent has synced, and goes unready while the service
/// cluster does not answer.
#[tokio::test(flavor = "multi_thread")]
async fn health_reflects_connectivity_and_sync() {
    let mut env = Env::prepare("health", crate::binary()).await;
    let health = free_port();
    let health_flag = format!("--health-address=127.0.0.1:{health}");

    // No APIExport (and so no endpoint slice) yet, as in a fresh installation
    // where the agent starts first: it keeps waiting for kcp.
    let provider = kcp().client(&env.provider.path).await.unwrap();
    for (kind, plural) in [
        ("APIExport", "apiexports"),
        ("APIExportEndpointSlice", "apiexportendpointslices"),
    ] {
        let api = dynamic_api(
            &provider,
            &gvk("apis.kcp.io", "v1alpha1", kind),
            plural,
            None,
        );
        let _ = api.delete(EXPORT, &Default::default()).await;
        eventually(&format!("{kind} gone"), WAIT, || async {
            Ok(get_opt(&api, EXPORT).await?.is_none().then_some(()))
        })
        .await;
    }
    env.start_agent(&[&health_flag]);
    let (code, body) = eventually("/healthz while kcp is not usable", WAIT, || async {
        http_get(health, "/healthz").await.map(Some)
    })
    .await;
    assert_eq!((code, body.trim()), (200, "ok"));
    let body = wait_readyz(health, 503, "[-]kcp failed").await;
    assert!(body.contains(EXPORT), "{body}");
    assert!(env.agent.as_ref().unwrap().is_running());

    // The export appears: ready once the first publishing pass went through.
    apply_yaml(&provider, APIEXPORT).await.expect("APIExport");
    env.publish().await;
    let body = wait_readyz(health, 200, "[+]sync ok").await;
    assert!(
        body.contains("[+]kcp ok") && body.contains("[+]service-cluster ok"),
        "{body}"
    );

    // The service cluster stops answering: unready, then ready again.
    env.service.pause();
    let body = wait_readyz(health, 503, "[-]service-cluster failed").await;
    env.service.resume();
    assert!(!body.contains("[-]kcp"), "{body}");
    wait_readyz(health, 200, "[+]service-cluster ok").await;
    let (code, _) = http_get(health, "/healthz").await.unwrap();
    assert_eq!(code, 200);
}

/// A kcp identity without one of the permissions docs/rbac.md lists (here:
/// creating APIResourceSchemas) gets a condition on the PublishedResource
/// that names what was refused and where the fix is documented.
#[tokio::test(flavor = "multi_thread")]
async fn missing_kcp_permission_is_reported_clearly() {
    let mut env = Env::prepare("perm", crate::binary()).await;
    let provider = kcp().client(&env.provider.path).await.unwrap();
    // The documented RBAC minus the apiresourceschemas rule.
    let mut rbac = String::new();
    let mut skip = false;
    for line in kcp_agent_rbac_for(LIMITED_KCP_USER).lines() {
        if line.trim_start().starts_with("- apiGroups:") || line.trim_start().starts_with('#') {
            skip = false;
        }
        if line.contains("resources: [\"apiresourceschemas\"]") {
            skip = true;
            // Drop the apiGroups line already written for this rule.
            let cut = rbac.trim_end_matches('\n').rfind('\n').unwrap();
            rbac.truncate(cut + 1);
        }
        if !skip {
            rbac.push_str(line);
            rbac.push('\n');
        }
    }
    assert!(!rbac.contains("apiresourceschemas"), "{rbac}");
    assert!(rbac.contains("apiexports/content"), "{rbac}");
    // Role names of their own, so the agent user's grants stay as they are.
    let rbac = rbac.replace("syncweave-sync-", "syncweave-limited-");
    apply_yaml(&provider, &rbac).await.expect("limited RBAC");

    env.start_agent_as(LIMITED_KCP_TOKEN, &[]);
    env.publish().await;
    let refused = env
        .wait_for_ready("publish-crontabs", "False", "SchemaNotPublished")
        .await;
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(message.contains("apiresourceschemas"), "{message}");
    assert!(message.contains(LIMITED_KCP_USER), "{message}");
    assert!(message.contains("docs/rbac.md"), "{message}");

    // Granting the documented RBAC fixes it without a restart.
    grant_kcp_agent_rbac(&provider, LIMITED_KCP_USER)
        .await
        .unwrap();
    env.wait_for_schema("publish-crontabs").await;
}

/// `--kubeconfig-host-override` and `--kubeconfig-ca-file-override` apply to
/// the service-cluster connection, as upstream's do: a kubeconfig with an
/// unreachable server and no CA works once both are overridden.
#[tokio::test(flavor = "multi_thread")]
async fn kubeconfig_overrides_apply_to_the_service_cluster() {
    let mut env = Env::prepare("overrides", crate::binary()).await;
    let mut kc = env
        .service
        .kubeconfig(CHART_SERVICE_ACCOUNT, &env.agent_token);
    for c in &mut kc.clusters {
        let cluster = c.cluster.as_mut().unwrap();
        cluster.server = Some("https://127.0.0.1:1".into());
        cluster.certificate_authority_data = None;
    }
    let bad = env.dir.join("service-elsewhere.kubeconfig");
    std::fs::write(&bad, serde_yaml_ng::to_string(&kc).unwrap()).unwrap();
    let ca = env.dir.join("service-ca.crt");
    std::fs::write(&ca, &env.service.ca_pem).unwrap();
    // Later flags win, as with pflag: this --kubeconfig replaces the harness's.
    env.start_agent(&[
        &format!("--kubeconfig={}", bad.display()),
        &format!("--kubeconfig-host-override={}", env.service.url),
        &format!("--kubeconfig-ca-file-override={}", ca.display()),
    ]);
    env.publish().await;
    // Publishing reads CRDs and PublishedResources: through the overrides.
    env.wait_for_schema("publish-crontabs").await;
}
