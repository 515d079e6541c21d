//! `syncweave plugin bench`: what a plugin costs, beside the built-in of the
//! same kind, measured the way the agent runs plugins.
//!
//! - compile: the component compiled into an empty cache directory (what an
//!   agent pays the first time it sees a digest); for a built-in, whose
//!   code is precompiled into the binary, the load of that code (marked
//!   `*`), unless it does not fit this machine and was compiled;
//! - cached load: the same digest loaded by a new runtime from that cache
//!   (what a restarted agent pays);
//! - calls: each on a fresh instance, as production calls are, one after
//!   another on one thread (calls/s is 1 / mean call time, not a
//!   concurrency figure);
//! - peak guest memory: the most linear memory one call's instance held.
//!
//! The built-in runs its own first worked example from `describe()`; the
//! plugin runs `--input`/`--config`, or its own first worked example.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;
use syncweave_runtime::{CallContext, Direction, Plugin, Runtime, RuntimeConfig, World};

use crate::plugin::fetch::{Fetched, PluginRef};

#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// Plugin reference, in any form `plugin inspect` takes.
    pub reference: String,
    /// Input document (JSON or YAML). Default: the input of the plugin's
    /// first worked example in describe().
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Plugin config (JSON or YAML). Default: the first worked example's
    /// config with its input, else null.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Renderers: the template text (required for them).
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Calls to time per plugin (fewer if --max-seconds runs out first).
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub calls: usize,
    /// Time budget for the calls of each plugin.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub max_seconds: u64,
    /// Do not compare with the built-in of the same kind.
    #[arg(long)]
    pub no_builtin: bool,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: super::SourceArgs,
    #[command(flatten)]
    pub limits: super::LimitArgs,
}

/// One plugin's figures.
#[derive(Debug, Serialize)]
pub struct Figures {
    pub plugin: String,
    pub world: String,
    pub digest: String,
    pub size_bytes: usize,
    /// Which input the calls used.
    pub input: String,
    pub compile_ms: f64,
    /// The first load used the code precompiled into the binary (a
    /// built-in), so `compile_ms` is that load, not a compile.
    pub precompiled: bool,
    pub cached_load_ms: f64,
    /// Whether the cached load did come from the cache (else it compiled).
    pub cached_from_disk: bool,
    pub calls: usize,
    pub calls_per_second: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub peak_guest_memory_bytes: usize,
}

/// What one call needs.
struct Call {
    config: String,
    input: String,
    template: Option<String>,
    label: String,
    /// Contract 0.2: the worked example's read fixtures (served from memory,
    /// as the agent serves reads from its caches) and context values.
    reads: Option<std::sync::Arc<dyn syncweave_runtime::ReadHost>>,
    values: Vec<(String, String)>,
}

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    // The timed loads below use fresh runtimes with a cache directory of
    // their own; this one only fetches.
    let (_fetch_rt, fetcher, r, fetched) = super::fetch(&args.reference, &args.source).await?;
    let limits = args.limits.limits();
    let name = r.display_name();

    let mut rows = Vec::new();
    let (mine, world) = bench_one(&fetched, &name, limits, &args, false).await?;
    rows.push(mine);
    if !args.no_builtin {
        let builtin = match world {
            World::Mutator => "mutation",
            World::Namer => "naming",
            World::Projector => "projection",
            World::Renderer => "renderer",
        };
        let b = PluginRef::parse(builtin, None, "").map_err(|e| anyhow::anyhow!(e.message))?;
        let fetched = fetcher.fetch(&b).await?;
        match bench_one(
            &fetched,
            &format!("built-in {builtin}"),
            limits,
            &args,
            true,
        )
        .await
        {
            Ok((row, _)) => rows.push(row),
            Err(e) => eprintln!("built-in {builtin}: not compared: {e:#}"),
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print_table(&rows);
    }
    Ok(())
}

