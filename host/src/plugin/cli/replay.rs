//! `syncweave plugin replay CAPTURE`: run a plugin call that failed in the
//! cluster again, here, from what the agent's debug endpoint captured
//! (`--debug-address`, see docs/operations.md): the same component (fetched
//! by the reference and digest the capture names), the same limits, the
//! same context and arguments. Prints the output, or the classified failure
//! with a symbolized Wasm backtrace (function names from the component's
//! name section; source lines too when it carries DWARF), and says whether
//! it matches the failure in the cluster.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use serde_json::Value;
use syncweave_runtime::{Plugin, PluginFailure, Runtime, RuntimeConfig, World};

use super::SourceArgs;
use crate::plugin::capture::{Capture, CapturedCall, FORMAT};

/// Largest capture document read (the agent keeps them under 1 MiB).
const MAX_CAPTURE_BYTES: usize = 64 << 20;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The capture: its URL on an agent's debug endpoint
    /// (http://127.0.0.1:8086/debug/captures/<id>, reached with `kubectl
    /// port-forward`), a file saved from there, or `-` for stdin.
    pub capture: String,
    /// Run this plugin instead of the one the capture names, e.g. a fixed
    /// build (any reference `plugin test` takes: a file, oci://…).
    #[arg(long, value_name = "REFERENCE")]
    pub plugin: Option<String>,
    /// Use this config (JSON or YAML) instead of the captured one, e.g. to
    /// put back values the capture redacted.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Per-call timeout in milliseconds instead of the captured limit (a
    /// laptop is not the agent's node: timeouts near the limit may go
    /// either way).
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    #[command(flatten)]
    pub source: SourceArgs,
}

pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    super::init_logging();
    let text = read_capture(&args.capture).await?;
    let capture = parse_capture(&text, &args.capture)?;
    let world = crate::plugin::capture::world_of(&capture)
        .map_err(|e| anyhow::anyhow!("capture {}: {e}", args.capture))?;
    let Some(call) = capture.call.clone() else {
        anyhow::bail!(
            "capture {} holds no input to replay: {}",
            args.capture,
            capture
                .omitted
                .as_deref()
                .unwrap_or("the agent did not keep it")
        );
    };
    let mut limits = capture.limits.to_limits();
    if let Some(ms) = args.timeout_ms {
        limits.timeout = Duration::from_millis(ms);
    }

    // The component: the captured reference (pinned to the captured digest),
    // or --plugin.
    let reference = match (&args.plugin, &capture.plugin.source) {
        (Some(p), _) => p.clone(),
        (None, Some(s)) => s.clone(),
        (None, None) => anyhow::bail!(
            "capture {} does not say where plugin {:?} ({}) came from; pass --plugin with the \
             component (a file or oci:// reference of that digest)",
            args.capture,
            capture.plugin.name,
            capture.plugin.digest
        ),
    };
    let mut source = args.source.clone();
    let captured_hex = capture
        .plugin
        .digest
        .strip_prefix("sha256:")
        .unwrap_or(&capture.plugin.digest)
        .to_string();
    if args.plugin.is_none()
        && source.sha256.is_none()
        && reference.to_ascii_lowercase().starts_with("https://")
    {
        // https:// references must be pinned; the capture's digest is the pin.
        source.sha256 = Some(captured_hex.clone());
    }
    let (_, _, _, fetched) = super::fetch(&reference, &source)
        .await
        .with_context(|| format!("fetching plugin {reference:?}"))?;
    if fetched.digest != capture.plugin.digest {
        if args.plugin.is_none() {
            anyhow::bail!(
                "plugin source {reference:?} now has digest {}, but the capture was taken with \
                 {}: the source changed since (a moved tag, a rebuilt file, another syncweave \
                 version's built-in); pass --plugin with the component of that digest",
                fetched.digest,
                capture.plugin.digest
            );
        }
        eprintln!(
            "note: replaying with {reference} ({}), not the captured {}",
            fetched.digest, capture.plugin.digest
        );
    }

    // An engine that reads DWARF, where the component has it, so backtraces
    // name source lines; its compiled cache is kept apart from the agent
    // engine's (another compatibility hash).
    let defaults = RuntimeConfig::default();
    let runtime = Runtime::new(RuntimeConfig {
        backtrace_details: true,
        max_memory_bytes: defaults.max_memory_bytes.max(limits.memory_bytes),
        ..defaults
    })
    .context("starting the Wasm runtime")?;
    let plugin = fetched
        .load(&runtime, &capture.plugin.name, Some(limits))
        .await
        .with_context(|| format!("loading plugin {reference:?}"))?;
    if plugin.world() != world {
        anyhow::bail!(
            "{reference} is a {} plugin, but the capture is a call of a {world}",
            plugin.world()
        );
    }
    let config = match &args.config {
        Some(p) => Some(super::read_document(p, "config")?),
        None => None,
    };

    eprintln!(
        "replaying capture {} ({}): {} of plugin {:?} ({}), limits: timeout {:?}, memory {} MiB, \
         output {} KiB",
        capture.id,
        capture.captured_at,
        call.function,
        capture.plugin.name,
        short(&fetched.digest),
        limits.timeout,
        limits.memory_bytes >> 20,
        limits.max_output_bytes >> 10,
    );
    if !capture.redacted.is_empty() {
        eprintln!(
            "note: the agent redacted {} before keeping the input (Secret data, credentials); \
             the plugin sees placeholders there",
            capture.redacted.join(", ")
        );
    }
    if let Some(env) = &capture.env
        && !env.reads.is_empty()
    {
        eprintln!(
            "note: the call read {} object(s) in the cluster; the replay's reads get the same \
             answers",
            env.reads.len()
        );
    }
    let result = tokio::task::spawn_blocking({
        let plugin = plugin.clone();
        let env = capture.env.clone();
        move || invoke(&plugin, world, &call, env.as_ref(), config.as_deref())
    })
    .await??;
    report(&capture, result)
}

