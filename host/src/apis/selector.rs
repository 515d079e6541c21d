//! Label selectors. Matching is kube-core's [`Selector`]; this module adds
//! what it lacks: parsing the label-selector strings (`a=b,c!=d,e in (x,y),!f,g`)
//! taken by `--published-resource-selector` and `--init-target-selector`
//! (parsed up front so a typo fails at startup instead of silently matching
//! nothing), and converting a metav1 `LabelSelector` with an error that says
//! what to fix.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
pub use kube::core::{Expression, Selector, SelectorExt};

/// Whether an object's `metadata.labels` (absent: none) match `sel`,
/// without copying them.
pub fn matches_labels(sel: &Selector, labels: Option<&BTreeMap<String, String>>) -> bool {
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    sel.matches(labels.unwrap_or(&NONE))
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct SelectorError(String);

/// A metav1 LabelSelector as a [`Selector`] (its string form, `to_string()`,
/// is what list and watch calls take).
pub fn from_label_selector(sel: &LabelSelector) -> Result<Selector, SelectorError> {
    for e in sel.match_expressions.iter().flatten() {
        let has_values = e.values.as_ref().is_some_and(|v| !v.is_empty());
        match e.operator.as_str() {
            "In" | "NotIn" if !has_values => {
                return Err(SelectorError(format!(
                    "matchExpressions key {:?}: operator {} needs at least one value",
                    e.key, e.operator
                )));
            }
            "Exists" | "DoesNotExist" if has_values => {
                return Err(SelectorError(format!(
                    "matchExpressions key {:?}: operator {} takes no values",
                    e.key, e.operator
                )));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => {
                return Err(SelectorError(format!(
                    "matchExpressions key {:?}: unknown operator {op:?} (use In, NotIn, Exists or DoesNotExist)",
                    e.key
                )));
            }
        }
    }
    let selector = Selector::try_from(sel.clone()).map_err(|e| SelectorError(e.0))?;
    // Keys and values must be valid labels, as the API server would insist.
    parse(&selector.to_string())?;
    Ok(selector)
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
    Ok(reqs.into_iter().collect())
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

fn parse_requirement(p: &str) -> Result<Expression, SelectorError> {
    if let Some(key) = p.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(check_key(key.trim())?));
    }
    for (op, ctor) in [
        (
            "!=",
            Expression::NotEqual as fn(String, String) -> Expression,
        ),
        ("==", Expression::Equal),
        ("=", Expression::Equal),
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
            .collect::<Result<BTreeSet<_>, _>>()?;
        return Ok(if neg {
            Expression::NotIn(key, values)
        } else {
            Expression::In(key, values)
        });
    }
    Ok(Expression::Exists(check_key(p)?))
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
    if name.is_empty() || super::validation::label_value(name).is_err() {
        return Err(SelectorError(format!(
            "{k:?}: invalid label key (alphanumerics, '-', '_', '.', at most 63 characters)"
        )));
    }
    Ok(k.to_string())
}

fn check_value(v: &str) -> Result<String, SelectorError> {
    if super::validation::label_value(v).is_err() {
        return Err(SelectorError(format!(
            "{v:?}: invalid label value (alphanumerics, '-', '_', '.', at most 63 characters)"
        )));
    }
    Ok(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn absent_labels_are_no_labels() {
        let sel = parse("a=b").unwrap();
        assert!(!matches_labels(&sel, None));
        assert!(matches_labels(&sel, Some(&labels(&[("a", "b")]))));
        assert!(matches_labels(&parse("!a").unwrap(), None));
    }

    #[test]
    fn parses_all_operators() {
        let s = parse("a=b, c!=d,e in (x, y),f notin (z),!g,h,example.com/i==j").unwrap();
        assert_eq!(s.clone().into_iter().count(), 7);
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
        assert!(parse(" ").unwrap().selects_all());
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse("a in (b").is_err());
        assert!(parse("a in b").is_err());
        assert!(parse("a=b c").is_err());
        assert!(parse("-bad=x").is_err());
    }

    fn key() -> impl proptest::strategy::Strategy<Value = String> {
        "([a-z]{1,5}\\.com/)?[a-z0-9]([a-z0-9._-]{0,8}[a-z0-9])?"
    }

    fn value() -> impl proptest::strategy::Strategy<Value = String> {
        "([a-zA-Z0-9]([a-z0-9._-]{0,6}[a-z0-9])?)?"
    }

    fn expression() -> impl proptest::strategy::Strategy<Value = Expression> {
        use proptest::prelude::*;
        let set = || prop::collection::btree_set(value(), 1..4);
        prop_oneof![
            (key(), value()).prop_map(|(k, v)| Expression::Equal(k, v)),
            (key(), value()).prop_map(|(k, v)| Expression::NotEqual(k, v)),
            (key(), set()).prop_map(|(k, v)| Expression::In(k, v)),
            (key(), set()).prop_map(|(k, v)| Expression::NotIn(k, v)),
            key().prop_map(Expression::Exists),
            key().prop_map(Expression::DoesNotExist),
        ]
    }

    proptest::proptest! {
        /// What a selector prints (as list calls send it), the flag parser
        /// reads back as the same selector.
        #[test]
        fn printed_selectors_parse_back(exprs in proptest::collection::vec(expression(), 0..5)) {
            let sel: Selector = exprs.into_iter().collect();
            let parsed = parse(&sel.to_string());
            proptest::prop_assert_eq!(parsed, Ok(sel));
        }

        /// Any flag value parses or fails with an error; never a panic.
        #[test]
        fn any_string_parses_or_fails_cleanly(s in "\\PC{0,40}") {
            let _ = parse(&s);
        }
    }

    #[test]
    fn label_selectors_convert_with_clear_errors() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
        let req = |key: &str, op: &str, values: Option<Vec<&str>>| LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: values.map(|v| v.into_iter().map(String::from).collect()),
        };
        let sel = LabelSelector {
            match_labels: Some(BTreeMap::from([("app".into(), "db".into())])),
            match_expressions: Some(vec![
                req("tier", "In", Some(vec!["a", "b"])),
                req("x", "DoesNotExist", None),
            ]),
        };
        let s = from_label_selector(&sel).unwrap();
        assert_eq!(s.to_string(), "app=db,tier in (a,b),!x");
        assert!(s.matches(&labels(&[("app", "db"), ("tier", "b")])));
        assert!(!s.matches(&labels(&[("app", "db"), ("tier", "b"), ("x", "1")])));
        // The string form parses back to the same selector.
        assert_eq!(parse(&s.to_string()).unwrap(), s);
        for (bad, says) in [
            (req("k", "Matches", None), "unknown operator \"Matches\""),
            (req("k", "In", None), "needs at least one value"),
            (req("k", "Exists", Some(vec!["v"])), "takes no values"),
            (req("-k", "Exists", None), "invalid label key"),
        ] {
            let sel = LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![bad]),
            };
            let e = from_label_selector(&sel).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }
}
