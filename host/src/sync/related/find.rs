//! Finding the originals of a related resource and naming their copies:
//! pure functions over the two primaries (gjson-style references, regular
//! expressions, templated label selectors), with templates run through a
//! [`Templates`] evaluator.

use super::*;

/// Values at a gjson-style `path` of `obj`: dot-separated keys (`\.`
/// escapes a dot), numeric array indices, and `#` to take every element of
/// an array. A missing field gives no values. Arrays give one value each;
/// values are trimmed and then rewritten by the optional regex.
pub fn reference_values(
    obj: &Value,
    r: &RelatedResourceObjectReference,
) -> Result<Vec<String>, String> {
    let found = gjson_get(obj, &r.path);
    let mut values: Vec<String> = match found {
        None => return Ok(vec![]),
        Some(Value::Array(items)) => items.iter().map(value_string).collect(),
        Some(v) => vec![value_string(&v)],
    };
    for v in &mut values {
        *v = v.trim().to_string();
        if let Some(re) = &r.regex {
            *v = apply_regex(v, re)?;
        }
    }
    Ok(values)
}

/// gjson's `String()` of a value: strings as they are, others as JSON,
/// null as empty.
pub(super) fn value_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

pub(super) fn split_path(path: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(n), Some(p)) = (chars.next(), parts.last_mut()) {
                    p.push(n);
                }
            }
            '.' => parts.push(String::new()),
            c => {
                if let Some(p) = parts.last_mut() {
                    p.push(c);
                }
            }
        }
    }
    parts
}

pub(super) fn gjson_get(obj: &Value, path: &str) -> Option<Value> {
    pub(super) fn walk(v: &Value, parts: &[String]) -> Option<Value> {
        let Some((first, rest)) = parts.split_first() else {
            return Some(v.clone());
        };
        match v {
            Value::Array(items) if first == "#" => {
                if rest.is_empty() {
                    return Some(json!(items.len()));
                }
                Some(Value::Array(
                    items.iter().filter_map(|i| walk(i, rest)).collect(),
                ))
            }
            Value::Array(items) => walk(items.get(first.parse::<usize>().ok()?)?, rest),
            Value::Object(m) => walk(m.get(first)?, rest),
            _ => None,
        }
    }
    walk(obj, &split_path(path))
}

/// Upstream's regex rewrite: an empty pattern replaces the value;
/// otherwise every match is replaced (`$1` refers to groups).
pub fn apply_regex(value: &str, re: &RegularExpression) -> Result<String, String> {
    let replacement = re.replacement.as_deref().unwrap_or_default();
    match re.pattern.as_deref().unwrap_or_default() {
        "" => Ok(replacement.to_string()),
        pattern => {
            let expr = regex::Regex::new(pattern)
                .map_err(|e| format!("invalid pattern {pattern:?}: {e}"))?;
            Ok(expr.replace_all(value, replacement).into_owned())
        }
    }
}

/// Pair origin and destination values; the counts must match, and pairs
/// with an empty side are skipped.
pub fn pair_values(
    what: &str,
    origin: Vec<String>,
    dest: Vec<String>,
) -> Result<Vec<(String, String)>, String> {
    if origin.len() != dest.len() {
        return Err(format!(
            "found {} {what} on the origin side, but {} on the destination side",
            origin.len(),
            dest.len()
        ));
    }
    let mut out: Vec<(String, String)> = origin
        .into_iter()
        .zip(dest)
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// The two primaries and where they live, as the templates see them.
pub struct Primaries<'a> {
    pub origin: &'a Value,
    pub dest: &'a Value,
    pub origin_side: RelatedResourceOrigin,
    pub cluster: &'a str,
    pub path: Option<&'a str>,
}

