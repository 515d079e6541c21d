//! A loopback TCP proxy a test can cut, to partition one agent from one
//! server while everything else keeps reaching it.
//!
//! Cutting black-holes the link, like a network partition: open connections
//! stay open but nothing more is forwarded either way, and new connections
//! are accepted and then never answered. A client sees requests hang, not a
//! quick "connection refused", which is the harder case for a leader that
//! must notice it can no longer renew.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub port: u16,
    cut: watch::Sender<bool>,
    /// Cut by refusing (connections closed, new ones dropped at once)
    /// instead of black-holing.
    refuse: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Forward 127.0.0.1:<port> to 127.0.0.1:`target`.
    pub async fn start(target: u16) -> Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (cut, rx) = watch::channel(false);
        let refuse = Arc::new(AtomicBool::new(false));
        let refusing = refuse.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let rx = rx.clone();
                if *rx.borrow() && refusing.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let refusing = refusing.clone();
                tokio::spawn(async move {
                    if *rx.borrow() {
                        // Partitioned: hold the connection, answer nothing.
                        hold(client, rx).await;
                        return;
                    }
                    let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
                        return;
                    };
                    forward(client, server, rx, refusing).await;
                });
            }
        });
        Ok(Proxy {
            port,
            cut,
            refuse,
            task,
        })
    }

    /// Partition: stop forwarding in both directions.
    pub fn cut(&self) {
        let _ = self.cut.send(true);
    }

    /// Partition by refusing: open connections are closed and new ones
    /// dropped, so requests fail at once instead of hanging.
    pub fn refuse(&self) {
        self.refuse.store(true, Ordering::SeqCst);
        let _ = self.cut.send(true);
    }

    /// Heal the partition for new connections.
    pub fn restore(&self) {
        let _ = self.cut.send(false);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn hold(client: TcpStream, mut rx: watch::Receiver<bool>) {
    while *rx.borrow() {
        if rx.changed().await.is_err() {
            break;
        }
    }
    drop(client);
}

/// Copy both ways until either side closes; once cut, stop copying but keep
/// both sockets open (until the partition heals, then close them).
async fn forward(
    client: TcpStream,
    server: TcpStream,
    rx: watch::Receiver<bool>,
    refuse: Arc<AtomicBool>,
) {
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let stopped = Arc::new(AtomicBool::new(false));
    let up = pump(cr, sw, rx.clone(), stopped.clone(), refuse.clone());
    let down = pump(sr, cw, rx, stopped, refuse);
    let _ = tokio::join!(up, down);
}

async fn pump<R, W>(
    mut from: R,
    mut to: W,
    mut rx: watch::Receiver<bool>,
    stopped: Arc<AtomicBool>,
    refuse: Arc<AtomicBool>,
) where
    R: AsyncReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if *rx.borrow() && refuse.load(Ordering::SeqCst) {
            // Refused: close both sides now.
            stopped.store(true, Ordering::SeqCst);
            return;
        }
        if *rx.borrow() || stopped.load(Ordering::SeqCst) {
            // Black-holed: keep the sockets, forward nothing, until healed.
            while *rx.borrow() {
                if rx.changed().await.is_err() {
                    return;
                }
            }
            stopped.store(true, Ordering::SeqCst);
            return;
        }
        tokio::select! {
            n = from.read(&mut buf) => match n {
                Ok(0) | Err(_) => {
                    stopped.store(true, Ordering::SeqCst);
                    let _ = to.shutdown().await;
                    return;
                }
                Ok(n) => {
                    if *rx.borrow() {
                        continue;
                    }
                    if to.write_all(&buf[..n]).await.is_err() {
                        stopped.store(true, Ordering::SeqCst);
                        return;
                    }
                }
            },
            _ = rx.changed() => {}
        }
    }
}
