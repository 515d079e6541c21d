//! Rules of the 0.2 plugin contract that the host and the Rust SDK's test
//! harness must apply identically: Kubernetes label selectors (for `list`
//! reads) and the checks on a call's report.
//!
//! This file depends on nothing but `std`, so that the SDK
//! (`sdk/rust/src/testing.rs`) compiles the very same source with
//! `#[path]`: a selector or a report that passes a plugin's native unit
//! test passes the host too.

use std::collections::HashMap;

/// One requirement of a label selector; all of a selector's requirements
/// must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key`: the label is set (to anything).
    Exists(String),
    /// `!key`: the label is not set.
    NotExists(String),
    /// `key=value`, `key==value`, `key in (a,b)`: set, to one of the values.
    In(String, Vec<String>),
    /// `key!=value`, `key notin (a,b)`: not set, or set to none of the values.
    NotIn(String, Vec<String>),
    /// `key>n`: set to an integer greater than n.
    Gt(String, i64),
    /// `key<n`: set to an integer less than n.
    Lt(String, i64),
}

impl Requirement {
    fn matches(&self, labels: &HashMap<String, String>) -> bool {
        match self {
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Gt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }
}

/// A parsed Kubernetes label selector (the syntax of `kubectl -l` and of
/// `labelSelector=` in list requests, `k8s.io/apimachinery/pkg/labels.Parse`):
/// comma-separated requirements, all of which must hold:
///
/// | requirement | matches an object whose labels |
/// |---|---|
/// | `key` | have `key` |
/// | `!key` | lack `key` |
/// | `key=value`, `key==value` | have `key` set to `value` |
/// | `key!=value` | lack `key`, or have it set to something else |
/// | `key in (a,b)` | have `key` set to `a` or `b` |
/// | `key notin (a,b)` | lack `key`, or have it set to neither |
/// | `key>n`, `key<n` | have `key` set to an integer above (below) `n` |
///
/// Keys are label keys (an optional DNS-subdomain prefix and `/`, then a
/// name of at most 63 characters); values are label values (at most 63
/// characters, possibly empty). The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    pub requirements: Vec<Requirement>,
}

impl Selector {
    /// Parse `text`; the error quotes the requirement that is wrong and says
    /// what the syntax allows.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        if text.trim().is_empty() {
            return Ok(Selector { requirements });
        }
        for part in split_requirements(text)? {
            requirements.push(parse_requirement(part)?);
        }
        Ok(Selector { requirements })
    }

    /// Whether an object with these labels is selected.
    pub fn matches(&self, labels: &HashMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

const SYNTAX: &str = "key, !key, key=value, key==value, key!=value, key in (a,b), \
                      key notin (a,b), key>n, key<n";

/// Split on the commas that are not inside parentheses.
fn split_requirements(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("label selector {text:?}: unbalanced ')'"))?;
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("label selector {text:?}: unbalanced '('"));
    }
    parts.push(&text[start..]);
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err(format!(
            "label selector {text:?}: empty requirement (a stray comma?)"
        ));
    }
    Ok(parts)
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    let p = part.trim();
    let bad = |why: String| format!("label selector requirement {p:?}: {why}");
    // Set-based: `key in (a,b)`, `key notin (a,b)`.
    if let Some(open) = p.find('(') {
        let Some(inner) = p[open + 1..].strip_suffix(')') else {
            return Err(bad("a value list must end with ')'".into()));
        };
        let head = p[..open].trim_end();
        let (key, op) = match head.rsplit_once(char::is_whitespace) {
            Some((k, op @ ("in" | "notin"))) => (k.trim(), op),
            _ => return Err(bad(format!("expected one of {SYNTAX}"))),
        };
        let key = label_key(key).map_err(bad)?;
        let values = inner
            .split(',')
            .map(|v| label_value(v.trim()).map_err(bad))
            .collect::<Result<Vec<_>, _>>()?;
        if values.len() == 1 && values[0].is_empty() && inner.trim().is_empty() {
            return Err(bad(format!("{op} needs at least one value")));
        }
        return Ok(if op == "in" {
            Requirement::In(key, values)
        } else {
            Requirement::NotIn(key, values)
        });
    }
    for (op, len) in [("!=", 2), ("==", 2), ("=", 1), (">", 1), ("<", 1)] {
        if let Some(at) = p.find(op) {
            let key = label_key(p[..at].trim()).map_err(bad)?;
            let value = p[at + len..].trim();
            return match op {
                ">" | "<" => {
                    let n: i64 = value
                        .parse()
                        .map_err(|_| bad(format!("{op} needs an integer, not {value:?}")))?;
                    Ok(if op == ">" {
                        Requirement::Gt(key, n)
                    } else {
                        Requirement::Lt(key, n)
                    })
                }
                "!=" => Ok(Requirement::NotIn(
                    key,
                    vec![label_value(value).map_err(bad)?],
                )),
                _ => Ok(Requirement::In(key, vec![label_value(value).map_err(bad)?])),
            };
        }
    }
    if let Some(key) = p.strip_prefix('!') {
        return Ok(Requirement::NotExists(label_key(key.trim()).map_err(bad)?));
    }
    if p.contains(char::is_whitespace) {
        return Err(bad(format!("expected one of {SYNTAX}")));
    }
    Ok(Requirement::Exists(label_key(p).map_err(bad)?))
}

