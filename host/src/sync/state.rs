//! The last state synced for each kcp object, kept on the service cluster
//! (as upstream: one Secret per primary object in the agent's namespace) so
//! the next sync can compute a three-way merge patch and restarts lose
//! nothing.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use serde_json::{Value, json};

use super::ObjectKey;
use super::labels::*;

#[derive(Clone)]
pub struct StateStore {
    api: Api<Secret>,
}

impl StateStore {
    pub fn new(client: Client, namespace: &str) -> Self {
        StateStore {
            api: Api::namespaced(client, namespace),
        }
    }

    /// Secret name: `obj-state-<cluster>-<sha1 of the primary's identity>`.
    pub fn secret_name(key: &ObjectKey, api_version: &str, kind: &str) -> String {
        let ident = json!({
            "apiVersion": api_version,
            "kind": kind,
            "name": key.name,
            "namespace": key.namespace.clone().unwrap_or_default(),
        });
        let mut h = sha1_hex(&ident.to_string());
        h.truncate(20);
        format!("obj-state-{}-{h}", key.cluster)
    }

    /// Data key for one object (the primary or a related object).
    pub fn data_key(key: &ObjectKey) -> String {
        let ident = json!({
            "ClusterName": key.cluster,
            "WorkspacePath": "",
            "Namespace": key.namespace.clone().unwrap_or_default(),
            "Name": key.name,
        });
        sha1_hex(&format!("{ident}\n"))
    }

    pub async fn get(
        &self,
        key: &ObjectKey,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<Value>, kube::Error> {
        let Some(secret) = self
            .api
            .get_opt(&Self::secret_name(key, api_version, kind))
            .await?
        else {
            return Ok(None);
        };
        let raw = secret
            .data
            .as_ref()
            .and_then(|d| d.get(&Self::data_key(key)));
        // A corrupt state is treated as no state: the syncer then falls back
        // to a full update, which repairs it.
        Ok(raw.and_then(|b| serde_json::from_slice(&b.0).ok()))
    }

    pub async fn put(
        &self,
        key: &ObjectKey,
        api_version: &str,
        kind: &str,
        state: &Value,
    ) -> Result<(), kube::Error> {
        let name = Self::secret_name(key, api_version, kind);
        let data_key = Self::data_key(key);
        let bytes = ByteString(serde_json::to_vec(state).expect("JSON serializes"));
        match self.api.get_opt(&name).await? {
            Some(mut s) => {
                s.data
                    .get_or_insert_with(BTreeMap::new)
                    .insert(data_key, bytes);
                self.api.replace(&name, &PostParams::default(), &s).await?;
            }
            None => {
                let mut labels = BTreeMap::from([
                    (OBJECT_STATE_LABEL.to_string(), "true".to_string()),
                    (REMOTE_CLUSTER_LABEL.to_string(), key.cluster.clone()),
                    (REMOTE_NAME_HASH_LABEL.to_string(), sha1_hex(&key.name)),
                ]);
                if let Some(ns) = &key.namespace {
                    labels.insert(REMOTE_NAMESPACE_HASH_LABEL.to_string(), sha1_hex(ns));
                }
                let s = Secret {
                    metadata: ObjectMeta {
                        name: Some(name),
                        labels: Some(labels),
                        ..Default::default()
                    },
                    data: Some(BTreeMap::from([(data_key, bytes)])),
                    ..Default::default()
                };
                self.api.create(&PostParams::default(), &s).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_and_scoped_by_cluster() {
        let k = ObjectKey {
            cluster: "c1".into(),
            namespace: Some("ns".into()),
            name: "n".into(),
        };
        let a = StateStore::secret_name(&k, "example.com/v1", "CronTab");
        assert!(a.starts_with("obj-state-c1-"));
        assert_eq!(a.len(), "obj-state-c1-".len() + 20);
        let k2 = ObjectKey {
            cluster: "c2".into(),
            ..k.clone()
        };
        assert_ne!(a, StateStore::secret_name(&k2, "example.com/v1", "CronTab"));
        assert_eq!(StateStore::data_key(&k).len(), 40);
    }
}
