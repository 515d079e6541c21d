//! `syncweave cluster register|unregister`: the legacy kcp syncer's workflow
//! on the sync role. Registering a physical cluster creates, in the current
//! kcp workspace, an APIExport for it (kcp adds the endpoint slice), a
//! `SyncTarget` that shows what the cluster can serve, and a dedicated
//! identity (a ServiceAccount and its RBAC); it writes one manifest that
//! runs the agent on the cluster with that identity.

pub mod manifest;
pub mod target;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};

use crate::apis::kcp as kcpapi;
use target::Requested;

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Register a physical cluster with the current kcp workspace and write
    /// the manifest to apply to it (like `kubectl kcp workload sync`).
    Register(RegisterArgs),
    /// Remove what `register` created in the kcp workspace. Consumers'
    /// objects are left alone.
    Unregister(UnregisterArgs),
}

#[derive(Debug, Args)]
pub struct KcpArgs {
    /// Kubeconfig whose current context points at the kcp workspace
    /// (…/clusters/<workspace>); default $KUBECONFIG, then ~/.kube/config.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of that kubeconfig to use (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// Name of the cluster (DNS-1123 label); also the APIExport's name.
    pub name: String,
    /// Where to write the manifest for the physical cluster (`-` for stdout).
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub output: PathBuf,
    /// Extra types to sync, as resource.group (e.g. certificates.cert-manager.io),
    /// optionally `:Kind` when the kind is not the capitalised singular.
    /// Deployments, Services, Ingresses (down) and Pods (up) are always synced.
    #[arg(long, value_delimiter = ',', value_name = "RESOURCE.GROUP")]
    pub resources: Vec<String>,
    /// Also sync the types of these APIExports (`<workspace path>:<name>`):
    /// each of their schemas' resources is requested like --resources.
    #[arg(long, value_delimiter = ',', value_name = "PATH:NAME")]
    pub apiexports: Vec<String>,
    /// Container image of the agent.
    #[arg(long, default_value = concat!("ghcr.io/syncweave/syncweave:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// Namespace on the physical cluster for the agent (default syncweave-<name>).
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub kcp: KcpArgs,
}

#[derive(Debug, Args)]
pub struct UnregisterArgs {
    /// Name the cluster was registered with.
    pub name: String,
    #[command(flatten)]
    pub kcp: KcpArgs,
}

pub async fn run(cmd: ClusterCommand) -> anyhow::Result<()> {
    match cmd {
        ClusterCommand::Register(a) => register(a).await,
        ClusterCommand::Unregister(a) => unregister(a).await,
    }
}

/// The kcp workspace the user's kubeconfig points at.
struct Workspace {
    client: Client,
    config: Config,
    kubeconfig: Kubeconfig,
    context: String,
    /// `https://host:port/clusters/<workspace>`.
    server: String,
}

async fn workspace(args: &KcpArgs) -> anyhow::Result<Workspace> {
    let kubeconfig = match &args.kubeconfig {
        Some(p) => Kubeconfig::read_from(p)
            .with_context(|| format!("--kubeconfig {}: cannot read it", p.display()))?,
        None => Kubeconfig::read().context(
            "no kubeconfig: pass --kubeconfig, or set $KUBECONFIG to one for the kcp workspace",
        )?,
    };
    let context = args
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .context("the kubeconfig has no current context: pass --context")?;
    let config = Config::from_custom_kubeconfig(
        kubeconfig.clone(),
        &KubeConfigOptions {
            context: Some(context.clone()),
            ..Default::default()
        },
    )
    .await
    .with_context(|| format!("using context {context:?} of the kubeconfig"))?;
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    if crate::kube::kubeconfig::workspace_of(&server).is_none() {
        bail!(
            "the kubeconfig's server {server} is not a kcp workspace URL (…/clusters/<workspace>): \
             point it at the workspace to register the cluster in"
        );
    }
    let client = Client::try_from(config.clone()).context("building the kcp client")?;
    Ok(Workspace {
        client,
        config,
        kubeconfig,
        context,
        server,
    })
}

fn validate_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name.starts_with(|c: char| c.is_ascii_lowercase());
    if !ok {
        bail!(
            "cluster name {name:?} must be a DNS-1035 label of at most 40 characters \
             (lower-case letters, digits and '-', starting with a letter), e.g. gpu-1"
        );
    }
    Ok(())
}

