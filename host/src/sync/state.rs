//! The last state synced for each kcp object, kept on the service cluster
//! (as upstream: one Secret per primary object in the agent's namespace) so
//! the next sync can compute a three-way merge patch and restarts lose
//! nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use serde_json::{Value, json};

use super::gojson;
use super::labels::*;
use crate::controller::store::ObjectKey;
use crate::controller::store::Store;

/// Names, keys, labels and values match upstream's byte for byte
/// (internal/sync/state_store.go and meta.go in api-syncagent v0.7.0), so
/// this agent can take over the state an upstream agent left behind.
#[derive(Clone)]
pub struct StateStore {
    api: Api<Secret>,
    namespace: String,
    /// The state Secrets by name, fed by the sync controller's watch; read
    /// instead of the API once it has listed them.
    cache: Arc<Store<Secret>>,
}

impl StateStore {
    pub fn new(client: Client, namespace: &str) -> Self {
        StateStore {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            cache: Store::new(|s: &Secret| s.metadata.name.clone()),
        }
    }

    pub fn api(&self) -> Api<Secret> {
        self.api.clone()
    }

    pub fn cache(&self) -> Arc<Store<Secret>> {
        self.cache.clone()
    }

    async fn read(&self, name: &str) -> Result<Option<Secret>, kube::Error> {
        if self.cache.synced() {
            return Ok(self.cache.get(name).map(|s| Secret::clone(&s)));
        }
        self.api.get_opt(name).await
    }

    /// Secret name: `obj-state-<cluster>-<hash>`, where the hash is the
    /// first 20 hex digits of upstream's `crypto.Hash` of a Go map holding
    /// the kcp object's apiVersion, kind, namespace and name.
    pub fn secret_name(key: &ObjectKey, api_version: &str, kind: &str) -> String {
        let ident = json!({
            "apiVersion": api_version,
            "kind": kind,
            "name": key.name,
            "namespace": key.namespace.as_deref().unwrap_or_default(),
        });
        let mut h = sha1_hex_json_line(&gojson::value_string(&ident));
        h.truncate(20);
        format!("obj-state-{}-{h}", key.cluster)
    }

    /// Data key for one object: upstream's `crypto.Hash` of its Go
    /// `objectKey` struct, fields in declaration order; the workspace path
    /// is always empty there.
    pub fn data_key(key: &ObjectKey) -> String {
        sha1_hex_json_line(&gojson::string_struct(&[
            ("ClusterName", &key.cluster),
            ("WorkspacePath", ""),
            ("Namespace", key.namespace.as_deref().unwrap_or_default()),
            ("Name", &key.name),
        ]))
    }

