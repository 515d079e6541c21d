//! Command-line surface. `sync` and `init` accept the upstream api-syncagent
//! and init-agent flags with the same names, meanings and defaults, so a
//! provider can swap binaries without touching manifests or Helm values.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "syncweave",
    version = crate::ops::version::VERSION,
    about = "WebAssembly-pluggable sync runtime for kcp",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Publish service-cluster APIs into kcp and sync objects (the api-syncagent role).
    // Like Go's pflag, a repeated flag overrides the earlier one.
    #[command(args_override_self = true)]
    Sync(SyncArgs),
    /// Initialize new kcp workspaces from InitTargets (the init-agent role).
    #[command(args_override_self = true)]
    Init(InitArgs),
    /// Build, inspect and test Wasm plugins.
    #[command(subcommand)]
    Plugin(crate::plugin::cli::PluginCommand),
    /// Show what a PublishedResource makes of objects (the copy's name and
    /// body, the plugins' Events), computed locally by the same plugins
    /// under the same limits as the agent. Exit codes: 0 rendered, 1 a
    /// plugin failed, 2 bad input.
    Render(crate::plugin::cli::render::RenderArgs),
    /// Register a physical cluster with a kcp workspace (the legacy kcp
    /// syncer's workflow): Deployments, Services and Ingresses down, Pods up.
    #[command(subcommand)]
    Cluster(crate::register::ClusterCommand),
    /// Print version information.
    Version,
}

pub use crate::ops::logging::LogFormat;

/// Flags shared by both agent roles.
#[derive(Debug, Args, Clone)]
pub struct CommonArgs {
    /// Path to the kubeconfig of the cluster the agent runs against. Falls back
    /// to $KUBECONFIG, the in-cluster config and ~/.kube/config.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Use a Lease so that only one replica is active.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub enable_leader_election: bool,

    /// Address for Prometheus metrics (/metrics); "0" disables it.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8085", value_parser = parse_address)]
    pub metrics_address: Address,

    /// Address for /healthz and /readyz; empty or "0" disables it.
    #[arg(long, value_name = "ADDR", default_value = "", value_parser = parse_address)]
    pub health_address: Address,

    /// (syncweave) Keep the inputs of failing plugin calls and serve them
    /// for `syncweave plugin replay` on this address (/debug/captures).
    /// Loopback only, e.g. 127.0.0.1:8086; reach it with `kubectl
    /// port-forward`. Off by default (empty or "0").
    #[arg(long, value_name = "ADDR", default_value = "", value_parser = parse_debug_address)]
    pub debug_address: Address,

    /// Enable debug logging.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub log_debug: bool,

    /// Log format: JSON or Console.
    #[arg(
        long,
        value_name = "FORMAT",
        default_value = "JSON",
        ignore_case = true
    )]
    pub log_format: LogFormat,

    /// With leader election: how long a standby waits after it last saw the
    /// lease renewed before it takes over.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_flag_duration)]
    pub leader_elect_lease_duration: std::time::Duration,

    /// With leader election: how long the leader keeps writing after its
    /// last successful renewal; then it stops and exits (must be shorter than
    /// the lease duration).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_flag_duration)]
    pub leader_elect_renew_deadline: std::time::Duration,

    /// With leader election: how often the leader renews and standbys try to
    /// take over.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_flag_duration)]
    pub leader_elect_retry_period: std::time::Duration,

    /// Requests per second to kcp (all workspaces and shards together;
    /// Events about consumers' objects have a budget of their own of the
    /// same size); 0 means unlimited.
    #[arg(long, value_name = "QPS", default_value_t = crate::kube::client::DEFAULT_QPS, value_parser = parse_qps)]
    pub kcp_qps: f32,

    /// Requests to kcp that may go out at once above --kcp-qps.
    #[arg(long, value_name = "N", default_value_t = crate::kube::client::DEFAULT_BURST)]
    pub kcp_burst: u32,

    /// Requests per second to the service cluster; 0 means unlimited.
    #[arg(long, value_name = "QPS", default_value_t = crate::kube::client::DEFAULT_QPS, value_parser = parse_qps)]
    pub service_qps: f32,

    /// Requests to the service cluster that may go out at once above --service-qps.
    #[arg(long, value_name = "N", default_value_t = crate::kube::client::DEFAULT_BURST)]
    pub service_burst: u32,
}

fn parse_flag_duration(s: &str) -> Result<std::time::Duration, String> {
    crate::apis::wasmplugin::parse_duration(s)
}