/// Create `obj` unless it exists (registering twice is fine).
async fn create_if_missing(api: &Api<DynamicObject>, obj: Value, what: &str) -> anyhow::Result<()> {
    let o: DynamicObject = serde_json::from_value(obj)?;
    match api.create(&PostParams::default(), &o).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating {what}")),
    }
}

fn step(msg: &str) {
    eprintln!("• {msg}");
}

async fn register(a: RegisterArgs) -> anyhow::Result<()> {
    validate_name(&a.name)?;
    let mut extra = Vec::new();
    for r in &a.resources {
        extra.push(target::parse_resource(r).map_err(|e| anyhow::anyhow!("--resources: {e}"))?);
    }
    let ws = workspace(&a.kcp).await?;
    for e in &a.apiexports {
        extra.extend(export_resources(&ws, e).await?);
    }
    let resources = target::requested(&extra);
    let name = a.name.as_str();
    let namespace = a
        .namespace
        .clone()
        .unwrap_or_else(|| format!("syncweave-{name}"));

    step(&format!("registering cluster {name} in {}", ws.server));
    // 1. The SyncTarget API and object.
    install_crd(&ws.client, target::CRD).await.context(
        "installing the SyncTarget CRD in the workspace (needs permission to create CRDs)",
    )?;
    let targets: Api<DynamicObject> = Api::all_with(ws.client.clone(), &target::resource());
    let ids: Vec<String> = resources.iter().map(Requested::id).collect();
    create_if_missing(
        &targets,
        json!({
            "apiVersion": "syncweave.dev/v1alpha1", "kind": "SyncTarget",
            "metadata": {"name": name},
            "spec": {"apiExport": name, "resources": ids},
        }),
        &format!("SyncTarget {name}"),
    )
    .await?;
    let pending: Vec<target::ResourceState> = ids
        .iter()
        .map(|id| target::ResourceState {
            resource: id.clone(),
            state: "Pending",
            reason: None,
        })
        .collect();
    let mut patch = target::status_patch(&pending, false, "waiting for the agent on the cluster");
    patch["status"]["conditions"][0]["reason"] = json!("AgentNotConnected");
    let _ = targets
        .patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await;
    step(&format!(
        "SyncTarget {name}: {} resources requested",
        ids.len()
    ));

    // 2. The APIExport consumers bind (kcp creates its endpoint slice).
    let exports: Api<DynamicObject> = Api::all_with(ws.client.clone(), &kcpapi::apiexport());
    create_if_missing(
        &exports,
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": name}, "spec": {}}),
        &format!("APIExport {name}"),
    )
    .await?;
    step(&format!(
        "APIExport {name} (bind it from consumer workspaces)"
    ));

    // 3. A dedicated identity for the agent, with exactly what it needs.
    let sa_name = manifest::service_account(name);
    let token = identity(&ws, name, &sa_name).await?;
    step(&format!(
        "ServiceAccount default/{sa_name} with the agent's kcp RBAC"
    ));

    // 4. The manifest.
    let kcp_kubeconfig = agent_kubeconfig(&ws, &sa_name, &token)?;
    let text = manifest::render(&manifest::Params {
        name,
        namespace: &namespace,
        image: &a.image,
        kcp_kubeconfig: &kcp_kubeconfig,
        resources: &resources,
    })?;
    if a.output.as_os_str() == "-" {
        print!("{text}");
    } else {
        write_secret_file(&a.output, text.as_bytes())
            .with_context(|| format!("writing {}", a.output.display()))?;
        step(&format!(
            "wrote {}: apply it to the physical cluster with\n    kubectl apply -f {}\n  then watch it with\n    kubectl get synctarget {name}",
            a.output.display(),
            a.output.display()
        ));
    }
    Ok(())
}

/// Write `bytes` to `path` readable by its owner only: the manifest holds a
/// kcp token. An existing file is truncated and narrowed to 0600 too.
fn write_secret_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(bytes)
}

