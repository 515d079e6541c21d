//! How the caches keep an object: serialized, then deflated against the
//! cache's own dictionary.
//!
//! A small Kubernetes object decoded into a tree costs several times its JSON
//! size (every JSON object and label map is a B-tree node of eleven slots),
//! and the kcp objects, their copies and their state Secrets are most of the
//! agent's memory at scale. Deflate on its own halves a typical object. But
//! the objects of one cache are siblings: same kind, same label and
//! annotation keys, same spec shape, often the same values. So each cache
//! keeps the first object it stored as a dictionary, and every object is
//! stored as the continuation of a deflate stream that began with that
//! dictionary: LZ77 matches reach back into it, and what is left is mostly
//! what makes the object different (names, hashes, uid, resourceVersion).
//!
//! Secrets are the exception to "serialized as JSON": their data is base64
//! in JSON, which deflate shrinks by a quarter at most and which matches
//! nothing in a sibling whose values are shifted by a byte. [`Cacheable`]
//! lets a type choose its bytes; Secrets keep UTF-8 values as text.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::DynamicObject;
use miniz_oxide::deflate::core::{
    CompressorOxide, TDEFLFlush, TDEFLStatus, compress_to_output, create_comp_flags_from_zip_params,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// miniz's fastest level: most of the saving at a fraction of the time.
const DEFLATE_LEVEL: i32 = 1;
/// Refuse to inflate more than this (the API server's object limit is
/// 1.5 MiB of JSON; a bigger result is a bug, not an object).
const MAX_OBJECT_BYTES: usize = 8 << 20;
/// An object larger than this does not become a cache's dictionary: deflate
/// only looks back 32 KiB, and every read inflates the dictionary too.
const MAX_DICT_BYTES: usize = 16 << 10;

/// The first byte of a packed object: how the rest was made.
const PLAIN: u8 = 0;
const WITH_DICT: u8 = 1;

/// The bytes a cache keeps for an object, and back.
pub trait Cacheable: kube::Resource + Serialize + DeserializeOwned + Sized {
    fn to_cache_bytes(self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&self)
    }
    fn from_cache_bytes(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

impl Cacheable for DynamicObject {}

/// A Secret without its data, then the data: UTF-8 values as text, the rest
/// as base64 (`None` when the Secret had no `data` at all).
type SecretParts = (
    Secret,
    Option<(BTreeMap<String, String>, BTreeMap<String, ByteString>)>,
);

impl Cacheable for Secret {
    fn to_cache_bytes(mut self) -> serde_json::Result<Vec<u8>> {
        let data = self.data.take().map(|data| {
            let mut text = BTreeMap::new();
            let mut bytes = BTreeMap::new();
            for (k, v) in data {
                match String::from_utf8(v.0) {
                    Ok(s) => {
                        text.insert(k, s);
                    }
                    Err(e) => {
                        bytes.insert(k, ByteString(e.into_bytes()));
                    }
                }
            }
            (text, bytes)
        });
        serde_json::to_vec(&(self, data))
    }

    fn from_cache_bytes(bytes: &[u8]) -> Option<Self> {
        let (mut secret, data): SecretParts = serde_json::from_slice(bytes).ok()?;
        secret.data = data.map(|(text, mut bytes)| {
            bytes.extend(
                text.into_iter()
                    .map(|(k, v)| (k, ByteString(v.into_bytes()))),
            );
            bytes
        });
        Some(secret)
    }
}

/// A cache's deflate dictionary (see the module's doc).
pub struct Dict {
    raw: Box<[u8]>,
    /// `raw` deflated and sync-flushed (so it ends on a byte boundary): the
    /// start of every stream that continues it.
    prefix: Box<[u8]>,
}

fn compressor() -> CompressorOxide {
    // Window bits 0: raw deflate, no zlib header or checksum.
    CompressorOxide::new(create_comp_flags_from_zip_params(DEFLATE_LEVEL, 0, 0))
}

thread_local! {
    /// One compressor per thread, reset for each use: a new one allocates
    /// its hash chains and window (hundreds of KB) for every object packed.
    static COMPRESSOR: std::cell::RefCell<CompressorOxide> = std::cell::RefCell::new(compressor());
}

/// Run `f` with this thread's compressor, fresh as if just made.
fn with_compressor<T>(f: impl FnOnce(&mut CompressorOxide) -> T) -> T {
    COMPRESSOR.with(|c| match c.try_borrow_mut() {
        Ok(mut c) => {
            c.reset();
            f(&mut c)
        }
        // Re-entered (cannot happen: packing does not pack): a new one.
        Err(_) => f(&mut compressor()),
    })
}

/// Feed `input` to `c`, handing what it writes to `out`; false if the
/// compressor did not take all of it (cannot happen with an output callback
/// that takes everything, but a wrong stream must not be stored).
fn feed(c: &mut CompressorOxide, input: &[u8], flush: TDEFLFlush, out: &mut Vec<u8>) -> bool {
    let (status, used) = compress_to_output(c, input, flush, |b| {
        out.extend_from_slice(b);
        true
    });
    let want = match flush {
        TDEFLFlush::Finish => TDEFLStatus::Done,
        _ => TDEFLStatus::Okay,
    };
    status == want && used == input.len()
}

impl Dict {
    fn new(raw: &[u8]) -> Option<Dict> {
        let mut prefix = Vec::new();
        with_compressor(|c| feed(c, raw, TDEFLFlush::Sync, &mut prefix)).then(|| Dict {
            raw: raw.into(),
            prefix: prefix.into(),
        })
    }

    /// `json` deflated as the continuation of this dictionary.
    fn deflate(&self, json: &[u8]) -> Option<Vec<u8>> {
        let mut prefix = Vec::with_capacity(self.prefix.len());
        let mut out = Vec::with_capacity(json.len() / 4 + 16);
        out.push(WITH_DICT);
        with_compressor(|c| {
            feed(c, &self.raw, TDEFLFlush::Sync, &mut prefix)
                && *prefix == *self.prefix
                && feed(c, json, TDEFLFlush::Finish, &mut out)
        })
        .then_some(out)
    }

    fn inflate(&self, rest: &[u8]) -> Option<Vec<u8>> {
        let mut stream = Vec::with_capacity(self.prefix.len() + rest.len());
        stream.extend_from_slice(&self.prefix);
        stream.extend_from_slice(rest);
        let mut json = miniz_oxide::inflate::decompress_to_vec_with_limit(
            &stream,
            self.raw.len() + MAX_OBJECT_BYTES,
        )
        .ok()?;
        if json.get(..self.raw.len())? != &*self.raw {
            return None;
        }
        json.drain(..self.raw.len());
        Some(json)
    }
}

/// Where a cache's dictionary lives: set from the first object it packs that
/// is small enough.
#[derive(Default)]
pub struct DictSlot(OnceLock<Dict>);

impl DictSlot {
    fn for_object(&self, json: &[u8]) -> Option<&Dict> {
        if let Some(d) = self.0.get() {
            return Some(d);
        }
        if json.len() > MAX_DICT_BYTES {
            return None;
        }
        let d = Dict::new(json)?;
        Some(self.0.get_or_init(|| d))
    }

    #[cfg(test)]
    pub fn raw_len(&self) -> usize {
        self.0.get().map_or(0, |d| d.raw.len())
    }
}

/// One cached object: its bytes, deflated, and its resource version.
pub struct Packed {
    bytes: Box<[u8]>,
    pub rv: Option<u64>,
}

impl Packed {
    /// Pack `v` without its managedFields (often the largest part of an
    /// object, never read by the syncer; an update without them keeps the
    /// server's).
    pub fn pack<V: Cacheable>(mut v: V, dict: &DictSlot) -> Option<Packed> {
        v.meta_mut().managed_fields = None;
        let rv = resource_version(&v);
        let json = match v.to_cache_bytes() {
            Ok(json) => json,
            Err(e) => {
                // Cannot happen for objects that came as JSON; not caching
                // one makes its reads go to the API.
                tracing::warn!(error = %e, "cannot cache an object");
                return None;
            }
        };
        let bytes = match dict.for_object(&json).and_then(|d| d.deflate(&json)) {
            Some(b) => b,
            None => {
                let mut b = Vec::with_capacity(json.len() / 2 + 16);
                b.push(PLAIN);
                b.extend(miniz_oxide::deflate::compress_to_vec(
                    &json,
                    DEFLATE_LEVEL as u8,
                ));
                b
            }
        };
        Some(Packed {
            bytes: bytes.into_boxed_slice(),
            rv,
        })
    }

    pub fn unpack<V: Cacheable>(&self, dict: &DictSlot) -> Option<Arc<V>> {
        let (tag, rest) = self.bytes.split_first()?;
        let json = match *tag {
            PLAIN => {
                miniz_oxide::inflate::decompress_to_vec_with_limit(rest, MAX_OBJECT_BYTES).ok()?
            }
            WITH_DICT => dict.0.get()?.inflate(rest)?,
            _ => return None,
        };
        V::from_cache_bytes(&json).map(Arc::new)
    }

    /// Whether `rv` is older than this (both from the same server).
    /// Resource versions are opaque to clients, but kcp's and
    /// kube-apiserver's are etcd revisions; when either does not parse, the
    /// incoming object wins.
    pub fn newer_than(&self, rv: Option<u64>) -> bool {
        matches!((rv, self.rv), (Some(a), Some(b)) if a < b)
    }

    /// What it costs, in bytes (for the tests' size checks).
    #[cfg(test)]
    fn stored_len(&self) -> usize {
        self.bytes.len()
    }
}

pub(crate) fn resource_version<V: kube::Resource>(v: &V) -> Option<u64> {
    v.meta().resource_version.as_deref()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A copy as the agent makes it (identity labels, annotations, spec).
    fn copy(i: usize) -> DynamicObject {
        let hash = |s: &str| {
            use sha1::Digest;
            hex::encode(sha1::Sha1::digest(format!("{s}{i}")))
        };
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {
                "name": format!("{}-{}", &hash("n")[..20], &hash("m")[..20]),
                "namespace": &hash("ns")[..16], "resourceVersion": format!("{}", 1000 + i),
                "uid": format!("23a3ca82-7cc3-41f7-b845-{}", &hash("u")[..12]),
                "creationTimestamp": "2026-11-27T10:54:45Z", "generation": 1,
                "annotations": {"syncagent.kcp.io/remote-object-name": format!("p2-{i:06}"),
                                "syncagent.kcp.io/remote-object-namespace": "default"},
                "labels": {"syncagent.kcp.io/agent-name": "bench-agent",
                           "syncagent.kcp.io/remote-object-cluster": &hash("c")[..16],
                           "syncagent.kcp.io/remote-object-name-hash": hash("nh"),
                           "syncagent.kcp.io/remote-object-namespace-hash": hash("nsh")}},
            "spec": {"cronSpec": "* * * * */5", "image": "bench-image", "replicas": 1}
        }))
        .unwrap()
    }

    /// Kept deflated, a copy costs well under its JSON and comes back whole;
    /// its siblings, deflated against the first, cost well under half of
    /// what deflate alone makes of them.
    #[test]
    fn objects_are_kept_deflated_against_their_cache_and_come_back_whole() {
        let dict = DictSlot::default();
        let first = Packed::pack(copy(0), &dict).unwrap();
        assert_eq!(*first.unpack::<DynamicObject>(&dict).unwrap(), copy(0));
        assert!(dict.raw_len() > 0, "the first object is the dictionary");

        let json = serde_json::to_vec(&copy(7)).unwrap().len();
        let plain =
            miniz_oxide::deflate::compress_to_vec(&serde_json::to_vec(&copy(7)).unwrap(), 1);
        assert!(plain.len() * 10 < json * 7, "{} of {json}", plain.len());
        let sibling = Packed::pack(copy(7), &dict).unwrap();
        assert!(
            sibling.stored_len() * 2 < plain.len(),
            "{} bytes against the dictionary, {} without, {json} of JSON",
            sibling.stored_len(),
            plain.len()
        );
        assert_eq!(*sibling.unpack::<DynamicObject>(&dict).unwrap(), copy(7));
        assert_eq!(sibling.rv, Some(1007));
    }

    /// An object too large to be a dictionary is packed on its own, and a
    /// later small one becomes the dictionary.
    #[test]
    fn a_large_first_object_is_not_the_dictionary() {
        let dict = DictSlot::default();
        let mut big = copy(1);
        big.data["spec"]["blob"] = json!("x".repeat(MAX_DICT_BYTES + 1));
        let p = Packed::pack(big.clone(), &dict).unwrap();
        assert_eq!(dict.raw_len(), 0);
        assert_eq!(*p.unpack::<DynamicObject>(&dict).unwrap(), big);
        let q = Packed::pack(copy(2), &dict).unwrap();
        assert!(dict.raw_len() > 0);
        assert_eq!(*q.unpack::<DynamicObject>(&dict).unwrap(), copy(2));
        assert_eq!(*p.unpack::<DynamicObject>(&dict).unwrap(), big);
    }

    /// A state Secret comes back as it was (text and binary values, no data
    /// at all, empty data), and its JSON state is kept as text, not base64.
    #[test]
    fn secrets_come_back_whole_with_their_text_kept_as_text() {
        let state = br#"{"apiVersion":"example.com/v1","kind":"CronTab","metadata":{"name":"p2-000001","namespace":"default"},"spec":{"cronSpec":"* * * * */5","image":"bench-image","replicas":1}}"#;
        let mut data = BTreeMap::new();
        data.insert("state".to_string(), ByteString(state.to_vec()));
        data.insert("bin".to_string(), ByteString(vec![0xff, 0x00, 0x80]));
        let with = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some("obj-state-1".into()),
                namespace: Some("kcp-system".into()),
                resource_version: Some("55".into()),
                ..Default::default()
            },
            data: Some(data),
            ..Default::default()
        };
        let bytes = with.clone().to_cache_bytes().unwrap();
        assert!(
            String::from_utf8_lossy(&bytes).contains(r#"\"cronSpec\":\"* * * * */5\""#),
            "state kept as text"
        );
        let none = Secret {
            data: None,
            ..with.clone()
        };
        let empty = Secret {
            data: Some(BTreeMap::new()),
            ..with.clone()
        };
        let dict = DictSlot::default();
        for s in [with, none, empty] {
            let p = Packed::pack(s.clone(), &dict).unwrap();
            assert_eq!(*p.unpack::<Secret>(&dict).unwrap(), s);
            assert_eq!(p.rv, Some(55));
        }
    }

    /// An object packed against one cache's dictionary is not decoded
    /// without it.
    #[test]
    fn an_entry_needs_its_own_dictionary() {
        let dict = DictSlot::default();
        let _ = Packed::pack(copy(0), &dict).unwrap();
        let q = Packed::pack(copy(4), &dict).unwrap();
        assert!(q.unpack::<DynamicObject>(&DictSlot::default()).is_none());
        assert_eq!(*q.unpack::<DynamicObject>(&dict).unwrap(), copy(4));
    }
}