/// `[prefix/]name`: prefix a DNS subdomain (at most 253), name at most 63
/// characters of `[A-Za-z0-9_.-]`, starting and ending alphanumeric.
fn label_key(key: &str) -> Result<String, String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !is_dns_subdomain(prefix)
    {
        return Err(format!(
            "{key:?} is not a valid label key: its prefix {prefix:?} must be a DNS subdomain"
        ));
    }
    if name.is_empty() || !is_label_name(name) {
        return Err(format!(
            "{key:?} is not a valid label key (at most 63 letters, digits, '-', '_', '.', \
             starting and ending with a letter or digit, after an optional DNS prefix and '/')"
        ));
    }
    Ok(key.to_string())
}

/// Empty, or at most 63 characters of `[A-Za-z0-9_.-]`, starting and ending
/// alphanumeric.
fn label_value(value: &str) -> Result<String, String> {
    if value.is_empty() || is_label_name(value) {
        Ok(value.to_string())
    } else {
        Err(format!(
            "{value:?} is not a valid label value (at most 63 letters, digits, '-', '_', '.', \
             starting and ending with a letter or digit)"
        ))
    }
}

fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Bounds on one call's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportBounds {
    /// All strings of the report together, in bytes.
    pub max_bytes: usize,
    pub max_results: usize,
    pub max_conditions: usize,
    pub max_context_keys: usize,
}

/// A report as plain strings, for [`check_report`].
#[derive(Debug, Clone, Default)]
pub struct ReportText<'a> {
    /// (reason, message) of each result.
    pub results: Vec<(&'a str, &'a str)>,
    /// (type, status, reason, message) of each condition.
    pub conditions: Vec<(&'a str, &'a str, &'a str, &'a str)>,
    /// (key, JSON value) of each context entry set.
    pub set_context: Vec<(&'a str, &'a str)>,
}

/// Longest condition message the Kubernetes API accepts.
const MAX_CONDITION_MESSAGE: usize = 32768;

/// Check a report against the contract: its size and entry counts within
/// `bounds`; reasons usable as an Event's and a Condition's reason; condition
/// types usable as a Condition's type and statuses `True`, `False` or
/// `Unknown`; context keys well formed, set once, and not among the incoming
/// values (`incoming(key)`, each key has one owner); context values valid
/// JSON (`is_json`). The error names the field (`report.conditions[0].status`)
/// and the fix.
pub fn check_report(
    report: &ReportText<'_>,
    incoming: &dyn Fn(&str) -> bool,
    is_json: &dyn Fn(&str) -> Result<(), String>,
    bounds: &ReportBounds,
) -> Result<(), String> {
    let size: usize = report
        .results
        .iter()
        .map(|(r, m)| r.len() + m.len())
        .chain(
            report
                .conditions
                .iter()
                .map(|(t, s, r, m)| t.len() + s.len() + r.len() + m.len()),
        )
        .chain(report.set_context.iter().map(|(k, v)| k.len() + v.len()))
        .sum();
    if size > bounds.max_bytes {
        return Err(format!(
            "the report is {size} bytes, over the limit of {} bytes; return shorter messages \
             or fewer results, conditions and context values",
            bounds.max_bytes
        ));
    }
    let counts = [
        ("results", report.results.len(), bounds.max_results),
        ("conditions", report.conditions.len(), bounds.max_conditions),
        (
            "set-context",
            report.set_context.len(),
            bounds.max_context_keys,
        ),
    ];
    for (field, n, max) in counts {
        if n > max {
            return Err(format!(
                "report.{field} has {n} entries, over the limit of {max}; return at most {max}"
            ));
        }
    }
    for (i, (reason, _)) in report.results.iter().enumerate() {
        check_reason(&format!("report.results[{i}].reason"), reason)?;
    }
    for (i, (ty, status, reason, message)) in report.conditions.iter().enumerate() {
        let at = format!("report.conditions[{i}]");
        check_condition_type(&format!("{at}.type"), ty)?;
        if !matches!(*status, "True" | "False" | "Unknown") {
            return Err(format!(
                "{at}.status is {status:?}; it must be \"True\", \"False\" or \"Unknown\" \
                 (capitalised, as in Kubernetes conditions)"
            ));
        }
        check_reason(&format!("{at}.reason"), reason)?;
        if message.len() > MAX_CONDITION_MESSAGE {
            return Err(format!(
                "{at}.message is {} bytes; Kubernetes accepts at most {MAX_CONDITION_MESSAGE}",
                message.len()
            ));
        }
    }
    for (i, (key, value)) in report.set_context.iter().enumerate() {
        let at = format!("report.set-context[{i}]");
        check_context_key(&format!("{at}.key"), key)?;
        if incoming(key) {
            return Err(format!(
                "{at}.key {key:?} was already set by an earlier step of this chain; each \
                 context key has one owner: read it from the context's values instead, or \
                 set a key of your own"
            ));
        }
        if let Some(first) = report.set_context[..i].iter().position(|(k, _)| k == key) {
            return Err(format!(
                "{at}.key {key:?} is set twice in this report (first at \
                 report.set-context[{first}]); set each key once"
            ));
        }
        is_json(value).map_err(|e| {
            format!(
                "{at}.value for {key:?} is not valid JSON ({e}); context values are JSON text \
                 (a string value is written with its quotes: \"\\\"text\\\"\")"
            )
        })?;
    }
    Ok(())
}

