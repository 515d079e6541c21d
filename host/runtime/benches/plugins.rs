//! Plugin call and load costs, printed as a table.
//!
//!     cargo bench -p syncweave-runtime --bench plugins
//!
//! For a 4 KB object: fresh-instance+call (what every production call pays)
//! and warm call (an instance reused, to separate instantiation from the
//! call itself), per guest language; and cold load compiling vs from the
//! on-disk cache. Rust: the test echo plugin (built on demand; it does almost
//! nothing, so it shows the runtime's own cost) and
//! target/plugins/rust-mutator.wasm when built; Python and JS use
//! target/plugins/{python,js}-mutator.wasm when they exist.
//!
//! Targets: Rust fresh-instance+call <= 20 us; cached cold load of the
//! Python/JS components <= 50 ms.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use syncweave_runtime::build::{BuildOptions, build_crate};
use syncweave_runtime::{CallContext, Direction, Limits, Runtime, RuntimeConfig};

const CONFIG: &str = r#"{"label":{"key":"team","value":"platform"},"copyAnnotation":{"from":"example.com/owner","to":"example.com/previous-owner"}}"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A ConfigMap of about 4 KB, written as the host writes objects for plugins
/// (apiVersion, kind, metadata first).
fn object() -> String {
    let mut data = serde_json::Map::new();
    let mut i = 0;
    loop {
        let obj = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "bench",
                "namespace": "default",
                "labels": {"app": "bench"},
                "annotations": {"example.com/owner": "someone"},
            },
            "data": data,
        });
        let s = syncweave_runtime::object_json(&obj);
        if s.len() >= 4096 {
            return s;
        }
        data.insert(format!("key-{i:03}"), "v".repeat(48).into());
        i += 1;
    }
}

fn ctx() -> CallContext {
    CallContext {
        cluster_name: "2x8fkdtr3b1z".into(),
        cluster_path: Some("root:org:team".into()),
        direction: Direction::KcpToService,
        owner: "configmaps".into(),
    }
}

struct Stats {
    median: Duration,
    p99: Duration,
    mean: Duration,
    n: usize,
}

