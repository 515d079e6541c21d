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
        Agent::start_with_env(binary, args, &[], log_file)
    }

    /// [`Agent::start`] with extra environment variables.
    pub fn start_with_env(
        binary: &Path,
        args: &[String],
        env: &[(String, String)],
        log_file: PathBuf,
    ) -> Result<Agent> {
        let log = std::fs::File::create(&log_file)
            .with_context(|| format!("creating {}", log_file.display()))?;
        let mut cmd = Command::new(binary);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .env("RUST_BACKTRACE", "1")
            .envs(env.iter().map(|(k, v)| (k, v)));
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

    /// How many reconcile passes of the kcp object `key` (`cluster|ns/name`,
    /// as the agent prints keys) the agent has finished so far, from its
    /// debug log. A test that checks that something did *not* happen waits
    /// for passes first: proof that the agent looked, then the absence.
    pub fn passes(&self, key: &str) -> usize {
        let wanted = format!("key={key}");
        strip_ansi(&self.log())
            .lines()
            .filter(|l| l.contains("reconcile pass finished"))
            .filter(|l| l.split_whitespace().any(|field| field == wanted))
            .count()
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

/// `s` without terminal colour codes (the agent colours its console log).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            // CSI: parameters up to a final byte in '@'..='~'.
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn colour_codes_are_stripped() {
        let line = "\u{1b}[2m2026\u{1b}[0m \u{1b}[34mDEBUG\u{1b}[0m reconcile pass finished \u{1b}[3mkey\u{1b}[0m\u{1b}[2m=\u{1b}[0ma|ns/n";
        assert_eq!(
            super::strip_ansi(line),
            "2026 DEBUG reconcile pass finished key=a|ns/n"
        );
    }
}