    /// The Secret's labels: the primary object's identity labels plus the
    /// object-state marker.
    pub fn secret_labels(key: &ObjectKey) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            (OBJECT_STATE_LABEL.to_string(), "true".to_string()),
            (REMOTE_CLUSTER_LABEL.to_string(), key.cluster.clone()),
            (REMOTE_NAME_HASH_LABEL.to_string(), sha1_hex(&key.name)),
        ]);
        if let Some(ns) = key.namespace.as_deref().filter(|ns| !ns.is_empty()) {
            labels.insert(REMOTE_NAMESPACE_HASH_LABEL.to_string(), sha1_hex(ns));
        }
        labels
    }

    /// The stored value: the object as Go's `json.Marshal` writes an
    /// unstructured object (sorted keys, Go escaping), without a newline.
    /// The most a Secret's data may hold (keys and values together), as the
    /// API server validates it.
    pub const MAX_SECRET_DATA: usize = 1024 * 1024;

    /// The bytes the state entry of `key` takes in its Secret, when that is
    /// more than a Secret may hold: such an object cannot be synced (its
    /// state could not be stored, so every pass would rewrite the copy).
    pub fn too_large(key: &ObjectKey, state: &Value) -> Option<usize> {
        let bytes = Self::data_key(key).len() + Self::encode_state(state).len();
        (bytes > Self::MAX_SECRET_DATA).then_some(bytes)
    }

    pub fn encode_state(state: &Value) -> Vec<u8> {
        gojson::value_string(state).into_bytes()
    }

    pub async fn get(
        &self,
        key: &ObjectKey,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<Value>, kube::Error> {
        self.get_entry(key, api_version, kind, key).await
    }

    /// The state of `entry` kept in the state Secret of the primary object
    /// `key` (as upstream, related objects share their primary's Secret,
    /// each under its own data key).
    pub async fn get_entry(
        &self,
        key: &ObjectKey,
        api_version: &str,
        kind: &str,
        entry: &ObjectKey,
    ) -> Result<Option<Value>, kube::Error> {
        let Some(secret) = self
            .read(&Self::secret_name(key, api_version, kind))
            .await?
        else {
            return Ok(None);
        };
        let raw = secret
            .data
            .as_ref()
            .and_then(|d| d.get(&Self::data_key(entry)));
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
        self.put_entry(key, api_version, kind, key, state).await
    }

    /// Delete the state Secret of the primary `key` (its related objects'
    /// entries with it), once the object is gone. Upstream leaves these
    /// behind; nothing reads the state of an object that no longer exists,
    /// so an upstream agent taking over later misses nothing.
    pub async fn delete(
        &self,
        key: &ObjectKey,
        api_version: &str,
        kind: &str,
    ) -> Result<bool, kube::Error> {
        let name = Self::secret_name(key, api_version, kind);
        if self.cache.synced() && self.cache.get(&name).is_none() {
            return Ok(false);
        }
        match self.api.delete(&name, &Default::default()).await {
            Ok(_) => {
                self.cache.forget(&self.namespace, &name);
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                self.cache.forget(&self.namespace, &name);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Store the state of `entry` in the state Secret of the primary `key`.
    pub async fn put_entry(
        &self,
        key: &ObjectKey,
        api_version: &str,
        kind: &str,
        entry: &ObjectKey,
        state: &Value,
    ) -> Result<(), kube::Error> {
        let name = Self::secret_name(key, api_version, kind);
        let data_key = Self::data_key(entry);
        let bytes = ByteString(Self::encode_state(state));
        let labels = Self::secret_labels(key);
        match self.read(&name).await? {
            Some(mut s) => {
                let data = s.data.get_or_insert_with(BTreeMap::new);
                if data.get(&data_key) == Some(&bytes)
                    && s.metadata.labels.as_ref() == Some(&labels)
                {
                    // Nothing to change: leave the Secret alone.
                    return Ok(());
                }
                data.insert(data_key, bytes);
                // Upstream sets the whole label set on every write.
                s.metadata.labels = Some(labels);
                let written = self.api.replace(&name, &PostParams::default(), &s).await?;
                self.cache.write_through(written);
            }
            None => {
                let s = Secret {
                    metadata: ObjectMeta {
                        name: Some(name),
                        labels: Some(labels),
                        ..Default::default()
                    },
                    data: Some(BTreeMap::from([(data_key, bytes)])),
                    ..Default::default()
                };
                let written = self.api.create(&PostParams::default(), &s).await?;
                self.cache.write_through(written);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors computed with upstream api-syncagent v0.7.0's own code: a
    // throwaway test in its internal/sync package called
    // newKubernetesBackend("agent-ns", syncSide{object, clusterName}, …)
    // and printed the Secret name and labels, newObjectKey(object,
    // clusterName, logicalcluster.None).Key() for the data key, and
    // snapshotObject(object, ["status"]) for the stored value.

    use crate::testing::object_key as key;

    #[test]
    fn a_state_over_a_secrets_limit_is_too_large() {
        let k = key("abc", Some("ns"), "big");
        let fits = serde_json::json!({"spec": {"blob": "x".repeat(1024 * 1024 - 200)}});
        assert_eq!(StateStore::too_large(&k, &fits), None);
        let big = serde_json::json!({"spec": {"blob": "x".repeat(1024 * 1024)}});
        let bytes = StateStore::too_large(&k, &big).expect("too large");
        assert!(bytes > StateStore::MAX_SECRET_DATA, "{bytes}");
    }

    #[test]
    fn secret_names_and_data_keys_match_upstream() {
        let cases = [
            (
                key("2v9rqo4z1m0fm8xj", Some("default"), "my-crontab"),
                ("example.com/v2", "CronTab"),
                "obj-state-2v9rqo4z1m0fm8xj-c0a00f9891c944349807",
                "2061ee872b1eda065ab67b85602f3e4bec3ae2b6",
            ),
            (
                key("1x2y3z4w5v6u7t8s", Some("default"), "my-crontab"),
                ("example.com/v2", "CronTab"),
                "obj-state-1x2y3z4w5v6u7t8s-c0a00f9891c944349807",
                "1f6b3d7f29395c81aa97c00c4060ab7fe7744658",
            ),
            (
                key("root", None, "w1"),
                ("example.org/v1alpha1", "Widget"),
                "obj-state-root-dd71452a5f577c5153d3",
                "ba8bf7cfd1add9c71d222fd513662a87f5044b28",
            ),
            (
                key("2v9rqo4z1m0fm8xj", Some("kube-system"), "cfg"),
                ("v1", "ConfigMap"),
                "obj-state-2v9rqo4z1m0fm8xj-f37bb64295e7d1265c94",
                "9982216d1994f846750414cbd58f42d1095fbb80",
            ),
        ];
        for (k, (api_version, kind), name, data_key) in cases {
            assert_eq!(StateStore::secret_name(&k, api_version, kind), name, "{k}");
            assert_eq!(StateStore::data_key(&k), data_key, "{k}");
        }
    }

    #[test]
    fn secret_labels_match_upstream() {
        let labels =
            StateStore::secret_labels(&key("2v9rqo4z1m0fm8xj", Some("default"), "my-crontab"));
        let want = BTreeMap::from([
            (OBJECT_STATE_LABEL, "true"),
            (REMOTE_CLUSTER_LABEL, "2v9rqo4z1m0fm8xj"),
            (
                REMOTE_NAME_HASH_LABEL,
                "5e88753c0b240e5526631d00a18a26e78221e284",
            ),
            (
                REMOTE_NAMESPACE_HASH_LABEL,
                "7505d64a54e061b7acd54ccd58b49dc43500b635",
            ),
        ]);
        let want: BTreeMap<String, String> = want
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(labels, want);

        // Cluster-scoped: no namespace hash.
        let labels = StateStore::secret_labels(&key("root", None, "w1"));
        assert_eq!(labels.len(), 3);
        assert_eq!(
            labels[REMOTE_NAME_HASH_LABEL],
            "2927b4649cf4307f990009a16d33a38ceea4c866"
        );
    }

    #[test]
    fn stored_value_matches_upstream_bytes() {
        let mut obj: Value = serde_json::from_str(
            r#"{"apiVersion":"example.com/v2","kind":"CronTab","metadata":{"name":"my-crontab","namespace":"default","labels":{"app":"a&b"},"annotations":{"note":"<b>bold</b> \u2028 é \t \u0001"}},"spec":{"cronSpec":"*/5 * * * *","ratio":0.5,"big":1e21,"small":0.0000001,"replicas":3,"neg":-2,"list":[true,null,1.5,{}],"empty":""},"status":{"x":1}}"#,
        )
        .expect("valid JSON");
        obj.as_object_mut().expect("object").remove("status");
        let want = r#"{"apiVersion":"example.com/v2","kind":"CronTab","metadata":{"annotations":{"note":"\u003cb\u003ebold\u003c/b\u003e \u2028 é \t \u0001"},"labels":{"app":"a\u0026b"},"name":"my-crontab","namespace":"default"},"spec":{"big":1e+21,"cronSpec":"*/5 * * * *","empty":"","list":[true,null,1.5,{}],"neg":-2,"ratio":0.5,"replicas":3,"small":1e-7}}"#;
        assert_eq!(
            String::from_utf8(StateStore::encode_state(&obj)).unwrap(),
            want
        );
    }
}
