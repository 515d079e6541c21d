//! Events on the service cluster, about the provider's own objects
//! (PublishedResources, WasmPlugins): one kube-runtime `Recorder` per
//! service-cluster client, shared by every controller that reports there.
//! It writes `events.k8s.io/v1` Events and turns a repeat of the same Event
//! within minutes into a series (one PATCH of its count) instead of a new
//! object.
//!
//! Consumers' Events in kcp go another way ([`crate::sync::events`]): they
//! pass through the APIExport's virtual workspace, where upstream's
//! permission claim covers core/v1 `events` only, and bindings written for
//! upstream accept exactly that claim.

use kube::Client;
use kube::runtime::events::{Recorder, Reporter};

/// `reportingController` of syncweave's Events on the service cluster.
pub const CONTROLLER: &str = "syncweave";

/// `reportingInstance`: the pod (or host) name, so replicas' Events differ.
pub fn instance() -> String {
    std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| CONTROLLER.into())
}

/// The agent's one recorder for `service`.
pub fn for_service(service: Client) -> Recorder {
    Recorder::new(
        service,
        Reporter {
            controller: CONTROLLER.into(),
            instance: Some(instance()),
        },
    )
}

/// An Event's note: the API server caps it at 1 KiB; the status condition
/// has the full text.
pub fn note(message: &str) -> String {
    const MAX: usize = 1024;
    if message.len() <= MAX {
        return message.to_string();
    }
    let mut end = MAX - 3;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_cut_on_char_boundaries() {
        assert_eq!(note("short"), "short");
        let long = "é".repeat(600);
        let t = note(&long);
        assert!(t.len() <= 1024);
        assert!(t.ends_with("..."));
    }
}