/// Create the CRD in `yaml` unless it exists, and wait until it is served.
async fn install_crd(client: &Client, yaml: &str) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd: CustomResourceDefinition = serde_yaml_ng::from_str(yaml)?;
    let name = crd.metadata.name.clone().unwrap_or_default();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let established = crds
            .get(&name)
            .await?
            .status
            .and_then(|s| s.conditions)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("CRD {name} was not Established within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Resources of the schemas of APIExport `path:name`.
async fn export_resources(ws: &Workspace, spec: &str) -> anyhow::Result<Vec<Requested>> {
    let (path, export) = spec.rsplit_once(':').with_context(|| {
        format!(
            "--apiexports {spec:?}: expected <workspace path>:<name>, e.g. root:compute:kubernetes"
        )
    })?;
    let base = crate::kube::kubeconfig::base_of(&ws.server);
    let cfg = crate::kube::kubeconfig::with_url(&ws.config, &format!("{base}/clusters/{path}"))?;
    let client = Client::try_from(cfg)?;
    let e = Api::<DynamicObject>::all_with(client, &kcpapi::apiexport())
        .get(export)
        .await
        .with_context(|| format!("--apiexports {spec}: reading APIExport {export} in {path}"))?;
    let mut out = Vec::new();
    for s in e.data["spec"]["latestResourceSchemas"]
        .as_array()
        .into_iter()
        .flatten()
    {
        // v<hash>.<plural>.<group>
        let Some(gr) = s
            .as_str()
            .and_then(crate::publish::schema::group_resource_of)
        else {
            continue;
        };
        let gr = gr.strip_suffix(".core").unwrap_or(gr);
        out.push(
            target::parse_resource(gr).map_err(|e| anyhow::anyhow!("--apiexports {spec}: {e}"))?,
        );
    }
    if out.is_empty() {
        bail!("--apiexports {spec}: the APIExport lists no resource schemas");
    }
    Ok(out)
}

fn kcp_rbac_rules(name: &str) -> Value {
    // docs/rbac/kcp-sync.yaml, for this export, plus the SyncTarget status.
    json!([
        {"nonResourceURLs": ["/"], "verbs": ["access"]},
        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexportendpointslices"], "resourceNames": [name], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": [name], "verbs": ["get", "update"]},
        {"apiGroups": ["apis.kcp.io"], "resources": ["apiresourceschemas"], "verbs": ["get", "create", "patch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports/content"], "resourceNames": [name],
         "verbs": ["get", "list", "watch", "create", "patch", "update", "delete"]},
        {"apiGroups": ["syncweave.dev"], "resources": ["synctargets", "synctargets/status"], "resourceNames": [name],
         "verbs": ["get", "update", "patch"]},
    ])
}

/// The ServiceAccount, its RBAC, and a long-lived token for it.
async fn identity(ws: &Workspace, name: &str, sa_name: &str) -> anyhow::Result<String> {
    let sas: Api<ServiceAccount> = Api::namespaced(ws.client.clone(), "default");
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": sa_name}}))?;
    match sas.create(&PostParams::default(), &sa).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e).context(format!("creating ServiceAccount default/{sa_name}")),
    }
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": sa_name},
        "rules": kcp_rbac_rules(name),
    }))?;
    let roles: Api<ClusterRole> = Api::all(ws.client.clone());
    match roles.create(&PostParams::default(), &role).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {
            roles
                .replace(sa_name, &PostParams::default(), &{
                    let mut r = role.clone();
                    r.metadata.resource_version =
                        roles.get(sa_name).await?.metadata.resource_version;
                    r
                })
                .await
                .context("updating the agent's ClusterRole")?;
        }
        Err(e) => return Err(e).context(format!("creating ClusterRole {sa_name}")),
    }
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": sa_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": sa_name},
        "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": "default"}],
    }))?;
    match Api::<ClusterRoleBinding>::all(ws.client.clone())
        .create(&PostParams::default(), &binding)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e).context(format!("creating ClusterRoleBinding {sa_name}")),
    }
    // A service-account token Secret: it does not expire, like the old
    // syncer's; unregister deletes it.
    let secrets: Api<Secret> = Api::namespaced(ws.client.clone(), "default");
    let secret_name = format!("{sa_name}-token");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": secret_name, "annotations": {"kubernetes.io/service-account.name": sa_name}},
        "type": "kubernetes.io/service-account-token",
    }))?;
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => {
            return Err(e).context(format!("creating the token Secret default/{secret_name}"));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(t) = secrets
            .get_opt(&secret_name)
            .await?
            .and_then(|s| s.data)
            .and_then(|d| d.get("token").cloned())
            .and_then(|b| String::from_utf8(b.0).ok())
            .filter(|t| !t.is_empty())
        {
            return Ok(t);
        }
        if Instant::now() > deadline {
            bail!(
                "kcp did not issue a token for ServiceAccount default/{sa_name} within 60 s \
                 (Secret default/{secret_name} has no data.token)"
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A kubeconfig for the workspace with the agent's token instead of the
/// user's credentials (same server and CA).
fn agent_kubeconfig(ws: &Workspace, sa_name: &str, token: &str) -> anyhow::Result<String> {
    let ctx = ws
        .kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == ws.context)
        .and_then(|c| c.context.clone())
        .context("the kubeconfig's context is missing")?;
    let mut cluster = ws
        .kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.clone())
        .context("the kubeconfig's cluster is missing")?;
    // Embed a CA file: the manifest must work on another machine.
    if let Some(path) = cluster.certificate_authority.take() {
        let pem =
            std::fs::read(&path).with_context(|| format!("reading the kcp CA file {path}"))?;
        // ByteString serializes as base64.
        cluster.certificate_authority_data = serde_json::to_value(k8s_openapi::ByteString(pem))?
            .as_str()
            .map(str::to_string);
    }
    cluster.server = Some(ws.server.clone());
    let kc = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kcp", "cluster": cluster}],
        "users": [{"name": sa_name, "user": {"token": token}}],
        "contexts": [{"name": "kcp", "context": {"cluster": "kcp", "user": sa_name}}],
        "current-context": "kcp",
    });
    Ok(serde_yaml_ng::to_string(&kc)?)
}

