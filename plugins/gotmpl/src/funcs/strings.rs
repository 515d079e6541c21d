//! Sprig's string functions (and the path helpers).

use std::collections::BTreeMap;

use super::{Entry, Ty, int_arg, sig, str_arg, str_list, strval};
use crate::gofmt;
use crate::value::Value;

pub(crate) const FUNCS: &[Entry] = &[
    ("abbrev", sig(&[Ty::Int, Ty::Str], None), |a| {
        Ok(Value::from(abbrev(int_arg(&a[0]), str_arg(&a[1]))))
    }),
    ("abbrevboth", sig(&[Ty::Int, Ty::Int, Ty::Str], None), |a| {
        Ok(Value::from(abbrevboth(
            int_arg(&a[0]),
            int_arg(&a[1]),
            str_arg(&a[2]),
        )))
    }),
    ("trunc", sig(&[Ty::Int, Ty::Str], None), |a| {
        Ok(Value::from(trunc(int_arg(&a[0]), str_arg(&a[1]))))
    }),
    ("trim", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(str_arg(&a[0]).trim_matches(is_go_space)))
    }),
    ("upper", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(map_chars(str_arg(&a[0]), upper_char)))
    }),
    ("lower", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(map_chars(str_arg(&a[0]), lower_char)))
    }),
    ("title", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(title(str_arg(&a[0]))))
    }),
    ("untitle", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(untitle(str_arg(&a[0]))))
    }),
    ("substr", sig(&[Ty::Int, Ty::Int, Ty::Str], None), |a| {
        substr(int_arg(&a[0]), int_arg(&a[1]), str_arg(&a[2])).map(Value::from)
    }),
    ("repeat", sig(&[Ty::Int, Ty::Str], None), |a| {
        repeat(int_arg(&a[0]), str_arg(&a[1])).map(Value::from)
    }),
    ("trimall", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::from(trim_set(str_arg(&a[1]), str_arg(&a[0]))))
    }),
    ("trimAll", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::from(trim_set(str_arg(&a[1]), str_arg(&a[0]))))
    }),
    ("trimSuffix", sig(&[Ty::Str, Ty::Str], None), |a| {
        let (suf, s) = (str_arg(&a[0]), str_arg(&a[1]));
        Ok(Value::from(s.strip_suffix(suf).unwrap_or(s)))
    }),
    ("trimPrefix", sig(&[Ty::Str, Ty::Str], None), |a| {
        let (pre, s) = (str_arg(&a[0]), str_arg(&a[1]));
        Ok(Value::from(s.strip_prefix(pre).unwrap_or(s)))
    }),
    ("nospace", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(
            str_arg(&a[0])
                .chars()
                .filter(|c| !is_go_space(*c))
                .collect::<String>(),
        ))
    }),
    ("initials", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(initials(str_arg(&a[0]))))
    }),
    ("swapcase", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(swapcase(str_arg(&a[0]))))
    }),
    ("snakecase", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(camel_to_lower(str_arg(&a[0]), '_')))
    }),
    ("kebabcase", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(camel_to_lower(str_arg(&a[0]), '-')))
    }),
    ("camelcase", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(pascal_case(str_arg(&a[0]))))
    }),
    ("wrap", sig(&[Ty::Int, Ty::Str], None), |a| {
        Ok(Value::from(wrap(str_arg(&a[1]), int_arg(&a[0]), "", false)))
    }),
    ("wrapWith", sig(&[Ty::Int, Ty::Str, Ty::Str], None), |a| {
        Ok(Value::from(wrap(
            str_arg(&a[2]),
            int_arg(&a[0]),
            str_arg(&a[1]),
            true,
        )))
    }),
    ("contains", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::Bool(str_arg(&a[1]).contains(str_arg(&a[0]))))
    }),
    ("hasPrefix", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::Bool(str_arg(&a[1]).starts_with(str_arg(&a[0]))))
    }),
    ("hasSuffix", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(Value::Bool(str_arg(&a[1]).ends_with(str_arg(&a[0]))))
    }),
    ("quote", sig(&[], Some(Ty::Any)), |a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !v.is_nil())
            .map(|v| gofmt::quote_with(&strval(v), '"', false))
            .collect();
        Ok(Value::from(parts.join(" ")))
    }),
    ("squote", sig(&[], Some(Ty::Any)), |a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !v.is_nil())
            .map(|v| format!("'{}'", gofmt::sprint_one(v)))
            .collect();
        Ok(Value::from(parts.join(" ")))
    }),
    ("cat", sig(&[], Some(Ty::Any)), |a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !v.is_nil())
            .map(gofmt::sprint_one)
            .collect();
        Ok(Value::from(parts.join(" ")))
    }),
    ("indent", sig(&[Ty::Int, Ty::Str], None), |a| {
        indent(int_arg(&a[0]), str_arg(&a[1])).map(Value::from)
    }),
    ("nindent", sig(&[Ty::Int, Ty::Str], None), |a| {
        indent(int_arg(&a[0]), str_arg(&a[1])).map(|s| Value::from(format!("\n{s}")))
    }),
    ("replace", sig(&[Ty::Str, Ty::Str, Ty::Str], None), |a| {
        Ok(Value::from(go_replace(
            str_arg(&a[2]),
            str_arg(&a[0]),
            str_arg(&a[1]),
            -1,
        )))
    }),
    ("plural", sig(&[Ty::Str, Ty::Str, Ty::Int], None), |a| {
        Ok(if int_arg(&a[2]) == 1 {
            a[0].clone()
        } else {
            a[1].clone()
        })
    }),
    ("split", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(indexed_map(go_split(str_arg(&a[1]), str_arg(&a[0]), -1)))
    }),
    ("splitn", sig(&[Ty::Str, Ty::Int, Ty::Str], None), |a| {
        Ok(indexed_map(go_split(
            str_arg(&a[2]),
            str_arg(&a[0]),
            int_arg(&a[1]),
        )))
    }),
    ("splitList", sig(&[Ty::Str, Ty::Str], None), |a| {
        Ok(str_list(go_split(str_arg(&a[1]), str_arg(&a[0]), -1)))
    }),
    ("toStrings", sig(&[Ty::Any], None), |a| {
        Ok(str_list(strslice(&a[0])))
    }),
    ("join", sig(&[Ty::Str, Ty::Any], None), |a| {
        Ok(Value::from(strslice(&a[1]).join(str_arg(&a[0]))))
    }),
    ("sortAlpha", sig(&[Ty::Any], None), |a| {
        let mut v = match &a[0] {
            Value::List(_) => strslice(&a[0]),
            other => vec![strval(other)],
        };
        v.sort();
        Ok(str_list(v))
    }),
    ("base", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(path_base(str_arg(&a[0]))))
    }),
    ("dir", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(path_dir(str_arg(&a[0]))))
    }),
    ("clean", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(path_clean(str_arg(&a[0]))))
    }),
    ("ext", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(path_ext(str_arg(&a[0]))))
    }),
    ("isAbs", sig(&[Ty::Str], None), |a| {
        Ok(Value::Bool(str_arg(&a[0]).starts_with('/')))
    }),
    ("osBase", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(path_base(str_arg(&a[0]))))
    }),
    ("osDir", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(path_dir(str_arg(&a[0]))))
    }),
    ("osClean", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(path_clean(str_arg(&a[0]))))
    }),
    ("osExt", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(path_ext(str_arg(&a[0]))))
    }),
    ("osIsAbs", sig(&[Ty::Str], None), |a| {
        Ok(Value::Bool(str_arg(&a[0]).starts_with('/')))
    }),
];

