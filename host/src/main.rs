use std::process::ExitCode;

use clap::Parser;
use syncweave::cli::{Cli, Command};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Version => {
            println!(
                "syncweave {} (plugin contract {})",
                syncweave::version::VERSION,
                syncweave::version::WIT_PACKAGE
            );
            Ok(())
        }
        Command::Sync(args) => match args.validate() {
            Ok(opts) => {
                syncweave::logging::init(opts.common.log_format, opts.common.log_debug);
                syncweave::agent::run_sync(opts).await
            }
            Err(e) => Err(e.into()),
        },
        Command::Init(args) => match args.validate() {
            Ok(opts) => {
                syncweave::logging::init(opts.common.log_format, opts.common.log_debug);
                syncweave::agent::run_init(opts).await
            }
            Err(e) => Err(e.into()),
        },
        Command::Plugin(cmd) => syncweave::plugin_cli::run(cmd).await,
        Command::Cluster(cmd) => syncweave::cluster::run(cmd).await,
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
