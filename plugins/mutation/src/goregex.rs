//! Go (RE2) regular expressions on Rust's `regex` crate.
//!
//! The two syntaxes are nearly the same; the differences that matter for
//! PublishedResource patterns are bridged by rewriting the pattern:
//! - Go's `\d \w \s \b` (and negations) are ASCII-only; Rust's are Unicode-aware.
//! - Go has `\Q…\E` literal quoting; Rust does not.
//! - Inside a character class Go takes `[`, `&&`, `--` and `~~` literally; Rust uses
//!   them for nested classes and set operations.
//!
//! Replacement strings need no translation: `$1`, `${1}`, `$name` and `$$` mean the
//! same in both (including Go's rule that `$1x` names group `1x`).
use regex::Regex;

/// Compiles a Go regular expression.
pub fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&translate(pattern))
}

fn ascii_class(c: char) -> &'static str {
    match c {
        'd' => "[:digit:]",
        'D' => "[:^digit:]",
        'w' => "[:word:]",
        'W' => "[:^word:]",
        's' => "[:space:]",
        'S' => "[:^space:]",
        _ => unreachable!("only called for Perl class letters"),
    }
}

/// Rewrites a Go pattern into an equivalent Rust pattern.
pub fn translate(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    // Index of the first character inside the current class (after `[` and `^`),
    // where `]` is a literal.
    let mut class_first = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let e = chars[i + 1];
            match e {
                'Q' => {
                    // Everything up to `\E` (or the end) is literal.
                    let start = i + 2;
                    let mut end = start;
                    while end < chars.len()
                        && !(chars[end] == '\\' && chars.get(end + 1) == Some(&'E'))
                    {
                        end += 1;
                    }
                    let literal: String = chars[start..end].iter().collect();
                    if in_class {
                        for ch in literal.chars() {
                            if ch.is_ascii_punctuation() {
                                out.push('\\');
                            }
                            out.push(ch);
                        }
                    } else {
                        out.push_str(&regex::escape(&literal));
                    }
                    i = if end < chars.len() { end + 2 } else { end };
                    continue;
                }
                'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                    if in_class {
                        out.push('[');
                        out.push_str(ascii_class(e));
                        out.push(']');
                    } else {
                        out.push_str("(?-u:\\");
                        out.push(e);
                        out.push(')');
                    }
                }
                'b' | 'B' if !in_class => {
                    out.push_str("(?-u:\\");
                    out.push(e);
                    out.push(')');
                }
                _ => {
                    out.push('\\');
                    out.push(e);
                }
            }
            i += 2;
            continue;
        }
        if !in_class {
            out.push(c);
            if c == '[' {
                in_class = true;
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                class_first = i + 1;
            }
            i += 1;
            continue;
        }
        // Inside a character class.
        if c == ']' && i != class_first {
            in_class = false;
            out.push(c);
        } else if c == '[' && chars.get(i + 1) == Some(&':') {
            // A POSIX class like [:alpha:], copied whole.
            let end = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == ':' && chars[j + 1] == ']')
                .map_or(chars.len(), |j| j + 2);
            out.extend(&chars[i..end]);
            i = end;
            continue;
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            // Go reads `a--` as a range ending in '-'; keep Rust from seeing `--`.
            out.push('-');
            out.push_str("\\-");
            i += 2;
            continue;
        } else {
            push_class_literal(&mut out, c);
        }
        i += 1;
    }
    out
}

fn push_class_literal(out: &mut String, c: char) {
    if matches!(c, '[' | '&' | '~') {
        out.push('\\');
    }
    out.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replace(pattern: &str, input: &str, replacement: &str) -> String {
        compile(pattern)
            .unwrap()
            .replace_all(input, replacement)
            .into_owned()
    }

    #[test]
    fn perl_classes_are_ascii_like_go() {
        assert_eq!(replace(r"\d", "a1٣", "#"), "a#٣");
        assert_eq!(replace(r"[\d]+", "12٣", "#"), "#٣");
        assert_eq!(replace(r"\w+", "héllo", "#"), "#é#");
        assert_eq!(replace(r"[^\w]", "a-é", "#"), "a##");
        assert_eq!(replace(r"\s", "a b\u{a0}c", "_"), "a_b\u{a0}c");
        assert_eq!(replace(r"\bx", "x éx", "#"), "# é#");
    }

    #[test]
    fn class_literals_that_rust_treats_as_operators() {
        assert_eq!(replace(r"[a[]", "[a]", "#"), "##]");
        assert_eq!(replace(r"[&&]", "a&&b", "#"), "a##b");
        assert_eq!(replace(r"[~~x]", "~x", "#"), "##");
        assert_eq!(replace(r"[]a]", "]a", "#"), "##");
        assert_eq!(replace(r"[^]a]", "]ab", "#"), "]a#");
        assert_eq!(replace(r"[[:digit:]x]", "1x2y", "#"), "###y");
        assert_eq!(replace(r"[+--]", "+,-.", "#"), "###.");
    }

    #[test]
    fn quoted_literals() {
        assert_eq!(replace(r"\Qa.b\E+", "a.bb a.b axb", "#"), "# # axb");
        assert_eq!(replace(r"x\Q*", "x*y", "#"), "#y");
        assert_eq!(replace(r"[\Q]-^\E]+", "a]-^b", "#"), "a#b");
    }

    #[test]
    fn replacement_groups_follow_go() {
        assert_eq!(replace("(f)oo", "foo", "oo$1"), "oof");
        assert_eq!(replace("(f)oo", "foo", "${1}x"), "fx");
        assert_eq!(replace("(f)oo", "foo", "$1x"), "");
        assert_eq!(replace("(?P<first>f)oo", "foo", "$first!"), "f!");
        assert_eq!(replace("o", "foo", "$$"), "f$$");
    }

    #[test]
    fn go_rejects_what_rust_rejects() {
        assert!(compile(r"(a").is_err());
        assert!(compile(r"a\1").is_err());
    }
}