/// Go's `unicode.IsSpace`.
pub(crate) fn is_go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ' | '\u{85}' | '\u{A0}'
    ) || (c as u32 > 0xFF && c.is_whitespace())
}

/// Go maps case one rune to one rune; multi-rune expansions (ß → SS) are
/// left alone, as `unicode.ToUpper` does.
fn upper_char(c: char) -> char {
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

fn lower_char(c: char) -> char {
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

fn map_chars(s: &str, f: fn(char) -> char) -> String {
    s.chars().map(f).collect()
}

/// strings.Title's separator rule.
fn is_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if c.is_alphanumeric() {
        return false;
    }
    is_go_space(c)
}

fn title(s: &str) -> String {
    let mut prev = ' ';
    s.chars()
        .map(|c| {
            let out = if is_separator(prev) { upper_char(c) } else { c };
            prev = c;
            out
        })
        .collect()
}

fn untitle(s: &str) -> String {
    let mut next = true;
    s.chars()
        .map(|c| {
            if is_go_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                lower_char(c)
            } else {
                c
            }
        })
        .collect()
}

fn initials(s: &str) -> String {
    let mut gap = true;
    let mut out = String::new();
    for c in s.chars() {
        if is_go_space(c) {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    out
}

fn swapcase(s: &str) -> String {
    let mut ws = true;
    s.chars()
        .map(|c| {
            if c.is_uppercase() {
                ws = false;
                lower_char(c)
            } else if c.is_lowercase() {
                let r = upper_char(c);
                ws = false;
                r
            } else {
                ws = is_go_space(c);
                c
            }
        })
        .collect()
}

/// Cuts a string at byte offsets like Go's slicing; a cut inside a UTF-8
/// sequence keeps the bytes, shown with replacement characters.
fn byte_slice(s: &str, start: usize, end: usize) -> String {
    String::from_utf8_lossy(&s.as_bytes()[start..end]).into_owned()
}

fn trunc(c: i64, s: &str) -> String {
    let n = s.len() as i64;
    if c < 0 && n + c > 0 {
        return byte_slice(s, (n + c) as usize, s.len());
    }
    if c >= 0 && n > c {
        return byte_slice(s, 0, c as usize);
    }
    s.to_string()
}

fn substr(start: i64, end: i64, s: &str) -> Result<String, String> {
    let n = s.len() as i64;
    let oob = |a: i64, b: i64| format!("runtime error: slice bounds out of range [{a}:{b}]");
    if start < 0 {
        if end < 0 || end > n {
            return Err(format!(
                "runtime error: slice bounds out of range [:{end}] with length {n}"
            ));
        }
        return Ok(byte_slice(s, 0, end as usize));
    }
    if end < 0 || end > n {
        if start > n {
            return Err(format!(
                "runtime error: slice bounds out of range [{start}:{n}]"
            ));
        }
        return Ok(byte_slice(s, start as usize, s.len()));
    }
    if start > end {
        return Err(oob(start, end));
    }
    Ok(byte_slice(s, start as usize, end as usize))
}

fn repeat(count: i64, s: &str) -> Result<String, String> {
    if count < 0 {
        return Err("strings: negative Repeat count".into());
    }
    if (count as u128) * (s.len() as u128) > crate::MAX_OUTPUT as u128 {
        return Err(format!(
            "repeat result exceeds the limit of {} bytes",
            crate::MAX_OUTPUT
        ));
    }
    Ok(s.repeat(count as usize))
}

fn indent(spaces: i64, s: &str) -> Result<String, String> {
    if spaces < 0 {
        return Err("strings: negative Repeat count".into());
    }
    let pad = " ".repeat(spaces as usize);
    Ok(format!("{pad}{}", s.replace('\n', &format!("\n{pad}"))))
}

fn abbrev_full(s: &str, offset: i64, max_width: i64) -> String {
    let n = s.len() as i64;
    if s.is_empty() || n <= max_width {
        return s.to_string();
    }
    let mut offset = offset.min(n);
    if n - offset < max_width - 3 {
        offset = n - (max_width - 3);
    }
    if offset <= 4 {
        return format!("{}...", byte_slice(s, 0, (max_width - 3) as usize));
    }
    if max_width < 7 {
        return String::new();
    }
    if offset + max_width - 3 < n {
        let rest = byte_slice(s, offset as usize, s.len());
        return format!("...{}", abbrev_full(&rest, 0, max_width - 3));
    }
    format!(
        "...{}",
        byte_slice(s, (n - (max_width - 3)) as usize, s.len())
    )
}

fn abbrev(width: i64, s: &str) -> String {
    if width < 4 {
        return s.to_string();
    }
    abbrev_full(s, 0, width)
}

fn abbrevboth(left: i64, right: i64, s: &str) -> String {
    if right < 4 || (left > 0 && right < 7) {
        return s.to_string();
    }
    abbrev_full(s, left, right)
}

/// goutils' WrapCustom.
fn wrap(s: &str, width: i64, newline: &str, wrap_long: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let nl = if newline.is_empty() { "\n" } else { newline };
    let width = width.max(1) as usize;
    let b = s.as_bytes();
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::new();
    while len - offset > width {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (width + offset + 1).min(len);
        match b[offset..end].iter().rposition(|&c| c == b' ') {
            Some(p) => {
                let at = offset + p;
                out.extend_from_slice(&b[offset..at]);
                out.extend_from_slice(nl.as_bytes());
                offset = at + 1;
            }
            None => {
                if wrap_long {
                    out.extend_from_slice(&b[offset..offset + width]);
                    out.extend_from_slice(nl.as_bytes());
                    offset += width;
                } else {
                    let end = width + offset;
                    match b[end..].iter().position(|&c| c == b' ') {
                        None => {
                            out.extend_from_slice(&b[offset..]);
                            offset = len;
                        }
                        Some(i) => {
                            let at = i + end;
                            out.extend_from_slice(&b[offset..at]);
                            out.extend_from_slice(nl.as_bytes());
                            offset = at + 1;
                        }
                    }
                }
            }
        }
    }
    out.extend_from_slice(&b[offset.min(len)..]);
    String::from_utf8_lossy(&out).into_owned()
}

/// Go's `strings.Replace(s, old, new, n)`, including the empty-`old`
/// case (insert `new` around every rune).
pub(crate) fn go_replace(s: &str, old: &str, new: &str, n: i64) -> String {
    if old.is_empty() {
        let mut out = String::new();
        let mut count = 0;
        for c in s.chars() {
            if n < 0 || count < n {
                out.push_str(new);
                count += 1;
            }
            out.push(c);
        }
        if n < 0 || count < n {
            out.push_str(new);
        }
        return out;
    }
    if n < 0 {
        s.replace(old, new)
    } else {
        s.replacen(old, new, n as usize)
    }
}

/// Go's `strings.SplitN(s, sep, n)` (n < 0 means all).
pub(crate) fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if n > 0 && (n as usize) < chars.len() {
            let head: Vec<String> = chars[..n as usize - 1].to_vec();
            let tail: String = chars[n as usize - 1..].concat();
            return head.into_iter().chain(std::iter::once(tail)).collect();
        }
        return chars;
    }
    if n < 0 {
        s.split(sep).map(String::from).collect()
    } else {
        s.splitn(n as usize, sep).map(String::from).collect()
    }
}

