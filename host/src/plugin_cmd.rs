//! `syncweave plugin …`: build, inspect and test Wasm plugins locally.
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Subcommand;
use syncweave_runtime::build::{BuildOptions, build_crate};

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Build Rust plugin crates into Wasm components (<out>/<crate-name>.wasm).
    Build {
        /// Plugin crates or guest workspaces (default: current directory).
        #[arg(default_value = ".")]
        paths: Vec<PathBuf>,
        /// Output directory (default: <repo>/target/plugins inside the syncweave
        /// repository, else ./target/plugins).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Build only this package of a workspace (repeatable).
        #[arg(long = "package", short = 'p', value_name = "NAME")]
        packages: Vec<String>,
        /// Cargo target directory (default: <repo>/target/wasm, shared by all guests).
        #[arg(long, value_name = "DIR")]
        target_dir: Option<PathBuf>,
    },
    /// Show a plugin's world, exports and describe() output.
    Inspect {
        /// Plugin reference: built-in name, file path or file:// URL.
        reference: String,
    },
    /// Run a plugin locally on an input object.
    Test {
        reference: String,
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

pub async fn run(cmd: PluginCommand) -> anyhow::Result<()> {
    match cmd {
        PluginCommand::Build {
            paths,
            out,
            packages,
            target_dir,
        } => build(&paths, out, packages, target_dir),
        other => anyhow::bail!("plugin command {other:?} is not available in this build yet"),
    }
}

fn build(
    paths: &[PathBuf],
    out: Option<PathBuf>,
    packages: Vec<String>,
    target_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    for path in paths {
        let out_dir = match &out {
            Some(o) => o.clone(),
            None => default_out_dir(path),
        };
        let mut opts = BuildOptions::new(out_dir);
        opts.packages = packages.clone();
        opts.target_dir = target_dir.clone();
        let built = build_crate(path, &opts)
            .with_context(|| format!("building plugin crate {}", path.display()))?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