impl CommonArgs {
    /// The leader-election timings, checked against each other.
    pub fn leader_timings(&self) -> Result<crate::kube::leader::Timings, FlagError> {
        crate::kube::leader::Timings {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        }
        .validate()
        .map_err(|m| {
            let flag = [
                "--leader-elect-lease-duration",
                "--leader-elect-renew-deadline",
            ]
            .into_iter()
            .find(|f| m.starts_with(f))
            .unwrap_or("--leader-elect-retry-period");
            let m = m
                .strip_prefix(flag)
                .map(str::trim_start)
                .unwrap_or(&m)
                .to_string();
            flag_err(flag, m)
        })
    }

    /// Install the client-side rate limits of both servers.
    pub fn apply_rate_limits(&self) {
        crate::kube::client::set_limit("kcp", self.kcp_qps, self.kcp_burst);
        crate::kube::client::set_limit(crate::kube::client::EVENTS, self.kcp_qps, self.kcp_burst);
        crate::kube::client::set_limit("service", self.service_qps, self.service_burst);
    }
}

fn parse_qps(s: &str) -> Result<f32, String> {
    match s.parse::<f32>() {
        Ok(q) if q.is_finite() && q >= 0.0 => Ok(q),
        _ => Err(format!(
            "{s:?} is not a rate: give requests per second as a number >= 0 (0 = unlimited)"
        )),
    }
}

#[derive(Debug, Args, Clone)]
pub struct SyncArgs {
    /// Kubeconfig for kcp. Its server URL must point at the workspace that
    /// holds the APIExportEndpointSlice (…/clusters/<workspace>).
    #[arg(long, value_name = "PATH")]
    pub kcp_kubeconfig: Option<PathBuf>,

    /// Namespace on the service cluster for the agent's own state (required).
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,

    /// Name of this agent (DNS-1035); defaults to "<apiexportendpointslice-ref>-syncagent".
    #[arg(long, value_name = "NAME")]
    pub agent_name: Option<String>,

    /// Name of the APIExportEndpointSlice in kcp to serve (required).
    #[arg(long, value_name = "NAME")]
    pub apiexportendpointslice_ref: Option<String>,

    /// Only handle PublishedResources matching this label selector.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub published_resource_selector: String,

    /// Override the server of the service-cluster kubeconfig (as upstream:
    /// e.g. when the in-cluster address is not the one to use).
    #[arg(long, value_name = "URL")]
    pub kubeconfig_host_override: Option<String>,

    /// Override the CA file of the service-cluster kubeconfig (replaces any
    /// CA data it carries).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig_ca_file_override: Option<PathBuf>,

    /// Comma-separated controllers to disable: apiexport, apiresourceschema, sync.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub disabled_controllers: Vec<String>,

    /// (syncweave) Report this cluster's state to the SyncTarget of this name
    /// in the APIExport's workspace (written by `syncweave cluster register`).
    #[arg(long, value_name = "NAME")]
    pub sync_target: Option<String>,

    /// How often every synced object is checked again from the caches, to
    /// heal a missed event (objects with related resources or a namespace
    /// filter: every 30 s, or this if shorter).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_flag_duration)]
    pub resync_period: std::time::Duration,

    /// (syncweave) Objects of one PublishedResource reconciled at a time
    /// (never the same object twice at once).
    #[arg(long, value_name = "N", default_value_t = crate::sync::controller::DEFAULT_WORKERS, value_parser = parse_workers)]
    pub sync_workers: usize,

    /// (syncweave, for measurement) `false` queues every object in arrival
    /// order, without the priority of watch events over the initial list,
    /// resyncs and retries. Hidden: it exists so that the bench can measure
    /// what the priority costs (docs/performance.md); nobody needs it to run.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, hide = true,
          default_value = "true", default_missing_value = "true", value_parser = parse_go_bool)]
    pub sync_priority: bool,

    #[command(flatten)]
    pub common: CommonArgs,
}

fn parse_workers(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=256).contains(&n) => Ok(n),
        _ => Err(format!("{s:?} is not a number of workers from 1 to 256")),
    }
}

#[derive(Debug, Args, Clone)]
pub struct InitArgs {
    /// kcp workspace (path or logical-cluster name), or URL path starting
    /// with / (appended to the kubeconfig's server), where the InitTargets
    /// live (required).
    #[arg(long, value_name = "WORKSPACE")]
    pub config_workspace: Option<String>,

    /// Only handle InitTargets matching this label selector.
    #[arg(long, value_name = "SELECTOR", default_value = "")]
    pub init_target_selector: String,