fn indexed_map(parts: Vec<String>) -> Value {
    let m: BTreeMap<String, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("_{i}"), Value::from(p)))
        .collect();
    Value::from(m)
}

/// Sprig's `strslice`: lists become their non-nil elements as strings.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l.iter().filter(|e| !e.is_nil()).map(strval).collect(),
        Value::Missing | Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// Go's `strings.Trim(s, cutset)`.
fn trim_set<'a>(s: &'a str, cutset: &str) -> &'a str {
    s.trim_matches(|c| cutset.contains(c))
}

fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

fn path_dir(p: &str) -> String {
    let dir = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    path_clean(dir)
}

fn path_ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_string();
        }
    }
    String::new()
}

/// Go's `path.Clean`.
fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

// xstrings' case conversions (snakecase, kebabcase, camelcase).

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || is_go_space(c)
}

/// xstrings' isAlphabet: letters, except CJK ideographs.
fn is_alphabet(c: char) -> bool {
    c.is_alphabetic()
        && !matches!(c as u32, 0x4E00..=0x9FCC | 0x3400..=0x4DB5 | 0x20000..=0x2A6D6 | 0xF900..=0xFAFF)
}

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation() && !matches!(c, '$' | '+' | '<' | '=' | '>' | '^' | '`' | '|' | '~')
        || (!c.is_ascii() && !c.is_alphanumeric() && !c.is_whitespace() && !c.is_control())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Word {
    Invalid,
    Number,
    Upper,
    Alpha,
    Connector,
    Punct,
    Other,
}