/// A Condition's and an Event's reason: CamelCase, as Kubernetes validates
/// it (`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`, at most 1024).
fn check_reason(at: &str, reason: &str) -> Result<(), String> {
    if reason.is_empty() {
        return Err(format!(
            "{at} is empty; give a CamelCase reason such as \"SubnetMissing\""
        ));
    }
    let b = reason.as_bytes();
    let ok = b.len() <= 1024
        && b[0].is_ascii_alphabetic()
        && b[b.len() - 1] != b','
        && b[b.len() - 1] != b':'
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'));
    if !ok {
        return Err(format!(
            "{at} {reason:?} is not a valid reason; use CamelCase letters and digits (at most \
             1024, starting with a letter), such as \"SubnetMissing\""
        ));
    }
    Ok(())
}

/// A Condition's type: `[prefix/]Name`, as Kubernetes validates it (at most
/// 316 in all, the name at most 63 characters).
fn check_condition_type(at: &str, ty: &str) -> Result<(), String> {
    if ty.is_empty() {
        return Err(format!(
            "{at} is empty; give a CamelCase condition type such as \"SubnetResolved\""
        ));
    }
    let (prefix, name) = match ty.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, ty),
    };
    let ok = ty.len() <= 316 && prefix.is_none_or(is_dns_subdomain) && is_label_name(name);
    if !ok {
        return Err(format!(
            "{at} {ty:?} is not a valid condition type; use CamelCase letters and digits (at \
             most 63, optionally after a DNS prefix and '/'), such as \"SubnetResolved\""
        ));
    }
    Ok(())
}

