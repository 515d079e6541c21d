//! `syncweave plugin push|keygen|verify`: publish a plugin to an OCI
//! registry as a Wasm artifact, sign it cosign-style, and check signatures;
//! plus the registry options (`--docker-config`, `--ca-file`,
//! `--public-key`) every command that fetches `oci://` references takes.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;
use syncweave_runtime::{Runtime, RuntimeConfig};

use crate::plugin::fetch::credentials::{self, DockerConfig};
use crate::plugin::fetch::{
    Access, FetchContext, FetchOptions, Location, PluginRef, PublicKeys, PushRequest, signature,
};

/// How the CLI reaches registries: credentials, trust, signatures.
#[derive(Debug, Args, Clone, Default)]
pub struct RegistryArgs {
    /// Docker config with registry credentials (auths: auth,
    /// username/password, identitytoken or registrytoken; credential helpers
    /// work too). Default: $DOCKER_CONFIG/config.json, then
    /// ~/.docker/config.json.
    #[arg(long, value_name = "FILE")]
    pub docker_config: Option<PathBuf>,
    /// PEM bundle of CA certificates to trust for the registry, on top of
    /// the system's (default: $SYNCWEAVE_PLUGIN_CA_FILE).
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// oci:// references: require a signature by this public key (PEM; a
    /// file may hold several keys) before the plugin is used.
    #[arg(long, value_name = "FILE")]
    pub public_key: Option<PathBuf>,
}

impl RegistryArgs {
    /// `opts` with `--ca-file` applied.
    pub fn options(&self, mut opts: FetchOptions) -> FetchOptions {
        if let Some(ca) = &self.ca_file {
            opts.ca_file = Some(ca.clone());
        }
        opts
    }

    /// Credentials for `registry` from the docker config (or its credential
    /// helper); `None` when it has none.
    pub fn credentials(
        &self,
        registry: &str,
    ) -> anyhow::Result<Option<crate::plugin::fetch::Credentials>> {
        let (path, explicit) = match &self.docker_config {
            Some(p) => (p.clone(), true),
            None => match DockerConfig::default_path() {
                Some(p) => (p, false),
                None => return Ok(None),
            },
        };
        let config = DockerConfig::load(&path, explicit).map_err(anyhow::Error::msg)?;
        if let Some(c) = config
            .credentials_for(registry)
            .map_err(anyhow::Error::msg)?
        {
            return Ok(Some(c));
        }
        match config.helper_for(registry) {
            Some(helper) => credentials::from_helper(helper, registry).map_err(anyhow::Error::msg),
            None => Ok(None),
        }
    }

