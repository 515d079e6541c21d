//! `syncweave plugin …`: build, inspect and test Wasm plugins locally.
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Build a Rust plugin crate into a Wasm component.
    Build {
        /// Path to the plugin crate (default: current directory).
        #[arg(default_value = ".")]
        path: PathBuf,
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
    anyhow::bail!("plugin command {cmd:?} is not available in this build yet")
}