/// Splits the next word off `s` (xstrings' nextWord).
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut it = s.char_indices().peekable();
    let Some((_, c)) = it.next() else {
        return (Word::Invalid, "", "");
    };
    let mut end = c.len_utf8();
    let take_while = |end: &mut usize, f: &dyn Fn(char) -> bool| {
        for (i, ch) in s[*end..].char_indices() {
            if !f(ch) {
                *end += i;
                return;
            }
        }
        *end = s.len();
    };
    let wt = if is_connector(c) {
        take_while(&mut end, &is_connector);
        Word::Connector
    } else if is_punct(c) {
        take_while(&mut end, &is_punct);
        Word::Punct
    } else if c.is_uppercase() {
        let rest = &s[end..];
        if let Some(n) = rest.chars().next() {
            if n.is_uppercase() {
                // A run of capitals; the last one starts the next word when a
                // lower-case letter follows ("HTTPServer" -> "HTTP", "Server").
                let mut last_start = end;
                let mut e = end;
                for (i, ch) in rest.char_indices() {
                    if !ch.is_uppercase() {
                        break;
                    }
                    last_start = end + i;
                    e = end + i + ch.len_utf8();
                }
                if e < s.len() && s[e..].chars().next().is_some_and(is_alphabet) {
                    e = last_start;
                }
                end = e;
            } else if is_alphabet(n) {
                take_while(&mut end, &|ch| is_alphabet(ch) && !ch.is_uppercase());
            }
        }
        Word::Upper
    } else if is_alphabet(c) {
        take_while(&mut end, &|ch| is_alphabet(ch) && !ch.is_uppercase());
        Word::Alpha
    } else if c.is_numeric() {
        take_while(&mut end, &|ch| ch.is_numeric());
        Word::Number
    } else {
        take_while(&mut end, &|ch| {
            !(is_connector(ch) || is_alphabet(ch) || ch.is_numeric() || is_punct(ch))
        });
        Word::Other
    };
    (wt, &s[..end], &s[end..])
}