    /// Namespace in the config workspace that holds the leader-election
    /// Lease `init-agent.kcp.io`; required with --enable-leader-election.
    #[arg(long, value_name = "NAMESPACE", default_value = "")]
    pub leader_election_namespace: String,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// A listen address; `None` means the server is disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address(pub Option<SocketAddr>);

fn parse_address(s: &str) -> Result<Address, String> {
    let s = s.trim();
    if s.is_empty() || s == "0" {
        return Ok(Address(None));
    }
    // Go accepts ":8080" meaning all interfaces.
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse::<SocketAddr>()
        .map(|a| Address(Some(a)))
        .map_err(|_| {
            format!("{s:?} is not a host:port address (use e.g. 127.0.0.1:8085, or 0 to disable)")
        })
}

/// A loopback address, or none: what the debug endpoint serves (objects
/// from consumers' workspaces, plugin config) must not be reachable from the
/// network, only through `kubectl port-forward` or on the machine itself.
fn parse_debug_address(s: &str) -> Result<Address, String> {
    let t = s.trim();
    let local = t
        .strip_prefix("localhost:")
        .map(|port| format!("127.0.0.1:{port}"));
    let a = parse_address(local.as_deref().unwrap_or(t)).map_err(|_| {
        format!("{s:?} is not a host:port address (use e.g. 127.0.0.1:8086, or 0 to disable)")
    })?;
    match a.0 {
        Some(addr) if !addr.ip().is_loopback() => Err(format!(
            "{s:?} is not a loopback address: the debug endpoint serves the inputs of failed \
             plugin calls (objects from consumers' workspaces), so it listens on loopback only; \
             use 127.0.0.1:{port} (or [::1]:{port}) and reach it from outside the pod with \
             `kubectl port-forward <pod> {port}`",
            port = addr.port()
        )),
        _ => Ok(a),
    }
}

/// Go's strconv.ParseBool, so `--x=True`, `--x=1` etc. work as with pflag.
fn parse_go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!("{s:?} is not a boolean (use true or false)")),
    }
}

pub const CONTROLLERS: [&str; 3] = ["apiexport", "apiresourceschema", "sync"];

/// A validated `syncweave sync` configuration.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    pub kcp_kubeconfig: PathBuf,
    pub namespace: String,
    pub agent_name: String,
    pub endpoint_slice: String,
    pub selector: String,
    pub host_override: Option<String>,
    pub ca_file_override: Option<PathBuf>,
    pub disabled_controllers: Vec<String>,
    pub sync_target: Option<String>,
    pub resync_period: std::time::Duration,
    pub sync_workers: usize,
    pub sync_priority: bool,
    pub common: CommonArgs,
}

/// Error for a bad command line: says which flag and how to fix it.
#[derive(Debug, thiserror::Error)]
#[error("invalid command line: {flag}: {message}")]
pub struct FlagError {
    pub flag: &'static str,
    pub message: String,
}

fn flag_err(flag: &'static str, message: impl Into<String>) -> FlagError {
    FlagError {
        flag,
        message: message.into(),
    }
}

impl SyncArgs {
    pub fn validate(self) -> Result<SyncOptions, FlagError> {
        let kcp_kubeconfig = self
            .kcp_kubeconfig
            .ok_or_else(|| flag_err("--kcp-kubeconfig", "is required (path to a kubeconfig for the kcp workspace holding the APIExportEndpointSlice)"))?;
        let namespace = self.namespace.filter(|n| !n.is_empty()).ok_or_else(|| {
            flag_err(
                "--namespace",
                "is required (namespace on the service cluster for the agent's state)",
            )
        })?;
        let endpoint_slice = self
            .apiexportendpointslice_ref
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                flag_err(
                    "--apiexportendpointslice-ref",
                    "is required (name of the APIExportEndpointSlice in kcp)",
                )
            })?;
        let agent_name = self
            .agent_name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("{endpoint_slice}-syncagent"));
        if let Err(e) = crate::apis::validation::dns1035_label(&agent_name) {
            return Err(flag_err("--agent-name", format!("{agent_name:?} {e}")));
        }
        self.common.leader_timings()?;
        if let Err(e) = crate::apis::selector::parse(&self.published_resource_selector) {
            return Err(flag_err(
                "--published-resource-selector",
                format!("{:?}: {e}", self.published_resource_selector),
            ));
        }
        for c in &self.disabled_controllers {
            if !CONTROLLERS.contains(&c.as_str()) {
                return Err(flag_err(
                    "--disabled-controllers",
                    format!(
                        "unknown controller {c:?} (known: {})",
                        CONTROLLERS.join(", ")
                    ),
                ));
            }
        }
        if let Some(h) = &self.kubeconfig_host_override
            && !(h.starts_with("https://") || h.starts_with("http://"))
        {
            return Err(flag_err(
                "--kubeconfig-host-override",
                format!("{h:?} is not a URL (use e.g. https://kubernetes.default.svc:443)"),
            ));
        }
        Ok(SyncOptions {
            kcp_kubeconfig,
            namespace,
            agent_name,
            endpoint_slice,
            selector: self.published_resource_selector,
            host_override: self.kubeconfig_host_override,
            ca_file_override: self.kubeconfig_ca_file_override,
            disabled_controllers: self.disabled_controllers,
            sync_target: self.sync_target.filter(|s| !s.is_empty()),
            resync_period: self.resync_period,
            sync_workers: self.sync_workers,
            sync_priority: self.sync_priority,
            common: self.common,
        })
    }
}