/// Compile, load from cache and call one plugin. `builtin` runs the
/// plugin's own example whatever the flags say.
async fn bench_one(
    fetched: &Fetched,
    name: &str,
    limits: syncweave_runtime::Limits,
    args: &BenchArgs,
    builtin: bool,
) -> anyhow::Result<(Figures, World)> {
    let cache = tempdir()?;
    let cfg = || RuntimeConfig {
        cache_dir: Some(cache.clone()),
        ..RuntimeConfig::default()
    };
    let rt = Runtime::new(cfg())?;
    let t = Instant::now();
    let plugin = fetched.load(&rt, name, Some(limits)).await?;
    let compile = t.elapsed();
    let precompiled = rt.stats().precompiled > 0;
    let rt2 = Runtime::new(cfg())?;
    let t = Instant::now();
    let again = fetched.load(&rt2, name, Some(limits)).await?;
    let cached_load = t.elapsed();
    let from_disk = rt2.stats().disk_hits > 0;
    drop(again);
    let _ = std::fs::remove_dir_all(&cache);

    let world = plugin.world();
    let (calls, budget) = (args.calls.max(1), Duration::from_secs(args.max_seconds));
    let (plugin2, args2) = (plugin.clone(), args.clone());
    // Guest calls are blocking CPU work.
    let (label, mut times) = tokio::task::spawn_blocking(move || {
        let call = what_to_call(&plugin2, &args2, builtin)?;
        let times = time_calls(&plugin2, &call, calls, budget)?;
        anyhow::Ok((call.label, times))
    })
    .await??;
    times.sort();
    let n = times.len();
    let total: Duration = times.iter().sum();
    let at = |q: f64| times[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    Ok((
        Figures {
            plugin: name.to_string(),
            world: world.as_str().to_string(),
            digest: plugin.digest().to_string(),
            size_bytes: plugin.size(),
            input: label,
            compile_ms: ms(compile),
            precompiled,
            cached_load_ms: ms(cached_load),
            cached_from_disk: from_disk,
            calls: n,
            calls_per_second: n as f64 / total.as_secs_f64().max(1e-9),
            p50_us: us(at(0.50)),
            p99_us: us(at(0.99)),
            peak_guest_memory_bytes: plugin.peak_memory_bytes(),
        },
        world,
    ))
}

fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "syncweave-plugin-bench-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

fn what_to_call(plugin: &Plugin, args: &BenchArgs, builtin: bool) -> anyhow::Result<Call> {
    let example = || -> anyhow::Result<syncweave_runtime::Fixture> {
        plugin
            .describe()?
            .examples
            .into_iter()
            .next()
            .with_context(|| {
                format!(
                    "{} has no worked example in describe(); pass --input (and --config)",
                    plugin.name()
                )
            })
    };
    let (config, input, label, fixtures, values) = match (builtin, &args.input) {
        (false, Some(path)) => (
            match &args.config {
                Some(c) => super::read_document(c, "config")?,
                None => "null".into(),
            },
            super::read_document(path, "input")?,
            path.display().to_string(),
            Vec::new(),
            Vec::new(),
        ),
        _ => {
            let ex = example()?;
            let config = match (&args.config, builtin) {
                (Some(c), false) => super::read_document(c, "config")?,
                _ => ex.config,
            };
            (
                config,
                ex.input,
                format!("example {:?}", ex.name),
                ex.reads,
                ex.values,
            )
        }
    };
    let reads = if fixtures.is_empty() {
        None
    } else {
        let f = syncweave_runtime::FixtureReads::new(&fixtures).map_err(|e| anyhow::anyhow!(e))?;
        Some(std::sync::Arc::new(f) as std::sync::Arc<dyn syncweave_runtime::ReadHost>)
    };
    let template = match plugin.world() {
        World::Renderer if builtin => {
            anyhow::bail!("renderer examples carry no template to time")
        }
        World::Renderer => {
            let path = args
                .template
                .as_deref()
                .context("renderers need --template")?;
            Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("reading template file {}", path.display()))?,
            )
        }
        _ => None,
    };
    plugin.validate_config(&config)?;
    Ok(Call {
        config,
        input,
        template,
        label,
        reads,
        values,
    })
}

/// Time calls on fresh instances until `calls` are done or `budget` is
/// spent; the first call's failure is the answer.
fn time_calls(
    plugin: &Plugin,
    call: &Call,
    calls: usize,
    budget: Duration,
) -> anyhow::Result<Vec<Duration>> {
    let ctx = CallContext {
        cluster_name: "bench-cluster".into(),
        cluster_path: Some("root:bench".into()),
        direction: Direction::KcpToService,
        owner: "bench".into(),
    };
    let env = syncweave_runtime::CallEnv {
        reads: call.reads.clone(),
        values: &call.values,
        ..Default::default()
    };
    let once = || -> Result<(), syncweave_runtime::PluginFailure> {
        match plugin.world() {
            World::Mutator => plugin
                .mutate_with(&ctx, &env, &call.config, &call.input, None)
                .map(drop),
            World::Namer => plugin
                .name_object_with(&ctx, &env, &call.config, &call.input)
                .map(drop),
            World::Projector => plugin.project(&call.config, &call.input).map(drop),
            World::Renderer => plugin
                .render_with(
                    &ctx,
                    &env,
                    &call.config,
                    call.template.as_deref().unwrap_or_default(),
                    &call.input,
                )
                .map(drop),
        }
    };
    once().with_context(|| format!("{} on {}", plugin.name(), call.label))?;
    let started = Instant::now();
    let mut times = Vec::with_capacity(calls);
    while times.len() < calls && started.elapsed() < budget {
        let t = Instant::now();
        once().with_context(|| format!("{} on {}", plugin.name(), call.label))?;
        times.push(t.elapsed());
    }
    Ok(times)
}

fn print_table(rows: &[Figures]) {
    let mib = |b: usize| format!("{:.2} MiB", b as f64 / (1 << 20) as f64);
    println!(
        "{:<28} {:>10}  {:>12} {:>7} {:>9} {:>9} {:>9} {:>12}  input",
        "plugin", "compile", "cached load", "calls", "calls/s", "p50", "p99", "peak memory"
    );
    for r in rows {
        if !r.cached_from_disk {
            println!(
                "({}: the cached load compiled again: is the cache directory writable?)",
                r.plugin
            );
        }
        println!(
            "{:<28} {:>8.1}ms{} {:>10.2}ms {:>7} {:>9.0} {:>7.0}µs {:>7.0}µs {:>12}  {}",
            r.plugin,
            r.compile_ms,
            if r.precompiled { "*" } else { " " },
            r.cached_load_ms,
            r.calls,
            r.calls_per_second,
            r.p50_us,
            r.p99_us,
            mib(r.peak_guest_memory_bytes),
            r.input
        );
    }
    println!(
        "\ncompile: into an empty cache (*: the digest of a built-in, whose code is precompiled into this binary: the load of \
         that code); cached load: a new runtime from that cache; calls: each \
         on a fresh instance, one at a time (as the agent calls plugins); peak memory: the most \
         linear memory one call's instance held."
    );
}
