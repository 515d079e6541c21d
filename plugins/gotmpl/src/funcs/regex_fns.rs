//! Sprig's regular-expression functions on Go (RE2) syntax; patterns are
//! translated by [`crate::goregex`].

use regex::Regex;

use super::{Entry, Ty, int_arg, sig, str_arg, str_list};
use crate::goregex;
use crate::value::Value;

pub(crate) const FUNCS: &[Entry] = &[
    ("regexMatch", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::Bool(
            compile(str_arg(&a[0]))
                .map(|r| r.is_match(str_arg(&a[1])))
                .unwrap_or(false),
        ))
    }),
    ("mustRegexMatch", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::Bool(
            compile(str_arg(&a[0]))?.is_match(str_arg(&a[1])),
        ))
    }),
    ("regexFind", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::from(find(&compile(str_arg(&a[0]))?, str_arg(&a[1]))))
    }),
    ("mustRegexFind", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::from(find(&compile(str_arg(&a[0]))?, str_arg(&a[1]))))
    }),
    (
        "regexFindAll",
        sig(&[Ty::Str, Ty::Str, Ty::Int], None),
        |a| {
            Ok(find_all(
                &compile(str_arg(&a[0]))?,
                str_arg(&a[1]),
                int_arg(&a[2]),
            ))
        },
    ),
    (
        "mustRegexFindAll",
        sig(&[Ty::Str, Ty::Str, Ty::Int], None),
        |a| {
            Ok(find_all(
                &compile(str_arg(&a[0]))?,
                str_arg(&a[1]),
                int_arg(&a[2]),
            ))
        },
    ),
    (
        "regexReplaceAll",
        sig(&[Ty::Str, Ty::Str, Ty::Str], None),
        |a| {
            Ok(Value::from(replace_all(
                &compile(str_arg(&a[0]))?,
                str_arg(&a[1]),
                str_arg(&a[2]),
                false,
            )))
        },
    ),
    (
        "mustRegexReplaceAll",
        sig(&[Ty::Str, Ty::Str, Ty::Str], None),
        |a| {
            Ok(Value::from(replace_all(
                &compile(str_arg(&a[0]))?,
                str_arg(&a[1]),
                str_arg(&a[2]),
                false,
            )))
        },
    ),
    (
        "regexReplaceAllLiteral",
        sig(&[Ty::Str, Ty::Str, Ty::Str], None),
        |a| {
            Ok(Value::from(replace_all(
                &compile(str_arg(&a[0]))?,
                str_arg(&a[1]),
                str_arg(&a[2]),
                true,
            )))
        },
    ),
    (
        "mustRegexReplaceAllLiteral",
        sig(&[Ty::Str, Ty::Str, Ty::Str], None),
        |a| {
            Ok(Value::from(replace_all(
                &compile(str_arg(&a[0]))?,
                str_arg(&a[1]),
                str_arg(&a[2]),
                true,
            )))
        },
    ),
    ("regexSplit", sig(&[Ty::Str, Ty::Str, Ty::Int], None), |a| {
        Ok(split(
            &compile(str_arg(&a[0]))?,
            str_arg(&a[1]),
            int_arg(&a[2]),
        ))
    }),
    (
        "mustRegexSplit",
        sig(&[Ty::Str, Ty::Str, Ty::Int], None),
        |a| {
            Ok(split(
                &compile(str_arg(&a[0]))?,
                str_arg(&a[1]),
                int_arg(&a[2]),
            ))
        },
    ),
    ("regexQuoteMeta", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(quote_meta(str_arg(&a[0]))))
    }),
];

/// Limit on a compiled pattern's size (the regex crate's default is 10 MiB):
/// a template compiles its patterns on every call.
const SIZE_LIMIT: usize = 1 << 20;

/// Compiles a Go regexp, with Go's error wording.
fn compile(pat: &str) -> Result<Regex, String> {
    goregex::compile_with_size_limit(pat, SIZE_LIMIT)
}

fn find(re: &Regex, s: &str) -> String {
    re.find(s)
        .map(|m| m.as_str().to_string())
        .unwrap_or_default()
}

fn find_all(re: &Regex, s: &str, n: i64) -> Value {
    let it = re.find_iter(s).map(|m| m.as_str().to_string());
    let v: Vec<String> = if n < 0 {
        it.collect()
    } else {
        it.take(n as usize).collect()
    };
    str_list(v)
}

fn replace_all(re: &Regex, s: &str, repl: &str, literal: bool) -> String {
    if literal {
        re.replace_all(s, regex::NoExpand(repl)).into_owned()
    } else {
        re.replace_all(s, go_template(repl).as_str()).into_owned()
    }
}

/// Go's Expand treats `$` not followed by a name, `{name}` or `$` as a
/// literal; Rust's does too, but a `$name` that is not a group expands to
/// "" in both. Only `${` without a closing brace differs; escape it.
fn go_template(repl: &str) -> String {
    let b = repl.as_bytes();
    let mut out = String::with_capacity(repl.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1] == b'{' && !repl[i..].contains('}') {
            out.push_str("$$");
            i += 1;
            continue;
        }
        let c = repl[i..].chars().next().unwrap_or('\0');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

fn split(re: &Regex, s: &str, n: i64) -> Value {
    if n == 0 {
        return Value::Nil;
    }
    if !re.as_str().is_empty() && s.is_empty() {
        return str_list(vec![String::new()]);
    }
    let mut out: Vec<String> = Vec::new();
    let mut beg = 0;
    let mut end = 0;
    for m in re.find_iter(s) {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = m.start();
        if m.end() != 0 {
            out.push(s[beg..end].to_string());
        }
        beg = m.end();
    }
    if end != s.len() {
        out.push(s[beg..].to_string());
    }
    str_list(out)
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: Value) -> Vec<String> {
        match v {
            Value::List(l) => l
                .iter()
                .map(|e| e.as_str().unwrap_or_default().to_string())
                .collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn replace_expands_groups_like_go() {
        let re = compile(r"a(x*)b").unwrap();
        assert_eq!(replace_all(&re, "-ab-axxb-", "${1}W", false), "-W-xxW-");
        assert_eq!(replace_all(&re, "-ab-axxb-", "$1W", false), "---");
        assert_eq!(replace_all(&re, "-ab-axxb-", "$1W", true), "-$1W-$1W-");
    }

    #[test]
    fn split_and_find_all_like_go() {
        let re = compile("a").unwrap();
        assert_eq!(strs(split(&re, "banana", -1)), vec!["b", "n", "n", ""]);
        assert_eq!(strs(split(&re, "banana", 2)), vec!["b", "nana"]);
        assert_eq!(
            strs(find_all(&compile("a.").unwrap(), "banana", -1)),
            vec!["an", "an"]
        );
        assert_eq!(quote_meta("1.5+x"), "1\\.5\\+x");
    }
}
