use std::process::ExitCode;

use clap::Parser;
use syncweave::cli::{Cli, Command};

fn main() -> ExitCode {
    // Before any other thread exists (the runtime's are started below).
    syncweave::ops::malloc::limit_arenas();
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(run()),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Version => {
            println!(
                "syncweave {} (plugin contract {})",
                syncweave::ops::version::VERSION,
                syncweave::ops::version::WIT_PACKAGE
            );
            Ok(())
        }
        Command::Sync(args) => match args.validate() {
            Ok(opts) => {
                syncweave::ops::logging::init(opts.common.log_format, opts.common.log_debug);
                syncweave::roles::run_sync(opts).await
            }
            Err(e) => Err(e.into()),
        },
        Command::Init(args) => match args.validate() {
            Ok(opts) => {
                syncweave::ops::logging::init(opts.common.log_format, opts.common.log_debug);
                syncweave::roles::run_init(opts).await
            }
            Err(e) => Err(e.into()),
        },
        Command::Plugin(cmd) => syncweave::plugin::cli::run(cmd).await,
        Command::Render(args) => return syncweave::plugin::cli::render::run(args).await,
        Command::Cluster(cmd) => syncweave::register::run(cmd).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, the whole cause chain: "what failed: why".
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
