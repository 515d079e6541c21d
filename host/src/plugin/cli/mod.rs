//! `syncweave plugin …`: create, build, inspect, test, benchmark and replay
//! Wasm plugins locally, and publish them to OCI registries ([`publish`]).
mod bench;
mod new;
mod project;
mod push;
pub mod render;
mod replay;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};
use syncweave_runtime::build::{BuildOptions, build_crate};
use syncweave_runtime::{
    CallContext, Direction, ExampleOutcome, Limits, Plugin, Runtime, RuntimeConfig, World,
};

use crate::plugin::fetch::{FetchContext, FetchOptions, Location, PluginRef};
use crate::plugin::wasmplugin::selftest::SelfTest;

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Create a plugin project in Rust, Python, JavaScript or Go that builds with
    /// `plugin build` and passes `plugin test --examples` and its own tests as
    /// it is.
    New(new::NewArgs),
    /// Build plugin projects into Wasm components (<out>/<name>.wasm): Rust
    /// crates (cargo), Python projects (componentize-py), JavaScript
    /// projects (rolldown + componentize-js) and Go modules (go build for
    /// wasip1, then the WASI preview 1 adapter).
    Build {
        /// Plugin projects, crates or guest workspaces (default: current
        /// directory). The language is detected: Cargo.toml → Rust,
        /// package.json → JavaScript, pyproject.toml or app.py → Python,
        /// go.mod → Go.
        #[arg(default_value = ".")]
        paths: Vec<PathBuf>,
        /// The projects' language, when detection is ambiguous.
        #[arg(long, value_enum)]
        lang: Option<project::Lang>,
        /// Output directory (default: <repo>/target/plugins inside the syncweave
        /// repository, else ./target/plugins).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Rust: build only this package of a workspace (repeatable).
        #[arg(long = "package", short = 'p', value_name = "NAME")]
        packages: Vec<String>,
        /// Rust: cargo target directory (default: <repo>/target/wasm, shared by all guests).
        #[arg(long, value_name = "DIR")]
        target_dir: Option<PathBuf>,
    },
    /// Show a plugin's world, digest, size, imports, exports and describe() output.
    Inspect {
        /// Plugin reference, in any form a WasmPlugin's source takes: a built-in
        /// name, a file path or file:// URL, https://… (with --sha256),
        /// configmap://<namespace>/<name>/<key> or oci://<repo>@sha256:<digest>.
        reference: String,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        source: SourceArgs,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Run a plugin locally on an input and print the result JSON (or the
    /// classified failure, with a non-zero exit code).
    Test(TestArgs),
    /// Measure a plugin beside the built-in of the same kind: compile and
    /// cached-load time, calls/s, p50/p99 per call, peak guest memory.
    Bench(bench::BenchArgs),
    /// Publish a plugin to an OCI registry as a Wasm artifact (the media
    /// types Kubewarden and wasm-to-oci use), optionally signed; prints the
    /// digest-pinned oci:// reference to put in a WasmPlugin.
    Push(push::PushArgs),
    /// Make an ECDSA P-256 key pair for `plugin push --sign` and
    /// WasmPlugins' spec.signature.
    Keygen(push::KeygenArgs),
    /// Check that an oci:// plugin carries a valid signature by a key.
    Verify(push::VerifyArgs),
    /// Rerun a plugin call that failed in the cluster, from a capture of the
    /// agent's debug endpoint (a URL or a file), under the same limits:
    /// prints the output, or the failure with a Wasm backtrace.
    Replay(replay::ReplayArgs),
}

/// How `plugin inspect|test` fetch a reference (the agent's own fetcher and
/// source cache, so a reference that works here works in a WasmPlugin).
#[derive(Debug, Args, Clone)]
pub struct SourceArgs {
    /// SHA-256 the plugin's bytes must have (64 hex digits); required for
    /// https:// references, checked for any other.
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// Kubeconfig of the cluster holding configmap:// references (default:
    /// $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub registry: push::RegistryArgs,
}

#[derive(Debug, Args, Clone)]
pub struct LimitArgs {
    /// Per-call timeout in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub timeout_ms: u64,
    /// Memory cap per instance in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub memory_mib: u64,
}

impl LimitArgs {
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            timeout: Duration::from_millis(self.timeout_ms),
            memory_bytes: self.memory_mib << 20,
            ..Limits::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DirectionArg {
    KcpToService,
    ServiceToKcp,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    /// Plugin reference, in any form `plugin inspect` takes.
    pub reference: String,
    /// Input document (JSON or YAML; `-` for stdin): the object for mutators
    /// and namers, the CRD for projectors, the values for renderers.
    #[arg(long, value_name = "FILE", required_unless_present = "examples")]
    pub input: Option<PathBuf>,
    /// Instead of one input, run the worked examples the plugin ships in
    /// describe() and compare with their expected output.
    #[arg(long, conflicts_with_all = ["input", "other", "template"])]
    pub examples: bool,
    /// Plugin config (JSON or YAML). Default: null, as the agent passes
    /// when a rule has no config.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Mutators: the object's counterpart on the other side.
    #[arg(long, value_name = "FILE")]
    pub other: Option<PathBuf>,
    /// Renderers: the template text.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Context: logical cluster name.
    #[arg(long, value_name = "NAME", default_value = "2x8fkdtr3b1z")]
    pub cluster_name: String,
    /// Context: workspace path.
    #[arg(long, value_name = "PATH")]
    pub cluster_path: Option<String>,
    /// Context: direction of the sync.
    #[arg(long, value_enum, default_value = "kcp-to-service")]
    pub direction: DirectionArg,
    /// Context: the PublishedResource or InitTarget the call is made for.
    #[arg(long, value_name = "NAME", default_value = "local-test")]
    pub owner: String,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

pub async fn run(cmd: PluginCommand) -> anyhow::Result<()> {
    match cmd {
        PluginCommand::New(args) => new::run(args),
        PluginCommand::Build {
            paths,
            lang,
            out,
            packages,
            target_dir,
        } => build(&paths, lang, out, packages, target_dir),
        PluginCommand::Inspect {
            reference,
            json,
            source,
            limits,
        } => {
            init_logging();
            let (_rt, plugin) = load(&reference, &source, &limits).await?;
            // Guest calls are blocking CPU work.
            tokio::task::spawn_blocking(move || inspect(&plugin, json)).await?
        }
        // No guest log lines: they would drown the figures.
        PluginCommand::Bench(args) => bench::run(args).await,
        PluginCommand::Replay(args) => replay::run(args).await,
        PluginCommand::Test(args) => {
            init_logging();
            let (_rt, plugin) = load(&args.reference, &args.source, &args.limits).await?;
            tokio::task::spawn_blocking(move || test(&plugin, &args)).await?
        }
        PluginCommand::Push(args) => {
            init_logging();
            push::push(args).await
        }
        PluginCommand::Keygen(args) => push::keygen(args),
        PluginCommand::Verify(args) => push::verify(args).await,
    }
}

/// Guest log lines (tracing target "plugin") on stderr, so `plugin test`
/// shows what the plugin said. RUST_LOG overrides.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,plugin=debug"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .try_init();
}

fn build(
    paths: &[PathBuf],
    lang: Option<project::Lang>,
    out: Option<PathBuf>,
    packages: Vec<String>,
    target_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    use project::Lang;
    for path in paths {
        let out_dir = match &out {
            Some(o) => o.clone(),
            None => default_out_dir(path),
        };
        let lang = match lang {
            Some(l) => l,
            None => project::detect(path)?,
        };
        if lang != Lang::Rust && (!packages.is_empty() || target_dir.is_some()) {
            anyhow::bail!(
                "--package and --target-dir are for Rust crates; {} is a {} project",
                path.display(),
                lang.as_str()
            );
        }
        let built = match lang {
            Lang::Rust => {
                let mut opts = BuildOptions::new(out_dir);
                opts.packages = packages.clone();
                opts.target_dir = target_dir.clone();
                build_crate(path, &opts)
                    .with_context(|| format!("building plugin crate {}", path.display()))?
            }
            Lang::Python | Lang::Js => vec![build_other(path, lang, &out_dir)?],
            Lang::Go => vec![build_go(path, &out_dir)?],
        };
        for c in built {
            println!(
                "{}\t{}\t{} bytes\t{}",
                c.name,
                c.path.display(),
                c.size,
                c.digest()
            );
        }
    }
    Ok(())
}

/// Builds a Python or JavaScript project against this binary's contract.
fn build_other(
    path: &Path,
    lang: project::Lang,
    out_dir: &Path,
) -> anyhow::Result<syncweave_runtime::BuiltComponent> {
    use syncweave_runtime::build::{js, python};
    let dir = path
        .canonicalize()
        .with_context(|| format!("{}: no such project directory", path.display()))?;
    let info = match lang {
        project::Lang::Python => project::python_project(&dir)?,
        project::Lang::Js => project::js_project(&dir)?,
        project::Lang::Rust | project::Lang::Go => {
            unreachable!("Rust crates and Go modules have builders of their own")
        }
    };
    // The tools read WIT from disk: give them the contract this binary speaks.
    let scratch = std::env::temp_dir().join(format!("syncweave-wit-{}", std::process::id()));
    let wit = project::write_wit(&scratch)
        .with_context(|| format!("writing the plugin contract to {}", scratch.display()))?;
    let result = if lang == project::Lang::Python {
        // PYTHONPATH entries are searched as python3 would, after the project.
        let python_path = std::env::var_os("PYTHONPATH")
            .map(|p| {
                std::env::split_paths(&p)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let project = python::PythonProject {
            dir,
            name: info.name,
            world: info.world,
            app: info.entry,
            wit,
            python_path,
        };
        python::build_python(&project, out_dir, true)
    } else {
        let project = js::JsProject {
            dir,
            name: info.name,
            world: info.world,
            entry: info.entry.into(),
            wit,
        };
        js::build_js(&project, out_dir, true)
    };
    let _ = std::fs::remove_dir_all(&scratch);
    result.with_context(|| {
        format!(
            "building {} plugin project {}",
            lang.as_str(),
            path.display()
        )
    })
}

/// Builds a Go module: the world and contract come from the role package its
/// main package imports (see `syncweave_runtime::build::go`).
fn build_go(path: &Path, out_dir: &Path) -> anyhow::Result<syncweave_runtime::BuiltComponent> {
    use syncweave_runtime::build::go;
    let dir = path
        .canonicalize()
        .with_context(|| format!("{}: no such project directory", path.display()))?;
    let project = go::go_project(&dir)?;
    go::build_go(&project, out_dir, true)
        .with_context(|| format!("building Go plugin project {}", path.display()))
}

/// `<repo>/target/plugins` when `crate_path` lies inside a syncweave checkout
/// (recognised by its `wit/plugin.wit`), else `./target/plugins`.
fn default_out_dir(crate_path: &Path) -> PathBuf {
    let abs = crate_path
        .canonicalize()
        .unwrap_or_else(|_| crate_path.to_path_buf());
    abs.ancestors()
        .find(|d| d.join("wit/plugin.wit").is_file() && d.join("plugins/Cargo.toml").is_file())
        .map(|repo| repo.join("target/plugins"))
        .unwrap_or_else(|| PathBuf::from("target/plugins"))
}

/// Fetch `reference` the way the agent does (verified against every pin,
/// through the same source cache) and load it.
async fn load(
    reference: &str,
    source: &SourceArgs,
    limits: &LimitArgs,
) -> anyhow::Result<(Runtime, std::sync::Arc<Plugin>)> {
    let (runtime, _, r, fetched) = fetch(reference, source).await?;
    let plugin = fetched
        .load(&runtime, &r.display_name(), Some(limits.limits()))
        .await?;
    Ok((runtime, plugin))
}

/// Parse `reference` and fetch its bytes the way the agent does. Also
/// returns the runtime and the fetcher (which can fetch more references).
pub(crate) async fn fetch(
    reference: &str,
    source: &SourceArgs,
) -> anyhow::Result<(
    Runtime,
    FetchContext,
    PluginRef,
    crate::plugin::fetch::Fetched,
)> {
    let r = PluginRef::parse(reference, source.sha256.as_deref(), "").map_err(|e| {
        let what = if e.field == "sha256" {
            "--sha256".to_string()
        } else {
            format!("plugin reference {reference:?}")
        };
        anyhow::anyhow!("{what}: {}", e.message)
    })?;
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let service = match &r.location {
        Location::ConfigMap { .. } => {
            let cfg = crate::kube::kubeconfig::load_service(source.kubeconfig.as_deref())
                .await
                .context("configmap:// references read the ConfigMap from a cluster")?;
            Some(kube::Client::try_from(cfg).context("connecting to the cluster")?)
        }
        _ => None,
    };
    let fetcher = FetchContext::new(
        source
            .registry
            .options(FetchOptions::for_runtime(&runtime, service)),
    )?;
    let access = source.registry.access(&r)?;
    let fetched = fetcher.fetch_with(&r, &access).await?;
    Ok((runtime, fetcher, r, fetched))
}

fn inspect(plugin: &Plugin, as_json: bool) -> anyhow::Result<()> {
    let info = plugin.describe()?;
    if as_json {
        let doc = json!({
            "name": plugin.name(),
            "world": plugin.world().as_str(),
            "contract": plugin.contract_version().as_str(),
            "digest": plugin.digest(),
            "size": plugin.size(),
            "imports": plugin.imports(),
            "exports": plugin.exports(),
            "describe": info,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!("plugin:      {}", plugin.name());
    println!("world:       {}", plugin.world());
    println!(
        "contract:    syncweave:plugin@{}",
        plugin.contract_version()
    );
    println!("digest:      {}", plugin.digest());
    println!("size:        {} bytes", plugin.size());
    println!("exports:");
    for e in plugin.exports() {
        println!("  {e}");
    }
    println!("imports:");
    if plugin.imports().is_empty() {
        println!("  (none)");
    }
    for i in plugin.imports() {
        let note = if i.starts_with("wasi:") {
            "  (linked, nothing granted)"
        } else {
            ""
        };
        println!("  {i}{note}");
    }
    println!("describe():");
    println!("  name:        {}", info.name);
    println!("  version:     {}", info.version);
    println!("  description: {}", info.description);
    match &info.config_schema {
        Some(s) => {
            let pretty = serde_json::from_str::<Value>(s)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| s.clone());
            println!("  config schema:");
            for line in pretty.lines() {
                println!("    {line}");
            }
        }
        None => println!("  config schema: (none)"),
    }
    if info.examples.is_empty() {
        println!("  examples:    (none)");
    } else {
        println!("  examples:");
        for ex in &info.examples {
            println!(
                "    {}{}",
                ex.name,
                if ex.expected.is_some() {
                    " (with expected output)"
                } else {
                    ""
                }
            );
        }
    }
    Ok(())
}

/// Read a JSON or YAML document (`-` = stdin) and return it as JSON text.
pub(crate) fn read_document(path: &Path, what: &str) -> anyhow::Result<String> {
    let text = if path == Path::new("-") {
        std::io::read_to_string(std::io::stdin()).context("reading stdin")?
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("reading {what} file {}", path.display()))?
    };
    if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
        return Ok(text);
    }
    let v: Value = serde_yaml_ng::from_str(&text)
        .with_context(|| format!("{what} file {} is neither JSON nor YAML", path.display()))?;
    Ok(syncweave_runtime::object_json(&v))
}

fn test(plugin: &Plugin, args: &TestArgs) -> anyhow::Result<()> {
    if args.examples {
        return test_examples(plugin);
    }
    let input_path = args.input.as_deref().expect("clap requires --input");
    let input = read_document(input_path, "input")?;
    let config = match &args.config {
        Some(p) => read_document(p, "config")?,
        None => "null".to_string(),
    };
    let ctx = CallContext {
        cluster_name: args.cluster_name.clone(),
        cluster_path: args.cluster_path.clone(),
        direction: match args.direction {
            DirectionArg::KcpToService => Direction::KcpToService,
            DirectionArg::ServiceToKcp => Direction::ServiceToKcp,
        },
        owner: args.owner.clone(),
    };
    let world = plugin.world();
    if args.other.is_some() && world != World::Mutator {
        anyhow::bail!(
            "--other is only for mutators; {} is a {world}",
            plugin.name()
        );
    }
    if args.template.is_some() != (world == World::Renderer) {
        anyhow::bail!(
            "--template is required for renderers and only for them; {} is a {world}",
            plugin.name()
        );
    }
    plugin.validate_config(&config)?;
    let result: Value = match world {
        World::Mutator => {
            let other = args
                .other
                .as_deref()
                .map(|p| read_document(p, "other"))
                .transpose()?;
            let out = plugin.mutate(&ctx, &config, &input, other.as_deref())?;
            serde_json::from_str(&out)?
        }
        World::Namer => {
            let n = plugin.name_object(&ctx, &config, &input)?;
            json!({"name": n.name, "namespace": n.namespace})
        }
        World::Projector => serde_json::from_str(&plugin.project(&config, &input)?)?,
        World::Renderer => {
            let path = args.template.as_deref().expect("checked above");
            let template = std::fs::read_to_string(path)
                .with_context(|| format!("reading template file {}", path.display()))?;
            let docs = plugin.render(&ctx, &config, &template, &input)?;
            Value::Array(
                docs.iter()
                    .map(|d| serde_json::from_str(d))
                    .collect::<Result<_, _>>()?,
            )
        }
    };
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(())
}

/// How many times `plugin test --examples` runs a round whose only failures
/// are timeouts.
const EXAMPLE_ATTEMPTS: u32 = 3;

/// The worked examples of `describe()`, run and compared the same way the
/// agent's self-test gate does before it uses a digest
/// (`crate::plugin::wasmplugin::selftest`).
fn test_examples(plugin: &Plugin) -> anyhow::Result<()> {
    use syncweave_runtime::ExampleVerdict;
    let outcomes =
        examples_with_retries(|| plugin.run_examples(), |note| eprintln!("note: {note}"))?;
    if outcomes.is_empty() {
        println!(
            "{}: no worked examples in describe() (the agent's self-test has nothing to run)",
            plugin.name()
        );
        return Ok(());
    }
    for o in &outcomes {
        match &o.verdict {
            ExampleVerdict::Passed => println!("ok      {}", o.name),
            ExampleVerdict::Failed(why) => println!("FAILED  {}: {why}", o.name),
        }
    }
    let report = SelfTest::from_outcomes(outcomes);
    println!("{} passed, {} failed", report.passed, report.failed.len());
    if let Some(summary) = report.failure_summary() {
        let hint = if report.is_transient() {
            format!(
                " (timed out in all {EXAMPLE_ATTEMPTS} attempts: make the call faster, or give it \
                 more time with --timeout-ms here and spec.limits.timeout in its WasmPlugin)"
            )
        } else {
            String::new()
        };
        anyhow::bail!(
            "{} ({}): {summary}{hint}; the agent refuses a digest whose examples fail",
            plugin.name(),
            plugin.digest()
        );
    }
    Ok(())
}

/// Run the examples, again while a round's only failures are timeouts, up to
/// [`EXAMPLE_ATTEMPTS`] rounds. The call limit is wall-clock time: on a busy
/// machine a call can miss it for reasons outside the plugin. The agent
/// retries such a self-test too; a plugin that is truly too slow times out
/// every time. `note` is told about each rerun.
fn examples_with_retries<E>(
    mut run: impl FnMut() -> Result<Vec<ExampleOutcome>, E>,
    mut note: impl FnMut(String),
) -> Result<Vec<ExampleOutcome>, E> {
    let mut outcomes = run()?;
    for attempt in 1..EXAMPLE_ATTEMPTS {
        let report = SelfTest::from_outcomes(outcomes.clone());
        if !report.is_transient() {
            break;
        }
        note(format!(
            "{} (attempt {attempt} of {EXAMPLE_ATTEMPTS}); running the examples again: the \
             limit is wall-clock time, which a busy machine can miss",
            report.failure_summary().unwrap_or_default(),
        ));
        outcomes = run()?;
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use syncweave_runtime::{ExampleFailure, ExampleVerdict, FailureKind, PluginFailure};

    fn outcome(name: &str, kind: Option<FailureKind>) -> ExampleOutcome {
        ExampleOutcome {
            name: name.into(),
            verdict: match kind {
                None => ExampleVerdict::Passed,
                Some(k) => ExampleVerdict::Failed(ExampleFailure::Call(PluginFailure::new(
                    "p",
                    "sha256:00",
                    k,
                    "call exceeded 100ms",
                ))),
            },
        }
    }

    /// Runs `rounds` in order, counting the calls.
    fn run_rounds(rounds: Vec<Vec<ExampleOutcome>>) -> (Vec<ExampleOutcome>, usize, Vec<String>) {
        let mut rounds = rounds.into_iter();
        let mut calls = 0;
        let mut notes = Vec::new();
        let out = examples_with_retries(
            || {
                calls += 1;
                Ok::<_, ()>(rounds.next().expect("no more rounds"))
            },
            |n| notes.push(n),
        )
        .unwrap();
        (out, calls, notes)
    }

    #[test]
    fn a_round_that_only_timed_out_runs_again() {
        let (out, calls, notes) = run_rounds(vec![
            vec![outcome("a", None), outcome("b", Some(FailureKind::Timeout))],
            vec![outcome("a", None), outcome("b", None)],
        ]);
        assert_eq!(calls, 2);
        assert!(out.iter().all(|o| o.verdict.passed()));
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("\"b\" failed") && notes[0].contains("attempt 1 of 3"),
            "{}",
            notes[0]
        );
    }

    #[test]
    fn a_plugin_that_always_times_out_fails_after_three_rounds() {
        let timeout = || vec![outcome("b", Some(FailureKind::Timeout))];
        let (out, calls, notes) = run_rounds(vec![timeout(), timeout(), timeout()]);
        assert_eq!(calls, 3);
        assert_eq!(notes.len(), 2);
        assert!(!out[0].verdict.passed());
    }

    #[test]
    fn a_wrong_answer_is_not_run_again() {
        let rejected = FailureKind::PluginError(syncweave_runtime::PluginErrorKind::Rejected);
        // A timeout beside a deterministic failure: rerunning cannot pass.
        let (_, calls, notes) = run_rounds(vec![vec![
            outcome("a", Some(rejected)),
            outcome("b", Some(FailureKind::Timeout)),
        ]]);
        assert_eq!((calls, notes.len()), (1, 0));
        let (_, calls, _) = run_rounds(vec![vec![outcome("a", None)]]);
        assert_eq!(calls, 1);
    }

    #[test]
    fn out_dir_defaults_to_repo_target_plugins() {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let repo = repo.canonicalize().unwrap();
        assert_eq!(
            default_out_dir(&repo.join("host")),
            repo.join("target/plugins")
        );
        assert_eq!(
            default_out_dir(Path::new("/")),
            PathBuf::from("target/plugins")
        );
    }

    #[test]
    fn documents_may_be_yaml() {
        let dir = std::env::temp_dir().join(format!("sw-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let yaml = dir.join("o.yaml");
        std::fs::write(
            &yaml,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
        )
        .unwrap();
        let json: Value = serde_json::from_str(&read_document(&yaml, "input").unwrap()).unwrap();
        assert_eq!(json["metadata"]["name"], "a");
        let bad = dir.join("bad");
        std::fs::write(&bad, "{ nope: [").unwrap();
        let e = read_document(&bad, "input").unwrap_err();
        assert!(format!("{e:#}").contains("neither JSON nor YAML"), "{e:#}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
