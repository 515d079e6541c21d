//! `examples/demo.sh` runs this: a local kcp with a provider and a consumer
//! workspace, and a real Kubernetes API server (kube-apiserver + etcd) as the
//! provider's service cluster; syncweave publishes the CronTab API, a consumer
//! creates a CronTab, and we watch it go down to the service cluster and its
//! status come back up.
//!
//! Pass `--keep` to leave everything running until Ctrl-C.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::api::PostParams;
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::*;

fn step(msg: &str) {
    println!("\n==> {msg}");
}

fn ok(msg: &str) {
    println!("    ✓ {msg}");
}

/// The agent's log, once it runs: on failure the demo prints its last error.
static AGENT_LOG: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The last error or warning the agent logged, on one line.
fn agent_last_error() -> Option<String> {
    let text = std::fs::read_to_string(AGENT_LOG.get()?).ok()?;
    text.lines()
        .rev()
        .find(|l| l.contains("ERROR") || l.contains("WARN"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn fail(msg: &str) -> ! {
    eprintln!("\ndemo failed: {msg}");
    match agent_last_error() {
        Some(line) => eprintln!("agent's last error: {line}"),
        None if AGENT_LOG.get().is_some() => eprintln!("the agent logged no error"),
        None => {}
    }
    if let Some(log) = AGENT_LOG.get() {
        eprintln!("agent log: {}", log.display());
    }
    std::process::exit(1);
}

fn main() {
    // A failed wait panics inside the harness; show one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("panic");
        fail(msg);
    }));
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    if let Err(e) = rt.block_on(demo()) {
        fail(&format!("{e:#}"));
    }
}

async fn demo() -> anyhow::Result<()> {
    let keep = std::env::args().any(|a| a == "--keep");
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let binary = std::env::var("SYNCWEAVE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo.join("target/debug/syncweave"));
    anyhow::ensure!(
        binary.exists(),
        "{} not found: build it with `cargo build -p syncweave`",
        binary.display()
    );
    let started = Instant::now();

    step("Starting a local kcp (first start takes up to a minute)");
    let kcp = kcp();
    ok(&format!(
        "kcp is ready at {} (log: {})",
        kcp.base_url,
        kcp.log_file.display()
    ));

    step(
        "Starting the service cluster (kube-apiserver + etcd) and creating the provider workspace",
    );
    let mut env = Env::prepare("demo", &binary).await;
    ok(&format!("provider workspace: {}", env.provider.path));
    ok(&format!("service cluster:    {}", env.service.url));
    ok(&format!(
        "CronTab CRD, PublishedResource CRD and the Helm chart's RBAC installed on the service cluster; APIExport {EXPORT} in the provider"
    ));
    env.start_agent(&[]);
    let log = env.agent.as_ref().unwrap().log_file.clone();
    let _ = AGENT_LOG.set(log.clone());
    ok(&format!(
        "syncweave sync is running as the chart's ServiceAccount and a least-privilege kcp user (log: {})",
        log.display()
    ));

    step("Publishing the CronTab API (PublishedResource publish-crontabs)");
    env.publish().await;
    let prs = dynamic_api(
        &env.service_client,
        &gvk("syncagent.kcp.io", "v1alpha1", "PublishedResource"),
        "publishedresources",
        None,
    );
    let schema = eventually("the APIResourceSchema", Duration::from_secs(60), || async {
        let pr = get_opt(&prs, "publish-crontabs").await?;
        Ok(pr.and_then(|p| str_at(&p, "/status/resourceSchemaName").map(str::to_string)))
    })
    .await;
    ok(&format!(
        "APIResourceSchema {schema} created and added to the APIExport"
    ));

    step("A consumer binds the API and creates a CronTab");
    let (consumer, client) = env.consumer("consumer").await;
    ok(&format!(
        "consumer workspace {} (logical cluster {}) bound to {EXPORT}",
        consumer.path, consumer.cluster
    ));
    let kcp_crontabs = crontabs(&client, "default");
    let obj = serde_yaml_ng::from_str(include_str!("../../../examples/crontab/crontab.yaml"))?;
    kcp_crontabs.create(&PostParams::default(), &obj).await?;
    ok("created CronTab default/my-crontab (spec.image: my-cron-image)");

    step("Waiting for the object on the service cluster");
    let local = crontabs(&env.service_client, &consumer.cluster);
    let copy = eventually(
        "the service-cluster copy",
        Duration::from_secs(60),
        || async {
            let list = local
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok(list.items.into_iter().next())
        },
    )
    .await;
    let local_name = copy.metadata.name.clone().unwrap_or_default();
    ok(&format!(
        "synced down: {}/{} (spec.image: {})",
        consumer.cluster,
        local_name,
        str_at(&copy, "/spec/image").unwrap_or("?")
    ));

    step("The provider's controller reports status on the service cluster");
    let mut with_status = copy.clone();
    with_status.data["status"] = json!({"phase": "Running", "lastRun": "2026-11-21T09:00:00Z"});
    local
        .replace_status(&local_name, &PostParams::default(), &with_status)
        .await?;
    ok("set status.phase=Running on the service-cluster copy");
    let up = eventually(
        "status in the consumer workspace",
        Duration::from_secs(60),
        || async {
            let o = get_opt(&kcp_crontabs, "my-crontab").await?;
            Ok(o.filter(|o| str_at(o, "/status/phase") == Some("Running")))
        },
    )
    .await;
    ok(&format!(
        "synced up: consumer sees status.phase={}",
        str_at(&up, "/status/phase").unwrap_or("?")
    ));

    println!("\nDemo complete in {:.0?}.", started.elapsed());
    if keep {
        println!(
            "kubeconfigs: {dir}/kcp.kubeconfig (provider, the agent's identity), \
             {dir}/service-admin.kubeconfig (service cluster, admin). Ctrl-C to stop.",
            dir = env.dir.display(),
        );
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}