fn lower_word(out: &mut String, wt: Word, w: &str, conn: char) {
    if wt != Word::Upper && wt != Word::Connector {
        out.push_str(w);
        return;
    }
    for c in w.chars() {
        if is_connector(c) {
            out.push(conn);
        } else {
            out.push(lower_char(c));
        }
    }
}

fn camel_to_lower(s: &str, conn: char) -> String {
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let (mut wt, mut word, mut rest) = next_word(s);
    while !rest.is_empty() {
        if wt != Word::Connector {
            lower_word(&mut out, wt, word, conn);
        }
        let prev = wt;
        let last = word;
        (wt, word, rest) = next_word(rest);
        match prev {
            Word::Number => {
                while wt == Word::Alpha || wt == Word::Number {
                    lower_word(&mut out, wt, word, conn);
                    (wt, word, rest) = next_word(rest);
                }
                if !matches!(wt, Word::Invalid | Word::Punct | Word::Connector) {
                    out.push(conn);
                }
            }
            Word::Connector => lower_word(&mut out, prev, last, conn),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(conn);
                    }
                    continue;
                }
                if rest.is_empty() {
                    continue;
                }
                let num = word;
                (wt, word, rest) = next_word(rest);
                if wt != Word::Alpha {
                    lower_word(&mut out, Word::Number, num, conn);
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(conn);
                    }
                    continue;
                }
                out.push(conn);
                lower_word(&mut out, Word::Number, num, conn);
                while wt == Word::Alpha || wt == Word::Number {
                    lower_word(&mut out, wt, word, conn);
                    (wt, word, rest) = next_word(rest);
                }
                if !matches!(wt, Word::Invalid | Word::Connector | Word::Punct) {
                    out.push(conn);
                }
            }
        }
    }
    lower_word(&mut out, wt, word, conn);
    out
}