/// Run `f` for about `budget` (at least `min` times) and summarise.
fn measure(budget: Duration, min: usize, mut f: impl FnMut()) -> Stats {
    for _ in 0..min.min(50) {
        f(); // warm caches, pool slots and branch predictors
    }
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < min || start.elapsed() < budget {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    samples.sort();
    let n = samples.len();
    Stats {
        median: samples[n / 2],
        p99: samples[(n * 99 / 100).min(n - 1)],
        mean: samples.iter().sum::<Duration>() / n as u32,
        n,
    }
}

fn show(label: &str, s: &Stats) {
    println!(
        "  {label:<28} median {:>10.1?}  p99 {:>10.1?}  mean {:>10.1?}  (n={})",
        s.median, s.p99, s.mean, s.n
    );
}

/// The test echo plugin (the runtime's own floor: it barely does anything)
/// and, when built, the Rust example mutator (a realistic guest).
fn rust_components() -> Vec<(String, Vec<u8>)> {
    let mut opts = BuildOptions::new(repo().join("target/test-plugins"));
    opts.packages = vec!["test-echo".into()];
    let built = build_crate(&repo().join("plugins"), &opts).expect("building test-echo");
    let mut out = vec![(
        "test-echo".to_string(),
        std::fs::read(&built[0].path).expect("reading test-echo"),
    )];
    let example = plugins_dir().join("rust-mutator.wasm");
    match std::fs::read(&example) {
        Ok(bytes) => out.push(("rust-mutator".into(), bytes)),
        Err(_) => println!("rust-mutator: skipped (not built: {})", example.display()),
    }
    out
}

/// What a cached load must do besides deserializing: hash the component
/// (its identity) and the compiled artefact (its integrity check).
fn sha256_throughput() -> f64 {
    use sha2::Digest;
    let data = vec![0x5au8; 64 << 20];
    let t = Instant::now();
    std::hint::black_box(sha2::Sha256::digest(&data));
    (data.len() as f64 / (1 << 20) as f64) / t.elapsed().as_secs_f64()
}

fn bench_plugin(name: &str, wasm: &[u8], obj: &str) {
    let size_mb = wasm.len() as f64 / (1 << 20) as f64;
    println!("{name} ({size_mb:.1} MB component)");
    let cache = std::env::temp_dir().join(format!("syncweave-bench-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let cfg = RuntimeConfig {
        cache_dir: Some(cache.clone()),
        ..RuntimeConfig::default()
    };
    // Generous limits: the benchmark measures, it does not enforce.
    let limits = Limits {
        timeout: Duration::from_secs(10),
        memory_bytes: 512 << 20,
        ..Limits::default()
    };

    // Cold load, compiling (empty cache).
    let rt = Runtime::new(cfg.clone()).expect("runtime");
    let t = Instant::now();
    let plugin = match rt.load(name, wasm, Some(limits)) {
        Ok(p) => p,
        Err(e) => {
            println!("  load failed: {e}");
            return;
        }
    };
    let compile = t.elapsed();
    println!("  {:<28} {compile:>10.1?}", "cold load, compiling");

    // Cold load from the disk cache: a fresh Runtime each time, as after a
    // process restart (Runtime::new itself is not counted).
    let mut cached = Vec::new();
    for _ in 0..5 {
        let rt2 = Runtime::new(cfg.clone()).expect("runtime");
        let t = Instant::now();
        rt2.load(name, wasm, Some(limits)).expect("cached load");
        cached.push(t.elapsed());
        assert_eq!(rt2.stats().disk_hits, 1, "expected a cache hit");
    }
    cached.sort();
    println!(
        "  {:<28} {:>10.1?}  (median of 5; fastest {:.1?})",
        "cold load, from cache", cached[2], cached[0]
    );

    let ctx = ctx();
    if let Err(e) = plugin.mutate(&ctx, CONFIG, obj, None) {
        println!("  call failed: {e}");
        return;
    }
    let s = measure(Duration::from_secs(2), 200, || {
        plugin.mutate(&ctx, CONFIG, obj, None).expect("mutate");
    });
    show("fresh instance + call", &s);

    let mut warm = plugin.warm().expect("instantiate");
    let s = measure(Duration::from_secs(2), 200, || {
        warm.mutate(&ctx, CONFIG, obj, None).expect("mutate");
    });
    show("warm call", &s);
    drop(warm);
    let _ = std::fs::remove_dir_all(&cache);
}

/// Plugin names given on the command line (`cargo bench ... -- js-mutator`)
/// select which to run; flags cargo adds (`--bench`) are ignored.
fn selected(name: &str) -> bool {
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    wanted.is_empty() || wanted.iter().any(|w| w == name)
}

/// Where built example components are looked up: `$SYNCWEAVE_BENCH_PLUGINS`
/// or the build's `target/plugins`.
fn plugins_dir() -> PathBuf {
    std::env::var_os("SYNCWEAVE_BENCH_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/plugins"))
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing we
    // need. Either way run once.
    let obj = object();
    println!(
        "syncweave plugin benchmark: {}-byte object, {} CPUs",
        obj.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "sha256: {:.0} MB/s (a cached load hashes the component and its compiled form)",
        sha256_throughput()
    );
    for (name, wasm) in rust_components() {
        if selected(&name) {
            bench_plugin(&name, &wasm, &obj);
        }
    }
    for guest in ["python-mutator", "js-mutator"] {
        if !selected(guest) {
            continue;
        }
        let path = plugins_dir().join(format!("{guest}.wasm"));
        match std::fs::read(&path) {
            Ok(wasm) => bench_plugin(guest, &wasm, &obj),
            Err(_) => println!("{guest}: skipped (not built: {})", path.display()),
        }
    }
}
