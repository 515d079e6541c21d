//! The agent under test as a child process whose pid we know (for
//! /proc/<pid>/status and /proc/<pid>/stat), killed when the bench exits.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

pub struct AgentProcess {
    pub pid: u32,
    exited: Arc<AtomicBool>,
}

impl AgentProcess {
    pub fn start(binary: &Path, args: &[String], log: &Path) -> Result<AgentProcess> {
        Self::start_with_env(binary, args, &[], log)
    }

    /// [`AgentProcess::start`] with extra environment variables.
    pub fn start_with_env(
        binary: &Path,
        args: &[String],
        env: &[(&str, &Path)],
        log: &Path,
    ) -> Result<AgentProcess> {
        use std::os::unix::process::CommandExt;
        let log =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(binary);
        cmd.args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // Spawned from a thread that lives as long as the child: the death
        // signal fires when the *thread* that forked it ends.
        let exited = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let done = exited.clone();
        std::thread::spawn(move || match cmd.spawn() {
            Ok(mut child) => {
                let _ = tx.send(Ok(child.id()));
                let _ = child.wait();
                done.store(true, Ordering::SeqCst);
                loop {
                    std::thread::park();
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
            }
        });
        let pid = rx
            .recv()?
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(AgentProcess { pid, exited })
    }

    /// Set once the process has exited (for checks outside `self`'s borrow).
    pub fn exited_flag(&self) -> Arc<AtomicBool> {
        self.exited.clone()
    }

    pub fn is_running(&self) -> bool {
        !self.exited.load(Ordering::SeqCst)
    }

    /// A field of /proc/<pid>/status in kB (e.g. `VmHWM`, `VmRSS`).
    pub fn status_kb(&self, field: &str) -> Option<u64> {
        Self::observe(self.pid).status_kb(field)
    }

    /// User + system CPU time used so far, in seconds.
    pub fn cpu_seconds(&self) -> Option<f64> {
        Self::observe(self.pid).cpu_seconds()
    }

    /// Read-only view of process `pid`'s /proc entries.
    pub fn observe(pid: u32) -> ProcView {
        ProcView(pid)
    }

    /// SIGTERM, then SIGKILL if it has not exited within 15 s.
    pub fn stop(&self) {
        unsafe {
            libc::kill(self.pid as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        while self.is_running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if self.is_running() {
            unsafe {
                libc::kill(self.pid as i32, libc::SIGKILL);
            }
            while self.is_running() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if self.is_running() {
            unsafe {
                libc::kill(self.pid as i32, libc::SIGKILL);
            }
        }
    }
}

/// /proc/<pid>/status and /proc/<pid>/stat of a process.
#[derive(Clone, Copy)]
pub struct ProcView(u32);

impl ProcView {
    /// A field of /proc/<pid>/status in kB (e.g. `VmHWM`, `VmRSS`).
    pub fn status_kb(&self, field: &str) -> Option<u64> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.0)).ok()?;
        s.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    }

    /// User + system CPU time used so far, in seconds (utime + stime of
    /// /proc/<pid>/stat).
    pub fn cpu_seconds(&self) -> Option<f64> {
        let s = std::fs::read_to_string(format!("/proc/{}/stat", self.0)).ok()?;
        // Fields after the parenthesised command name; utime and stime are
        // fields 14 and 15 (1-based), i.e. 11 and 12 after ")".
        let rest = s.rsplit_once(')')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Some(ticks as f64 / hz)
    }
}
