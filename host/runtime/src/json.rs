//! How the host writes objects for plugins.

use serde_json::Value;

/// Fields written first, in Kubernetes' own order.
const IDENTITY: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Compact JSON for an object with `apiVersion`, `kind` and `metadata` first and
/// the other fields after them, in the order the API server uses (serde_json
/// alone would sort `data` before `kind`). Plugins and the host's own output
/// check then find an object's identity at its start, and the SDK's lazy
/// reader never has to read `spec` or `data` to edit metadata.
/// Anything other than an object is written as usual.
pub fn object_json(value: &Value) -> String {
    let Value::Object(map) = value else {
        return value.to_string();
    };
    let mut out = Vec::with_capacity(256);
    out.push(b'{');
    let firsts = IDENTITY.iter().filter_map(|k| map.get_key_value(*k));
    let rest = map.iter().filter(|(k, _)| !IDENTITY.contains(&k.as_str()));
    for (i, (k, v)) in firsts.chain(rest).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, k).expect("strings serialise");
        out.push(b':');
        serde_json::to_writer(&mut out, v).expect("values serialise");
    }
    out.push(b'}');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_fields_come_first() {
        let v = json!({"data": {"b": 1, "a": 2}, "metadata": {"name": "x"}, "kind": "ConfigMap",
                       "apiVersion": "v1", "type": "t", "binaryData": {}});
        let s = object_json(&v);
        assert_eq!(
            s,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"binaryData":{},"data":{"a":2,"b":1},"type":"t"}"#
        );
        assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
        assert_eq!(object_json(&json!({})), "{}");
        assert_eq!(object_json(&json!({"spec": 1})), r#"{"spec":1}"#);
        assert_eq!(object_json(&json!([1, "a"])), r#"[1,"a"]"#);
    }
}