    /// What fetching `r` takes: credentials for its registry, and the keys
    /// of `--public-key`.
    pub fn access(&self, r: &PluginRef) -> anyhow::Result<Access> {
        let registry = match &r.location {
            Location::Oci { reference, .. } => {
                Some(reference.split('/').next().unwrap_or_default().to_string())
            }
            _ => None,
        };
        let mut access = Access::anonymous();
        let Some(registry) = registry else {
            if self.public_key.is_some() {
                bail!(
                    "--public-key: signatures are kept in OCI registries; it applies to oci:// references only"
                );
            }
            return Ok(access);
        };
        access.anonymous_hint = format!(
            "the registry requires credentials: `docker login {registry}`, or pass \
             --docker-config with an auths entry for it"
        );
        access.credentials = self.credentials(&registry)?;
        if let Some(path) = &self.public_key {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading --public-key {}", path.display()))?;
            access.keys = Some(
                PublicKeys::parse(&text, &format!("--public-key {}", path.display()))
                    .map_err(anyhow::Error::msg)?,
            );
        }
        Ok(access)
    }
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The plugin component (.wasm), as `syncweave plugin build` writes it.
    pub file: PathBuf,
    /// Where to push: oci://<registry>/<repository>:<tag>.
    pub reference: String,
    /// Sign the pushed digest with this ECDSA P-256 private key (PEM:
    /// `syncweave plugin keygen`, `openssl ecparam -genkey`, or a cosign key
    /// with COSIGN_PASSWORD set). The signature is stored cosign's way, at
    /// tag sha256-<hex>.sig.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    /// Extra manifest annotation (repeatable), e.g.
    /// org.opencontainers.image.source=https://github.com/org/plugin.
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    pub annotations: Vec<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Write <PREFIX>.key (the private key, unencrypted PKCS#8 PEM, mode
    /// 0600) and <PREFIX>.pub (the public key, for WasmPlugins).
    #[arg(long, value_name = "PREFIX", default_value = "syncweave")]
    pub out: PathBuf,
    /// Overwrite existing files.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// oci://<registry>/<repository>@sha256:<digest>
    pub reference: String,
    /// The public key (PEM) the signature must verify with (`--public-key`
    /// means the same here).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Diagnostics go to stderr; stdout carries only the result, for scripts.
fn say(msg: impl AsRef<str>) {
    let _ = writeln!(std::io::stderr(), "{}", msg.as_ref());
}

pub async fn push(args: PushArgs) -> anyhow::Result<()> {
    if args.registry.public_key.is_some() {
        // Shared with the fetching commands; pushing checks no signature.
        bail!(
            "--public-key does not apply to push: sign with --sign KEY, then check with \
             `syncweave plugin verify REFERENCE --key KEY.pub`"
        );
    }
    let target = args
        .reference
        .strip_prefix("oci://")
        .with_context(|| {
            format!(
                "{:?} is not an oci:// reference; write oci://<registry>/<repository>:<tag>",
                args.reference
            )
        })?
        .to_string();
    let mut annotations = BTreeMap::new();
    for a in &args.annotations {
        let (k, v) = a
            .split_once('=')
            .with_context(|| format!("--annotation {a:?} is not KEY=VALUE"))?;
        annotations.insert(k.trim().to_string(), v.to_string());
    }
    let key = match &args.sign {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading signing key {}", path.display()))?;
            let password = std::env::var("COSIGN_PASSWORD").ok();
            Some(
                signature::load_signing_key(
                    &text,
                    &path.display().to_string(),
                    password.as_deref(),
                )
                .map_err(anyhow::Error::msg)?,
            )
        }
        None => None,
    };

    // The same checks as a WasmPlugin's: only a loadable plugin is published.
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let fetcher = FetchContext::new(
        args.registry
            .options(FetchOptions::for_runtime(&runtime, None)),
    )?;
    let file = args.file.display().to_string();
    let r =
        PluginRef::parse(&file, None, "").map_err(|e| anyhow::anyhow!("{file}: {}", e.message))?;
    if !matches!(r.location, Location::File { .. }) {
        bail!("{file}: give the path of a .wasm file");
    }
    let fetched = fetcher.fetch(&r).await?;
    say(format!("checking {file} ({} bytes)…", fetched.bytes.len()));
    let plugin = fetched.load(&runtime, &r.display_name(), None).await.map_err(|f| {
        anyhow::anyhow!(
            "{file} is not a syncweave plugin component: {f}; build it with `syncweave plugin build`"
        )
    })?;
    let (world, info) = {
        let p = plugin.clone();
        tokio::task::spawn_blocking(move || (p.world(), p.describe())).await?
    };
    let info = info.map_err(|f| anyhow::anyhow!("{file}: describe() failed: {f}"))?;
    say(format!(
        "{} {} ({world} plugin, {})",
        info.name,
        if info.version.is_empty() {
            "(no version)"
        } else {
            info.version.as_str()
        },
        fetched.digest
    ));
    let mut defaults = BTreeMap::from([
        (
            "org.opencontainers.image.title".to_string(),
            info.name.clone(),
        ),
        ("dev.syncweave.plugin.world".to_string(), world.to_string()),
    ]);
    if !info.version.is_empty() {
        defaults.insert(
            "org.opencontainers.image.version".into(),
            info.version.clone(),
        );
    }
    if !info.description.is_empty() {
        defaults.insert(
            "org.opencontainers.image.description".into(),
            info.description.clone(),
        );
    }
    defaults.extend(annotations);

    let registry = target.split('/').next().unwrap_or_default().to_string();
    let credentials = args.registry.credentials(&registry)?;
    match &credentials {
        Some(c) => say(format!("using {}", c.describe())),
        None => say(format!(
            "no credentials for {registry}; pushing anonymously"
        )),
    }
    let pushed = fetcher
        .push(
            PushRequest {
                reference: &target,
                wasm: bytes::Bytes::copy_from_slice(&fetched.bytes),
                annotations: defaults,
                credentials,
                sign: key.as_ref(),
            },
            &|m| say(m),
        )
        .await
        .map_err(anyhow::Error::msg)?;
    say(format!(
        "\npushed. Pin this in a WasmPlugin:\n\n  spec:\n    source: {}",
        pushed.pinned
    ));
    if pushed.signature_tag.is_some() {
        say("    signature:\n      publicKey: |\n        <the public key that matches --sign>");
    }
    println!("{}", pushed.pinned);
    Ok(())
}

pub fn keygen(args: KeygenArgs) -> anyhow::Result<()> {
    let with_ext = |ext: &str| {
        let mut s = args.out.clone().into_os_string();
        s.push(ext);
        PathBuf::from(s)
    };
    let (private_path, public_path) = (with_ext(".key"), with_ext(".pub"));
    for p in [&private_path, &public_path] {
        if p.exists() && !args.force {
            bail!(
                "{} exists; choose another --out or pass --force",
                p.display()
            );
        }
    }
    let key = signature::generate().map_err(anyhow::Error::msg)?;
    let private = signature::private_pem(&key).map_err(anyhow::Error::msg)?;
    let public = signature::public_pem(&key).map_err(anyhow::Error::msg)?;
    write_private(&private_path, private.as_bytes())?;
    std::fs::write(&public_path, public.as_bytes())
        .with_context(|| format!("writing {}", public_path.display()))?;
    let fp = signature::PublicKey::of(*key.verifying_key()).fingerprint;
    say(format!(
        "wrote {} (private: keep it secret, unencrypted) and {} (public key {fp})\n\
         sign with `syncweave plugin push --sign {}`; put the .pub file in the WasmPlugin's \
         spec.signature.publicKey",
        private_path.display(),
        public_path.display(),
        private_path.display()
    ));
    Ok(())
}

/// Create `path` readable by its owner only, refusing to follow a link.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

pub async fn verify(args: VerifyArgs) -> anyhow::Result<()> {
    let r = PluginRef::parse(&args.reference, None, "")
        .map_err(|e| anyhow::anyhow!("{}: {}", args.reference, e.message))?;
    if !matches!(r.location, Location::Oci { .. }) {
        bail!(
            "{}: signatures are kept in OCI registries; give oci://<registry>/<repository>@sha256:<digest>",
            args.reference
        );
    }
    let key = match (&args.key, &args.registry.public_key) {
        (Some(k), None) | (None, Some(k)) => k.clone(),
        (Some(_), Some(_)) => {
            bail!("--key and --public-key both name the key to verify with; give one of them")
        }
        (None, None) => bail!(
            "verify needs the public key: --key FILE (`syncweave plugin keygen` writes <prefix>.pub)"
        ),
    };
    let mut registry = args.registry.clone();
    registry.public_key = Some(key);
    let access = registry.access(&r)?;
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let fetcher = FetchContext::new(registry.options(FetchOptions::for_runtime(&runtime, None)))?;
    let verified = fetcher.verify(&r, &access).await?;
    println!("{}: {verified}", args.reference);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(public_key: Option<&str>) -> RegistryArgs {
        RegistryArgs {
            public_key: public_key.map(PathBuf::from),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn push_refuses_a_public_key_it_would_ignore() {
        let e = push(PushArgs {
            file: "plugin.wasm".into(),
            reference: "oci://registry.example/team/plugin:v1".into(),
            sign: None,
            annotations: vec![],
            registry: registry(Some("team.pub")),
        })
        .await
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--public-key does not apply to push") && e.contains("--sign"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn verify_takes_the_key_once() {
        let reference = format!(
            "oci://registry.example/team/plugin@sha256:{}",
            "a".repeat(64)
        );
        for (key, public_key, want) in [
            (None, None, "verify needs the public key: --key FILE"),
            (
                Some("a.pub"),
                Some("b.pub"),
                "--key and --public-key both name the key",
            ),
        ] {
            let e = verify(VerifyArgs {
                reference: reference.clone(),
                key: key.map(PathBuf::from),
                registry: registry(public_key),
            })
            .await
            .unwrap_err()
            .to_string();
            assert!(e.contains(want), "{e}");
        }
        // Either spelling alone reaches the key file.
        for (key, public_key) in [(Some("missing.pub"), None), (None, Some("missing.pub"))] {
            let e = verify(VerifyArgs {
                reference: reference.clone(),
                key: key.map(PathBuf::from),
                registry: registry(public_key),
            })
            .await
            .unwrap_err();
            assert!(
                format!("{e:#}").contains("reading --public-key missing.pub"),
                "{e:#}"
            );
        }
    }
}
