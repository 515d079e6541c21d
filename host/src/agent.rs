//! Agent entry points for the two roles.
use crate::cli::{InitOptions, SyncOptions};

pub async fn run_sync(opts: SyncOptions) -> anyhow::Result<()> {
    anyhow::bail!("sync role not wired yet: {opts:?}")
}

pub async fn run_init(opts: InitOptions) -> anyhow::Result<()> {
    anyhow::bail!("init role not wired yet: {opts:?}")
}