async fn unregister(a: UnregisterArgs) -> anyhow::Result<()> {
    validate_name(&a.name)?;
    let ws = workspace(&a.kcp).await?;
    let name = a.name.as_str();
    let sa_name = manifest::service_account(name);
    let dp = DeleteParams::default();
    let gone = |r: Result<(), kube::Error>, what: String| -> anyhow::Result<()> {
        match r {
            Ok(()) => {
                step(&format!("deleted {what}"));
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                step(&format!("{what}: already gone"));
                Ok(())
            }
            Err(e) => Err(e).context(format!("deleting {what}")),
        }
    };
    let targets: Api<DynamicObject> = Api::all_with(ws.client.clone(), &target::resource());
    let exports: Api<DynamicObject> = Api::all_with(ws.client.clone(), &kcpapi::apiexport());
    let slices: Api<DynamicObject> =
        Api::all_with(ws.client.clone(), &kcpapi::apiexport_endpoint_slice());
    let secrets: Api<Secret> = Api::namespaced(ws.client.clone(), "default");
    let sas: Api<ServiceAccount> = Api::namespaced(ws.client.clone(), "default");
    let roles: Api<ClusterRole> = Api::all(ws.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(ws.client.clone());
    // The identity first: the agent (if still running) loses access at once.
    gone(
        bindings.delete(&sa_name, &dp).await.map(|_| ()),
        format!("ClusterRoleBinding {sa_name}"),
    )?;
    gone(
        roles.delete(&sa_name, &dp).await.map(|_| ()),
        format!("ClusterRole {sa_name}"),
    )?;
    gone(
        secrets
            .delete(&format!("{sa_name}-token"), &dp)
            .await
            .map(|_| ()),
        format!("Secret default/{sa_name}-token"),
    )?;
    gone(
        sas.delete(&sa_name, &dp).await.map(|_| ()),
        format!("ServiceAccount default/{sa_name}"),
    )?;
    gone(
        targets.delete(name, &dp).await.map(|_| ()),
        format!("SyncTarget {name}"),
    )?;
    gone(
        slices.delete(name, &dp).await.map(|_| ()),
        format!("APIExportEndpointSlice {name}"),
    )?;
    gone(
        exports.delete(name, &dp).await.map(|_| ()),
        format!("APIExport {name}"),
    )?;
    step(&format!(
        "cluster {name} unregistered; objects in consumer workspaces are kept. On the cluster, \
         remove the agent with `kubectl delete -f <the manifest>`"
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The manifest (it carries a kcp token) is owner-only, also when it
    /// replaces a world-readable file.
    #[test]
    fn the_manifest_is_written_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("sw-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.yaml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        super::write_secret_file(&path, b"token: x").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "token: x");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