impl Primaries<'_> {
    pub(super) fn local_remote(&self) -> (&Value, &Value) {
        match self.origin_side {
            RelatedResourceOrigin::Service => (self.origin, self.dest),
            RelatedResourceOrigin::Kcp => (self.dest, self.origin),
        }
    }

    pub(super) fn side_name(side: RelatedResourceOrigin) -> &'static str {
        match side {
            RelatedResourceOrigin::Service => "service",
            RelatedResourceOrigin::Kcp => "kcp",
        }
    }

    /// `object.template`: evaluated once per side with `.Side`, `.Object`,
    /// `.ClusterName`, `.ClusterPath`. An empty result on either side means
    /// "nothing (yet)".
    pub async fn template_both_sides(
        &self,
        t: &dyn Templates,
        template: &str,
    ) -> Result<Option<(String, String)>, String> {
        let opposite = match self.origin_side {
            RelatedResourceOrigin::Service => RelatedResourceOrigin::Kcp,
            RelatedResourceOrigin::Kcp => RelatedResourceOrigin::Service,
        };
        let ctx = |side, obj: &Value| {
            json!({
                "Side": Self::side_name(side),
                "Object": obj,
                "ClusterName": self.cluster,
                "ClusterPath": self.path.unwrap_or_default(),
            })
        };
        let (origin_ctx, dest_ctx) = (ctx(self.origin_side, self.origin), ctx(opposite, self.dest));
        let o = t
            .render(self.cluster, template, &origin_ctx)
            .await
            .map_err(|e| format!("evaluating the template on the origin side: {e}"))?;
        let d = t
            .render(self.cluster, template, &dest_ctx)
            .await
            .map_err(|e| format!("evaluating the template on the destination side: {e}"))?;
        Ok((!o.is_empty() && !d.is_empty()).then_some((o, d)))
    }

    /// `matchLabels` with templated keys and values (`.LocalObject`,
    /// `.RemoteObject`, `.ClusterName`, `.ClusterPath`); empty keys are
    /// dropped. Returns a label-selector string.
    pub async fn template_label_selector(
        &self,
        t: &dyn Templates,
        sel: &RelatedResourceObjectSelector,
    ) -> Result<String, String> {
        let (local, remote) = self.local_remote();
        let ctx = json!({
            "LocalObject": local,
            "RemoteObject": remote,
            "ClusterName": self.cluster,
            "ClusterPath": self.path.unwrap_or_default(),
        });
        let mut parts = Vec::new();
        for (k, v) in sel.match_labels.clone().unwrap_or_default() {
            let k = self
                .render_if_templated(t, &k, &ctx)
                .await
                .map_err(|e| format!("matchLabels key {k:?}: {e}"))?;
            let v = self
                .render_if_templated(t, &v, &ctx)
                .await
                .map_err(|e| format!("matchLabels value {v:?}: {e}"))?;
            if !k.is_empty() {
                parts.push(format!("{k}={v}"));
            }
        }
        let expressions = k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: None,
            match_expressions: sel.match_expressions.clone(),
        };
        let expressions = crate::apis::selector::from_label_selector(&expressions)
            .map_err(|e| format!("matchExpressions: {e}"))?;
        parts.extend(expressions.into_iter().map(|e| e.to_string()));
        parts.sort();
        Ok(parts.join(","))
    }

    /// `s` rendered when it holds a template action, else as it is.
    pub(super) async fn render_if_templated(
        &self,
        t: &dyn Templates,
        s: &str,
        ctx: &Value,
    ) -> Result<String, String> {
        if s.contains("{{") {
            t.render(self.cluster, s, ctx).await
        } else {
            Ok(s.to_string())
        }
    }

    /// The selector's rewrite: what an origin name (or namespace) becomes
    /// on the destination side. Templates see `.Value`, `.RelatedObject`
    /// (null for namespaces), `.LocalObject`, `.RemoteObject`,
    /// `.ClusterName`, `.ClusterPath`.
    pub async fn rewrite(
        &self,
        t: &dyn Templates,
        sel: &RelatedResourceObjectSelector,
        value: &str,
        related: Option<&Value>,
    ) -> Result<String, String> {
        if let Some(re) = &sel.rewrite.regex {
            return apply_regex(value, re);
        }
        let Some(tpl) = sel
            .rewrite
            .template
            .as_ref()
            .and_then(|t| t.template.clone())
        else {
            return Err("selector.rewrite: set regex or template".into());
        };
        let (local, remote) = self.local_remote();
        let ctx = json!({
            "Value": value,
            "RelatedObject": related,
            "LocalObject": local,
            "RemoteObject": remote,
            "ClusterName": self.cluster,
            "ClusterPath": self.path.unwrap_or_default(),
        });
        t.render(self.cluster, &tpl, &ctx).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::apis::{RelatedResourceSelectorRewrite, TemplateExpression};
    use crate::sync::ports::Templates;
    use futures::future::BoxFuture;

    /// Replaces `{{ .X.y.z }}` with the value at that path; enough to test
    /// which context each template gets.
    struct FakeTemplates;
    impl Templates for FakeTemplates {
        fn render<'a>(
            &'a self,
            _: &'a str,
            template: &'a str,
            values: &'a Value,
        ) -> BoxFuture<'a, Result<String, String>> {
            Box::pin(std::future::ready(fake_render(template, values)))
        }
    }

    fn fake_render(template: &str, values: &Value) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = template;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let end = rest[start..].find("}}").ok_or("unclosed action")? + start;
            let path = rest[start + 2..end].trim().trim_start_matches('.');
            let v = gjson_get(values, path).ok_or(format!("no field {path}"))?;
            out.push_str(&value_string(&v));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        Ok(out.trim().to_string())
    }

    fn reference(path: &str, re: Option<(&str, &str)>) -> RelatedResourceObjectReference {
        RelatedResourceObjectReference {
            path: path.into(),
            regex: re.map(|(p, r)| RegularExpression {
                pattern: Some(p.into()),
                replacement: Some(r.into()),
            }),
        }
    }

    #[test]
    fn reference_finds_values() {
        let obj = json!({"spec": {"secret": " creds ", "list": ["a", "", "c"], "items": [{"n": "x"}, {"n": "y"}], "a.b": "dotted"}});
        assert_eq!(
            reference_values(&obj, &reference("spec.secret", None)).unwrap(),
            ["creds"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.list", None)).unwrap(),
            ["a", "", "c"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.items.#.n", None)).unwrap(),
            ["x", "y"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.items.1.n", None)).unwrap(),
            ["y"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.a\\.b", None)).unwrap(),
            ["dotted"]
        );
        // Missing means "not yet".
        assert!(
            reference_values(&obj, &reference("spec.nope", None))
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.secret", Some(("^(.+)$", "$1-copy")))).unwrap(),
            ["creds-copy"]
        );
        assert_eq!(
            reference_values(&obj, &reference("spec.secret", Some(("", "fixed")))).unwrap(),
            ["fixed"]
        );
        assert!(reference_values(&obj, &reference("spec.secret", Some(("(", "")))).is_err());
    }

    #[test]
    fn pairs_need_equal_counts_and_skip_empty() {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            pair_values("names", v(&["a", "", "c"]), v(&["x", "y", ""])).unwrap(),
            [("a".to_string(), "x".to_string())]
        );
        let e = pair_values("names", v(&["a"]), v(&[])).unwrap_err();
        assert!(e.contains("found 1 names on the origin side, but 0"), "{e}");
    }

    fn prim<'a>(origin: &'a Value, dest: &'a Value, side: RelatedResourceOrigin) -> Primaries<'a> {
        Primaries {
            origin,
            dest,
            origin_side: side,
            cluster: "abc",
            path: Some("root:x"),
        }
    }

    #[tokio::test]
    async fn templates_run_on_both_sides() {
        let local = json!({"metadata": {"name": "local"}});
        let remote = json!({"metadata": {"name": "remote"}});
        let p = prim(&local, &remote, RelatedResourceOrigin::Service);
        let got = p
            .template_both_sides(
                &FakeTemplates,
                "{{ .Object.metadata.name }}-{{ .Side }}-{{ .ClusterName }}",
            )
            .await
            .unwrap();
        assert_eq!(
            got,
            Some(("local-service-abc".into(), "remote-kcp-abc".into()))
        );
        // Empty on one side: nothing.
        let empty = json!({"metadata": {"name": ""}});
        let p = prim(&local, &empty, RelatedResourceOrigin::Service);
        assert_eq!(
            p.template_both_sides(&FakeTemplates, "{{ .Object.metadata.name }}")
                .await
                .unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn selectors_are_templated_and_rewritten() {
        let local = json!({"metadata": {"name": "local"}});
        let remote = json!({"metadata": {"name": "remote"}});
        // Origin kcp: the origin primary is the remote one.
        let p = prim(&remote, &local, RelatedResourceOrigin::Kcp);
        let sel = RelatedResourceObjectSelector {
            match_labels: Some(BTreeMap::from([
                (
                    "owner".to_string(),
                    "{{ .RemoteObject.metadata.name }}".to_string(),
                ),
                (
                    "{{ .LocalObject.metadata.nope }}".to_string(),
                    "x".to_string(),
                ),
                ("fixed".to_string(), "{{ .ClusterName }}".to_string()),
            ])),
            match_expressions: None,
            rewrite: RelatedResourceSelectorRewrite {
                regex: None,
                template: Some(TemplateExpression {
                    template: Some(
                        "{{ .Value }}-{{ .LocalObject.metadata.name }}-{{ .RelatedObject.data.k }}"
                            .into(),
                    ),
                }),
            },
        };
        // The key template errors (missing field) in the fake; a real
        // template yields "" for a missing map key, and empty keys are
        // dropped: test that with a template that renders empty.
        assert!(
            p.template_label_selector(&FakeTemplates, &sel)
                .await
                .is_err()
        );
        let mut sel2 = sel.clone();
        sel2.match_labels = Some(BTreeMap::from([
            (
                "owner".to_string(),
                "{{ .RemoteObject.metadata.name }}".to_string(),
            ),
            (
                "{{ .LocalObject.metadata.empty }}".to_string(),
                "x".to_string(),
            ),
            ("fixed".to_string(), "{{ .ClusterName }}".to_string()),
        ]));
        let local2 = json!({"metadata": {"name": "local", "empty": ""}});
        let p = prim(&remote, &local2, RelatedResourceOrigin::Kcp);
        assert_eq!(
            p.template_label_selector(&FakeTemplates, &sel2)
                .await
                .unwrap(),
            "fixed=abc,owner=remote"
        );
        let related = json!({"data": {"k": "v"}});
        assert_eq!(
            p.rewrite(&FakeTemplates, &sel2, "orig", Some(&related))
                .await
                .unwrap(),
            "orig-local-v"
        );
        let mut sel3 = sel2.clone();
        sel3.rewrite = RelatedResourceSelectorRewrite {
            regex: Some(RegularExpression {
                pattern: Some("^orig$".into()),
                replacement: Some("renamed".into()),
            }),
            template: None,
        };
        assert_eq!(
            p.rewrite(&FakeTemplates, &sel3, "orig", None)
                .await
                .unwrap(),
            "renamed"
        );
    }
}