/// The capture's text, from a URL, stdin or a file.
async fn read_capture(from: &str) -> anyhow::Result<String> {
    let lower = from.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        // kube's TLS stack, as the fetcher uses it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("syncweave/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("building the HTTP client")?;
        let resp = client.get(from).send().await.with_context(|| {
            format!(
                "GET {from}; is the agent's debug endpoint forwarded here (`kubectl \
                 port-forward <agent pod> 8086`, with the agent's --debug-address)?"
            )
        })?;
        let status = resp.status();
        let body = resp
            .bytes()
            .await
            .with_context(|| format!("reading {from}"))?;
        if !status.is_success() {
            anyhow::bail!(
                "GET {from}: {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(500)]).trim()
            );
        }
        anyhow::ensure!(
            body.len() <= MAX_CAPTURE_BYTES,
            "{from} is {} bytes, more than a capture can be",
            body.len()
        );
        return String::from_utf8(body.to_vec()).with_context(|| format!("{from} is not UTF-8"));
    }
    if from == "-" {
        return std::io::read_to_string(std::io::stdin()).context("reading the capture from stdin");
    }
    std::fs::read_to_string(from).with_context(|| format!("reading capture file {from}"))
}

fn parse_capture(text: &str, from: &str) -> anyhow::Result<Capture> {
    let v: Value = serde_json::from_str(text).with_context(|| {
        format!("{from} is not JSON (expected a capture from /debug/captures/<id>)")
    })?;
    if let Some(list) = v.get("captures").and_then(Value::as_array) {
        let ids: Vec<String> = list
            .iter()
            .filter_map(|c| {
                Some(format!(
                    "{} ({} of {}: {})",
                    c.get("path")?.as_str()?,
                    c.get("function")?.as_str()?,
                    c.get("plugin")?.as_str()?,
                    c.get("failure")?.as_str()?
                ))
            })
            .collect();
        anyhow::bail!(
            "{from} is the list of captures, not one capture; replay one of them by its path{}",
            if ids.is_empty() {
                " (the list is empty: no plugin call has failed since the agent started)".into()
            } else {
                format!(": {}", ids.join(", "))
            }
        );
    }
    let format = v.get("format").and_then(Value::as_str).unwrap_or("");
    if format != FORMAT {
        anyhow::bail!(
            "{from} is not a syncweave plugin-call capture (format {format:?}, expected {FORMAT:?})"
        );
    }
    serde_json::from_value(v).with_context(|| format!("{from}: malformed capture"))
}

