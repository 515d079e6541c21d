//! The plugin author's side: the `syncweave` CLI run as its own process
//! with caches of its own, as on a laptop or in CI, and a Python virtualenv
//! holding the SDK the way a scaffolded project's README installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use sha2::Digest as _;

use crate::registry::Registry;

/// The syncweave checkout these tests run from.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the checkout")
}

/// The path of example plugin `name`, as examples/build.sh (run by
/// tests/run.sh) leaves it in target/plugins.
pub fn example_plugin(name: &str) -> String {
    let p = repo().join("target/plugins").join(format!("{name}.wasm"));
    let p = p.canonicalize().unwrap_or_else(|_| {
        panic!(
            "{} not built: run tests/run.sh (or examples/build.sh)",
            p.display()
        )
    });
    p.to_string_lossy().into_owned()
}

/// The `syncweave` binary with its source and compiled caches under
/// `<dir>/cache`, and without the registry settings a developer's shell may
/// carry (`SYNCWEAVE_PLUGIN_CA_FILE`, `DOCKER_CONFIG`): every test says
/// which CA and credentials it uses.
#[derive(Debug, Clone)]
pub struct Cli {
    binary: PathBuf,
    cache: PathBuf,
    env: Vec<(String, String)>,
}

impl Cli {
    pub fn new(binary: &Path, dir: &Path) -> Cli {
        Cli {
            binary: binary.to_path_buf(),
            cache: dir.join("cache"),
            env: Vec::new(),
        }
    }

    /// Set `key` to `value` in the environment of every command.
    pub fn env(mut self, key: &str, value: &str) -> Cli {
        self.env.push((key.into(), value.into()));
        self
    }

    /// `syncweave <args>`, to run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.binary);
        cmd.args(args)
            .env("SYNCWEAVE_CACHE_DIR", &self.cache)
            .env("NO_COLOR", "1")
            .env_remove("SYNCWEAVE_PLUGIN_CA_FILE")
            .env_remove("DOCKER_CONFIG")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Run `syncweave <args>` with `env` on top.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args)
            .envs(env.iter().copied())
            .output()
            .expect("syncweave runs")
    }

    /// `syncweave plugin keygen --out PREFIX`: writes PREFIX.key and
    /// PREFIX.pub; the public key (PEM).
    pub fn keygen(&self, prefix: &Path) -> String {
        let out = self.run(
            &["plugin", "keygen", "--out", prefix.to_str().unwrap()],
            &[],
        );
        succeeded(out, "plugin keygen");
        let public = prefix.with_extension("pub");
        std::fs::read_to_string(&public)
            .unwrap_or_else(|e| panic!("reading {}: {e}", public.display()))
    }

    /// `syncweave plugin push FILE TARGET --docker-config … --ca-file …
    /// <extra>` to `reg`; the digest-pinned reference it printed, checked.
    pub fn push(
        &self,
        reg: &Registry,
        docker: &Path,
        file: &Path,
        target: &str,
        extra: &[&str],
    ) -> String {
        let mut args = vec![
            "plugin",
            "push",
            file.to_str().unwrap(),
            target,
            "--docker-config",
            docker.to_str().unwrap(),
            "--ca-file",
            reg.ca_file.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = succeeded(self.run(&args, &[]), "plugin push");
        let pinned = out.trim().to_string();
        let repo = target.rsplit_once(':').unwrap().0;
        assert!(
            pinned.starts_with(&format!("{repo}@sha256:")) && pinned.len() == repo.len() + 72,
            "push prints the digest-pinned reference, got {pinned:?}"
        );
        pinned
    }
}

/// stdout of a command that must have succeeded (else a panic showing
/// both streams).
pub fn succeeded(o: Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8 output")
}

/// stderr of a command that must have failed.
pub fn failed(o: Output, what: &str) -> String {
    assert!(
        !o.status.success(),
        "{what} should fail, but printed:\n{}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `sha256:…` digest of an `oci://…@sha256:…` reference.
pub fn digest_of(pinned: &str) -> &str {
    pinned.rsplit_once('@').expect("a pinned reference").1
}

/// The fingerprint messages give a public key: `sha256:` and the first 16
/// hex digits of the SHA-256 of its DER SubjectPublicKeyInfo.
pub fn key_fingerprint(pub_pem: &str) -> String {
    let b64: String = pub_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("a PEM public key");
    format!("sha256:{}", &hex::encode(sha2::Sha256::digest(der))[..16])
}

/// A fresh virtualenv (seeing the machine's componentize-py and pytest)
/// with the Python SDK pip-installed from the checkout, as a scaffolded
/// project's README says.
pub struct PythonEnv {
    pub venv: PathBuf,
    /// Its interpreter.
    pub python: PathBuf,
    /// `PATH` with the virtualenv's `bin` first.
    path: String,
}

impl PythonEnv {
    /// Create it at `<dir>/venv`.
    pub fn new(dir: &Path) -> PythonEnv {
        let venv = dir.join("venv");
        succeeded(
            Command::new("python3")
                .args(["-m", "venv", "--system-site-packages"])
                .arg(&venv)
                .output()
                .expect("python3 runs"),
            "python3 -m venv",
        );
        let python = venv.join("bin/python");
        succeeded(
            Command::new(&python)
                .args(["-m", "pip", "install", "--quiet"])
                .arg(repo().join("sdk/python"))
                .output()
                .expect("pip runs"),
            "pip install sdk/python",
        );
        let path = format!(
            "{}:{}",
            venv.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        PythonEnv { venv, python, path }
    }

    /// Run `cmd` inside the virtualenv, as after `source venv/bin/activate`.
    pub fn activate(&self, cmd: &mut Command) {
        cmd.env("VIRTUAL_ENV", &self.venv).env("PATH", &self.path);
    }
}
