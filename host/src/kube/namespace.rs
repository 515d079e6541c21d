//! Creating a namespace on the service cluster when it is missing (the
//! agent's own namespace at start-up, and target namespaces while syncing).

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};

/// Which step of [`ensure`] failed, for the caller's error message.
#[derive(Debug)]
pub struct EnsureError {
    /// `"reading namespace"` or `"creating namespace"`.
    pub action: &'static str,
    pub source: kube::Error,
}

/// Make sure namespace `ns` exists; losing a creation race is success.
pub async fn ensure(client: &Client, ns: &str) -> Result<(), EnsureError> {
    ensure_labelled(client, ns, Default::default()).await
}

/// [`ensure`], creating the namespace with `labels` (an existing one is
/// left as it is).
pub async fn ensure_labelled(
    client: &Client,
    ns: &str,
    labels: std::collections::BTreeMap<String, String>,
) -> Result<(), EnsureError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let existing = api.get_opt(ns).await.map_err(|source| EnsureError {
        action: "reading namespace",
        source,
    })?;
    if existing.is_some() {
        return Ok(());
    }
    let n = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.into()),
            labels: Some(labels).filter(|l| !l.is_empty()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &n).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(source) => Err(EnsureError {
            action: "creating namespace",
            source,
        }),
    }
}