/// Context keys: 1 to 253 of letters, digits, `-`, `_`, `.` and `/`.
fn check_context_key(at: &str, key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/'));
    if !ok {
        return Err(format!(
            "{at} {key:?} is not a valid context key; use 1 to 253 letters, digits, '-', '_', \
             '.' and '/' (e.g. \"example.com/subnet\")"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sel(s: &str) -> Selector {
        Selector::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn selectors_match_like_kubernetes() {
        let db = labels(&[("app", "db"), ("tier", "backend"), ("replicas", "3")]);
        let web = labels(&[("app", "web")]);
        let cases: [(&str, bool, bool); 14] = [
            ("", true, true),
            ("app", true, true),
            ("!tier", false, true),
            ("app=db", true, false),
            ("app==db", true, false),
            ("app!=db", false, true),
            ("tier!=frontend", true, true),
            ("app in (db, cache)", true, false),
            ("app notin (db,cache)", false, true),
            ("tier notin (frontend)", true, true),
            ("app=db,tier=backend", true, false),
            (" app = db , !legacy ", true, false),
            ("replicas>2", true, false),
            ("replicas<2", false, false),
        ];
        for (s, on_db, on_web) in cases {
            assert_eq!(sel(s).matches(&db), on_db, "{s:?} on db");
            assert_eq!(sel(s).matches(&web), on_web, "{s:?} on web");
        }
        assert!(sel("example.com/team=a").matches(&labels(&[("example.com/team", "a")])));
        assert!(sel("app=").matches(&labels(&[("app", "")])));
    }

    #[test]
    fn bad_selectors_are_explained() {
        for (s, why) in [
            ("app=db,", "empty requirement"),
            ("app in (a", "unbalanced '('"),
            ("app)", "unbalanced ')'"),
            ("app is db", "expected one of key, !key"),
            ("app in ()", "needs at least one value"),
            ("-app=x", "not a valid label key"),
            ("app=has space", "not a valid label value"),
            ("Bad_Prefix/app=x", "must be a DNS subdomain"),
            ("n>x", "needs an integer"),
        ] {
            let e = Selector::parse(s).unwrap_err();
            assert!(e.contains(why), "{s:?}: {e}");
        }
    }

    const BOUNDS: ReportBounds = ReportBounds {
        max_bytes: 1000,
        max_results: 2,
        max_conditions: 2,
        max_context_keys: 2,
    };

    fn check(r: &ReportText<'_>, incoming: &[&str]) -> Result<(), String> {
        let incoming = |k: &str| incoming.contains(&k);
        let is_json = |v: &str| {
            if v.starts_with('"') || v.parse::<f64>().is_ok() || v == "true" {
                Ok(())
            } else {
                Err("expected value".to_string())
            }
        };
        check_report(r, &incoming, &is_json, &BOUNDS)
    }

    #[test]
    fn good_reports_pass() {
        let r = ReportText {
            results: vec![("SubnetMissing", "no subnet"), ("Done", "")],
            conditions: vec![("example.com/SubnetResolved", "False", "NotFound", "")],
            set_context: vec![("example.com/subnet", "\"10.0.0.0/24\""), ("n", "3")],
        };
        check(&r, &["other"]).unwrap();
        check(&ReportText::default(), &[]).unwrap();
    }

    #[test]
    fn report_errors_name_the_field_and_the_fix() {
        let cond = |status| ReportText {
            conditions: vec![("Ready", status, "Fine", "")],
            ..Default::default()
        };
        let e = check(&cond("true"), &[]).unwrap_err();
        assert!(
            e.starts_with("report.conditions[0].status is \"true\"; it must be \"True\""),
            "{e}"
        );
        let e = check(
            &ReportText {
                results: vec![("", "m")],
                ..Default::default()
            },
            &[],
        )
        .unwrap_err();
        assert!(e.starts_with("report.results[0].reason is empty"), "{e}");
        let e = check(
            &ReportText {
                results: vec![("has space", "m")],
                ..Default::default()
            },
            &[],
        )
        .unwrap_err();
        assert!(e.contains("not a valid reason; use CamelCase"), "{e}");
        let ctx = |entries| ReportText {
            set_context: entries,
            ..Default::default()
        };
        let e = check(&ctx(vec![("zone", "1")]), &["zone"]).unwrap_err();
        assert!(
            e.starts_with("report.set-context[0].key \"zone\" was already set by an earlier step"),
            "{e}"
        );
        let e = check(&ctx(vec![("a", "1"), ("a", "2")]), &[]).unwrap_err();
        assert!(
            e.contains("report.set-context[1].key \"a\" is set twice in this report (first at report.set-context[0])"),
            "{e}"
        );
        let e = check(&ctx(vec![("a", "text")]), &[]).unwrap_err();
        assert!(
            e.starts_with("report.set-context[0].value for \"a\" is not valid JSON"),
            "{e}"
        );
        let e = check(&ctx(vec![("a b", "1")]), &[]).unwrap_err();
        assert!(e.contains("not a valid context key"), "{e}");
        let e = check(&ctx(vec![("a", "1"), ("b", "1"), ("c", "1")]), &[]).unwrap_err();
        assert_eq!(
            e,
            "report.set-context has 3 entries, over the limit of 2; return at most 2"
        );
        let long = "x".repeat(1000);
        let e = check(
            &ReportText {
                results: vec![("Big", &long)],
                ..Default::default()
            },
            &[],
        )
        .unwrap_err();
        assert!(
            e.starts_with("the report is 1003 bytes, over the limit of 1000 bytes"),
            "{e}"
        );
        let e = check(
            &ReportText {
                conditions: vec![("", "True", "R", "")],
                ..Default::default()
            },
            &[],
        )
        .unwrap_err();
        assert!(e.starts_with("report.conditions[0].type is empty"), "{e}");
    }
}