/// A validated `syncweave init` configuration.
#[derive(Debug, Clone)]
pub struct InitOptions {
    pub config_workspace: String,
    pub selector: String,
    pub leader_election_namespace: String,
    pub common: CommonArgs,
}

impl InitArgs {
    pub fn validate(self) -> Result<InitOptions, FlagError> {
        let config_workspace = self.config_workspace.filter(|w| !w.is_empty()).ok_or_else(
            || {
                flag_err(
                    "--config-workspace",
                    "is required (workspace path, logical-cluster name, or URL path starting with / where the InitTargets live)",
                )
            },
        )?;
        if let Err(e) = crate::apis::selector::parse(&self.init_target_selector) {
            return Err(flag_err(
                "--init-target-selector",
                format!(
                    "invalid --init-target-selector {:?}: {e}",
                    self.init_target_selector
                ),
            ));
        }
        self.common.leader_timings()?;
        if self.common.enable_leader_election && self.leader_election_namespace.is_empty() {
            return Err(flag_err(
                "--leader-election-namespace",
                format!(
                    "is required when --enable-leader-election is true: name the namespace in the config workspace that holds the Lease {} (for example default)",
                    crate::init::LEASE_NAME
                ),
            ));
        }
        Ok(InitOptions {
            config_workspace,
            selector: self.init_target_selector,
            leader_election_namespace: self.leader_election_namespace,
            common: self.common,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("syncweave").chain(args.iter().copied()))
    }

    fn sync(args: &[&str]) -> SyncArgs {
        match parse(&[&["sync"], args].concat()).unwrap().command {
            Command::Sync(a) => a,
            other => panic!("expected sync, got {other:?}"),
        }
    }

    #[test]
    fn sync_defaults_match_upstream() {
        let a = sync(&[]);
        assert!(!a.common.enable_leader_election);
        assert_eq!(
            a.common.metrics_address,
            Address(Some("127.0.0.1:8085".parse().unwrap()))
        );
        assert_eq!(a.common.health_address, Address(None));
        assert_eq!(a.common.debug_address, Address(None), "off by default");
        assert_eq!(a.common.log_format, LogFormat::Json);
        assert!(!a.common.log_debug);
    }

    #[test]
    fn go_style_booleans() {
        assert!(
            sync(&["--enable-leader-election"])
                .common
                .enable_leader_election
        );
        assert!(
            sync(&["--enable-leader-election=true"])
                .common
                .enable_leader_election
        );
        assert!(
            !sync(&["--enable-leader-election=false"])
                .common
                .enable_leader_election
        );
        assert!(sync(&["--log-debug=1"]).common.log_debug);
        assert!(parse(&["sync", "--log-debug=maybe"]).is_err());
        // The queue's priority is on unless turned off (a bench switch).
        assert!(sync(&[]).sync_priority);
        assert!(!sync(&["--sync-priority=false"]).sync_priority);
    }

    #[test]
    fn repeated_flags_override_like_pflag() {
        let a = sync(&["--metrics-address", "0", "--metrics-address=127.0.0.1:9090"]);
        assert_eq!(
            a.common.metrics_address,
            Address(Some("127.0.0.1:9090".parse().unwrap()))
        );
        assert!(!sync(&["--log-debug", "--log-debug=false"]).common.log_debug);
    }

    #[test]
    fn zero_disables_addresses() {
        let a = sync(&["--metrics-address", "0", "--health-address=:8081"]);
        assert_eq!(a.common.metrics_address, Address(None));
        assert_eq!(
            a.common.health_address,
            Address(Some("0.0.0.0:8081".parse().unwrap()))
        );
    }

    #[test]
    fn debug_address_is_loopback_only() {
        for (flag, want) in [
            ("127.0.0.1:8086", "127.0.0.1:8086"),
            ("localhost:8086", "127.0.0.1:8086"),
            ("[::1]:8086", "[::1]:8086"),
        ] {
            assert_eq!(
                sync(&["--debug-address", flag]).common.debug_address,
                Address(Some(want.parse().unwrap())),
                "{flag}"
            );
        }
        assert_eq!(
            sync(&["--debug-address=0"]).common.debug_address,
            Address(None)
        );
        for bad in ["0.0.0.0:8086", ":8086", "10.0.0.5:8086", "[::]:8086"] {
            let e = parse(&["sync", "--debug-address", bad])
                .unwrap_err()
                .to_string();
            assert!(e.contains("not a loopback address"), "{bad}: {e}");
            assert!(e.contains("kubectl port-forward"), "{bad}: {e}");
        }
        let e = parse(&["init", "--debug-address=example.com:1"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a host:port address"), "{e}");
    }

    #[test]
    fn log_format_is_case_insensitive() {
        assert_eq!(
            sync(&["--log-format", "console"]).common.log_format,
            LogFormat::Console
        );
        assert_eq!(
            sync(&["--log-format=json"]).common.log_format,
            LogFormat::Json
        );
        assert!(parse(&["sync", "--log-format", "xml"]).is_err());
    }

    #[test]
    fn required_flags_are_named() {
        let e = sync(&[]).validate().unwrap_err();
        assert_eq!(e.flag, "--kcp-kubeconfig");
        let e = sync(&["--kcp-kubeconfig", "x"]).validate().unwrap_err();
        assert_eq!(e.flag, "--namespace");
        let e = sync(&["--kcp-kubeconfig", "x", "--namespace", "n"])
            .validate()
            .unwrap_err();
        assert_eq!(e.flag, "--apiexportendpointslice-ref");
    }

    #[test]
    fn agent_name_defaults_from_slice() {
        let o = sync(&[
            "--kcp-kubeconfig",
            "x",
            "--namespace",
            "n",
            "--apiexportendpointslice-ref",
            "my-api",
        ])
        .validate()
        .unwrap();
        assert_eq!(o.agent_name, "my-api-syncagent");
        let e = sync(&[
            "--kcp-kubeconfig",
            "x",
            "--namespace",
            "n",
            "--apiexportendpointslice-ref",
            "s",
            "--agent-name",
            "Bad_Name",
        ])
        .validate()
        .unwrap_err();
        assert_eq!(e.flag, "--agent-name");
    }

    #[test]
    fn disabled_controllers_are_checked() {
        let base = [
            "--kcp-kubeconfig",
            "x",
            "--namespace",
            "n",
            "--apiexportendpointslice-ref",
            "s",
        ];
        let o = sync(&[&base[..], &["--disabled-controllers", "apiexport,sync"]].concat())
            .validate()
            .unwrap();
        assert_eq!(o.disabled_controllers, vec!["apiexport", "sync"]);
        let e = sync(&[&base[..], &["--disabled-controllers=bogus"]].concat())
            .validate()
            .unwrap_err();
        assert_eq!(e.flag, "--disabled-controllers");
    }

    #[test]
    fn init_requires_config_workspace() {
        let Command::Init(a) = parse(&["init"]).unwrap().command else {
            panic!()
        };
        assert_eq!(a.validate().unwrap_err().flag, "--config-workspace");
        let Command::Init(a) = parse(&[
            "init",
            "--config-workspace",
            "root:cfg",
            "--init-target-selector",
            "a in (b",
        ])
        .unwrap()
        .command
        else {
            panic!()
        };
        assert_eq!(a.validate().unwrap_err().flag, "--init-target-selector");
    }

    /// As upstream: the namespace is required with leader election, and
    /// only then.
    #[test]
    fn init_leader_election_needs_a_namespace() {
        let init = |extra: &[&str]| {
            let Command::Init(a) =
                parse(&[&["init", "--config-workspace", "root:cfg"][..], extra].concat())
                    .unwrap()
                    .command
            else {
                panic!()
            };
            a.validate()
        };
        let e = init(&["--enable-leader-election"]).unwrap_err();
        assert_eq!(e.flag, "--leader-election-namespace");
        assert!(e.to_string().contains("init-agent.kcp.io"), "{e}");
        let o = init(&[
            "--enable-leader-election",
            "--leader-election-namespace",
            "kcp-init-agent",
        ])
        .unwrap();
        assert_eq!(o.leader_election_namespace, "kcp-init-agent");
        assert!(init(&[]).is_ok());
        // A URL path is a config workspace too.
        let Command::Init(a) = parse(&["init", "--config-workspace", "/services/x/clusters/*"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert_eq!(
            a.validate().unwrap().config_workspace,
            "/services/x/clusters/*"
        );
    }
}
