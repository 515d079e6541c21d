//! Running the `syncweave` binary as a real process.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

/// A running agent process; killed when dropped. Its combined output goes to
/// a log file whose tail is printed if the test panics.
pub struct Agent {
    pid: u32,
    pub log_file: PathBuf,
}

impl Agent {
    /// Start `binary` (normally `env!("CARGO_BIN_EXE_syncweave")`) with `args`.
    pub fn start(binary: &Path, args: &[String], log_file: PathBuf) -> Result<Agent> {
        let log = std::fs::File::create(&log_file)
            .with_context(|| format!("creating {}", log_file.display()))?;
        let mut cmd = Command::new(binary);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .env("RUST_BACKTRACE", "1");
        let pid = crate::kcp::spawn_owned(cmd)
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(Agent { pid, log_file })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Send `signal` (e.g. `libc::SIGSTOP`, `libc::SIGKILL`).
    pub fn signal(&self, signal: i32) {
        unsafe {
            libc::kill(self.pid as i32, signal);
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_file).unwrap_or_default()
    }

    pub fn log_tail(&self, n: usize) -> String {
        crate::kcp::tail(&self.log_file, n)
    }

    /// Whether the process is still running.
    pub fn is_running(&self) -> bool {
        // A zombie still answers kill(0); check /proc state instead.
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .map(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
            .unwrap_or(false)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "---- agent log ({}) ----\n{}\n----",
                self.log_file.display(),
                self.log_tail(60)
            );
        }
        unsafe {
            libc::kill(self.pid as i32, libc::SIGTERM);
        }
    }
}
