//! Kubernetes label-selector strings (`a=b,c!=d,e in (x,y),!f,g`), as taken by
//! `--published-resource-selector` and `--init-target-selector`. Parsed up
//! front so a typo fails at startup instead of silently matching nothing.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(pub Vec<Requirement>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct SelectorError(String);

/// A metav1 LabelSelectorRequirement in label-selector syntax
/// (`key in (a,b)`, `!key`, …).
pub fn requirement_string(
    e: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement,
) -> Result<String, String> {
    let vals = e.values.clone().unwrap_or_default().join(",");
    Ok(match e.operator.as_str() {
        "In" => format!("{} in ({vals})", e.key),
        "NotIn" => format!("{} notin ({vals})", e.key),
        "Exists" => e.key.clone(),
        "DoesNotExist" => format!("!{}", e.key),
        op => {
            return Err(format!(
                "unknown operator {op:?} (use In, NotIn, Exists or DoesNotExist)"
            ));
        }
    })
}

pub fn parse(s: &str) -> Result<Selector, SelectorError> {
    let mut reqs = Vec::new();
    for part in split_top_level(s)? {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        reqs.push(parse_requirement(part)?);
    }
    Ok(Selector(reqs))
}

/// Split on commas that are not inside `( … )`.
fn split_top_level(s: &str) -> Result<Vec<&str>, SelectorError> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(SelectorError("unbalanced ')'".into()));
                }
            }
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(SelectorError("unbalanced '('".into()));
    }
    out.push(&s[start..]);
    Ok(out)
}

fn parse_requirement(p: &str) -> Result<Requirement, SelectorError> {
    if let Some(key) = p.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(check_key(key.trim())?));
    }
    for (op, ctor) in [
        (
            "!=",
            Requirement::NotEquals as fn(String, String) -> Requirement,
        ),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((k, v)) = p.split_once(op) {
            return Ok(ctor(check_key(k.trim())?, check_value(v.trim())?));
        }
    }
    let words: Vec<&str> = p.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let key = check_key(words[0])?;
        let rest = words[1].trim();
        let (neg, list) = if let Some(r) = rest.strip_prefix("notin") {
            (true, r)
        } else if let Some(r) = rest.strip_prefix("in") {
            (false, r)
        } else {
            return Err(SelectorError(format!(
                "{p:?}: expected '=', '!=', 'in' or 'notin'"
            )));
        };
        let list = list.trim();
        let inner = list
            .strip_prefix('(')
            .and_then(|l| l.strip_suffix(')'))
            .ok_or_else(|| SelectorError(format!("{p:?}: values must be in parentheses")))?;
        let values = inner
            .split(',')
            .map(|v| check_value(v.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(if neg {
            Requirement::NotIn(key, values)
        } else {
            Requirement::In(key, values)
        });
    }
    Ok(Requirement::Exists(check_key(p)?))
}

fn check_key(k: &str) -> Result<String, SelectorError> {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    if let Some(p) = prefix
        && (p.is_empty() || p.len() > 253)
    {
        return Err(SelectorError(format!("{k:?}: invalid key prefix")));
    }
    if name.is_empty() || name.len() > 63 || !is_label_value(name) {
        return Err(SelectorError(format!(
            "{k:?}: invalid label key (alphanumerics, '-', '_', '.', at most 63 characters)"
        )));
    }
    Ok(k.to_string())
}

fn check_value(v: &str) -> Result<String, SelectorError> {
    if v.len() > 63 || (!v.is_empty() && !is_label_value(v)) {
        return Err(SelectorError(format!(
            "{v:?}: invalid label value (alphanumerics, '-', '_', '.', at most 63 characters)"
        )));
    }
    Ok(v.to_string())
}

fn is_label_value(v: &str) -> bool {
    let b = v.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

impl Selector {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_all_operators() {
        let s = parse("a=b, c!=d,e in (x, y),f notin (z),!g,h,example.com/i==j").unwrap();
        assert_eq!(s.0.len(), 7);
        assert!(s.matches(&labels(&[
            ("a", "b"),
            ("e", "y"),
            ("h", ""),
            ("example.com/i", "j")
        ])));
        assert!(!s.matches(&labels(&[
            ("a", "b"),
            ("e", "y"),
            ("h", ""),
            ("g", "1"),
            ("example.com/i", "j")
        ])));
    }

    #[test]
    fn empty_matches_everything() {
        assert!(parse("").unwrap().matches(&labels(&[])));
        assert!(parse(" ").unwrap().is_empty());
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse("a in (b").is_err());
        assert!(parse("a in b").is_err());
        assert!(parse("a=b c").is_err());
        assert!(parse("-bad=x").is_err());
    }
}