/// The replayed call's result: the output as JSON, or the failure.
fn invoke(
    plugin: &Plugin,
    world: World,
    call: &CapturedCall,
    recorded: Option<&syncweave_runtime::CallRecord>,
    config: Option<&str>,
) -> anyhow::Result<Result<Value, PluginFailure>> {
    let arg = |name: &str| {
        call.arg(name)
            .ok_or_else(|| anyhow::anyhow!("capture: call.{name} is missing"))
    };
    let config = match config {
        Some(c) => c.to_string(),
        None => arg("config")?,
    };
    let ctx = || -> anyhow::Result<syncweave_runtime::CallContext> {
        call.context
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("capture: call.context is missing"))?
            .to_context()
            .map_err(|e| anyhow::anyhow!("capture: {e}"))
    };
    let json = |s: String| serde_json::from_str::<Value>(&s).unwrap_or(Value::String(s));
    // Contract 0.2: the reads get the answers the cluster's call got, and
    // the call the same context values and limits.
    let env = match recorded {
        Some(r) => r.replay_env(),
        None => syncweave_runtime::CallEnv::default(),
    };
    Ok(match world {
        World::Mutator => {
            let (object, other) = (arg("object")?, call.arg("other"));
            plugin
                .mutate_with(&ctx()?, &env, &config, &object, other.as_deref())
                .map(|m| json(m.object))
        }
        World::Namer => plugin
            .name_object_with(&ctx()?, &env, &config, &arg("object")?)
            .map(|n| serde_json::json!({"name": n.name.name, "namespace": n.name.namespace})),
        World::Projector => plugin.project(&config, &arg("crd")?).map(json),
        World::Renderer => plugin
            .render_with(&ctx()?, &env, &config, &arg("template")?, &arg("values")?)
            .map(|r| Value::Array(r.documents.into_iter().map(json).collect())),
    })
}

fn short(digest: &str) -> String {
    match digest.split_once(':') {
        Some((algo, hex)) if hex.len() > 12 => format!("{algo}:{}…", &hex[..12]),
        _ => digest.to_string(),
    }
}

/// Print the outcome beside the cluster's, and fail when the call did.
fn report(capture: &Capture, result: Result<Value, PluginFailure>) -> anyhow::Result<()> {
    let cluster = format!("{}: {}", capture.failure.kind, capture.failure.headline());
    match result {
        Ok(out) => {
            println!("{}", serde_json::to_string_pretty(&out)?);
            eprintln!(
                "the call succeeded here; in the cluster it failed with {cluster} (a fixed \
                 plugin, a timeout this machine beats, or --config/--timeout-ms changed it)"
            );
            Ok(())
        }
        Err(f) => {
            let here = format!("{}: {}", f.kind.as_str(), f.headline());
            eprintln!(
                "plugin {:?} ({}) failed: {here}",
                f.plugin,
                short(&f.digest)
            );
            match &f.backtrace {
                Some(bt) => {
                    // wasmtime's own heading is "error while executing at …".
                    let frames = bt
                        .strip_prefix("error while executing at wasm backtrace:")
                        .unwrap_or(bt);
                    eprintln!("wasm backtrace:{frames}");
                }
                None if f.message.lines().count() > 1 => eprintln!("{}", f.message),
                None => {}
            }
            let same = Some(f.kind) == capture.failure.kind()
                && f.headline() == capture.failure.headline();
            if same {
                eprintln!("reproduced: the call failed in the cluster the same way");
                anyhow::bail!("the replayed call failed: {here} (as in the cluster)")
            }
            anyhow::bail!(
                "the replayed call failed: {here}; in the cluster it failed with {cluster}"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_foreign_documents_are_refused_with_advice() {
        let e = parse_capture(
            r#"{"captures":[{"path":"/debug/captures/3","function":"mutate","plugin":"p","failure":"crash"}]}"#,
            "http://x/debug/captures",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("/debug/captures/3 (mutate of p: crash)"),
            "{e}"
        );
        let e = parse_capture(r#"{"captures":[]}"#, "f").unwrap_err();
        assert!(e.to_string().contains("no plugin call has failed"), "{e}");
        let e = parse_capture(r#"{"kind":"ConfigMap"}"#, "f").unwrap_err();
        assert!(
            e.to_string()
                .contains("not a syncweave plugin-call capture"),
            "{e}"
        );
        let e = parse_capture("nope", "f").unwrap_err();
        assert!(format!("{e:#}").contains("not JSON"), "{e:#}");
    }
}