/// xstrings' ToPascalCase (sprig's `camelcase`).
fn pascal_case(s: &str) -> String {
    let mut chars = s.chars();
    let mut out = String::new();
    let mut r0 = '\0';
    let mut first_upper = false;
    let mut found = false;
    for c in chars.by_ref() {
        if !is_connector(c) {
            first_upper = c.is_uppercase();
            r0 = upper_char(c);
            found = true;
            break;
        }
        out.push(c);
    }
    if !found {
        return out;
    }
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = r0.is_uppercase();
            r0 = upper_char(r0);
        } else {
            if first_upper {
                if r0.is_uppercase() {
                    r0 = lower_char(r0);
                } else {
                    first_upper = false;
                }
            }
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sprig_string_helpers() {
        assert_eq!(trunc(5, "hello world"), "hello");
        assert_eq!(trunc(-5, "hello world"), "world");
        assert_eq!(abbrev(5, "hello world"), "he...");
        assert_eq!(substr(0, 5, "hello world").unwrap(), "hello");
        assert_eq!(indent(2, "a\nb").unwrap(), "  a\n  b");
        assert_eq!(title("hello world-foo"), "Hello World-Foo");
        assert_eq!(untitle("Hello World"), "hello world");
        assert_eq!(initials("Hello big World"), "HbW");
        assert_eq!(swapcase("Hello World"), "hELLO wORLD");
        assert_eq!(wrap("hello world foo", 5, "", false), "hello\nworld\nfoo");
    }

    #[test]
    fn case_conversions_like_xstrings() {
        assert_eq!(camel_to_lower("FirstName", '_'), "first_name");
        assert_eq!(camel_to_lower("HTTPServer", '_'), "http_server");
        assert_eq!(camel_to_lower("NoHTTPS", '_'), "no_https");
        assert_eq!(camel_to_lower("GO_PATH", '_'), "go_path");
        assert_eq!(camel_to_lower("GO PATH", '_'), "go_path");
        assert_eq!(camel_to_lower("fooBar", '-'), "foo-bar");
        assert_eq!(pascal_case("http_server"), "HttpServer");
        assert_eq!(pascal_case("_my_field_name_2"), "_MyFieldName2");
    }

    #[test]
    fn go_split_and_replace() {
        assert_eq!(go_split("a,b,c", ",", 2), vec!["a", "b,c"]);
        assert_eq!(go_split("abc", "", -1), vec!["a", "b", "c"]);
        assert_eq!(go_replace("ab", "", "-", -1), "-a-b-");
    }

    #[test]
    fn paths_like_go() {
        assert_eq!(path_base("/a/b.txt"), "b.txt");
        assert_eq!(path_dir("/a/b/c"), "/a/b");
        assert_eq!(path_clean("a/../../b/./c/"), "../b/c");
        assert_eq!(path_ext("a/b.tar.gz"), ".gz");
    }
}
