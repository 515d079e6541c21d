//! Bounded in-memory stdout/stderr for WASI guests.
//!
//! wasmtime-wasi's `MemoryOutputPipe` closes the stream once full, which
//! makes a chatty Python or JS guest fail its call. This pipe keeps the first
//! `capacity` bytes and silently counts the rest, so logging can never break
//! or slow down a plugin.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

#[derive(Debug, Default)]
struct Buffer {
    data: Vec<u8>,
    dropped: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct BoundedPipe {
    capacity: usize,
    buf: Arc<Mutex<Buffer>>,
}

impl BoundedPipe {
    pub fn new(capacity: usize) -> Self {
        BoundedPipe {
            capacity,
            buf: Arc::default(),
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut b = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        let room = self.capacity.saturating_sub(b.data.len());
        let take = room.min(bytes.len());
        b.data.extend_from_slice(&bytes[..take]);
        b.dropped += bytes.len() - take;
    }

    /// The captured bytes and how many were dropped over capacity.
    pub fn take(&self) -> (Vec<u8>, usize) {
        let mut b = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        (std::mem::take(&mut b.data), std::mem::take(&mut b.dropped))
    }
}

impl IsTerminal for BoundedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for BoundedPipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for BoundedPipe {
    async fn ready(&mut self) {}
}

impl OutputStream for BoundedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always writable: excess is dropped, never refused.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for BoundedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_bytes_and_counts_the_rest() {
        let mut p = BoundedPipe::new(5);
        OutputStream::write(&mut p, Bytes::from_static(b"hello world")).unwrap();
        OutputStream::write(&mut p, Bytes::from_static(b"!")).unwrap();
        assert_eq!(p.check_write().unwrap(), 64 * 1024);
        assert_eq!(p.take(), (b"hello".to_vec(), 7));
        assert_eq!(p.take(), (Vec::new(), 0));
    }
}
