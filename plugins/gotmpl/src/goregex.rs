//! Go (RE2) regular expressions on Rust's `regex` crate, for sprig's regex
//! functions and for PublishedResource regex mutations.
//!
//! The two syntaxes are nearly the same; the differences that matter are
//! bridged by rewriting the pattern:
//! - Go's `\d \w \s \b` (and negations) are ASCII-only; Rust's are Unicode-aware.
//!   Go's `\s` is `[\t\n\f\r ]`, without the `\v` of Rust's ASCII `\s`.
//! - An escaped ASCII punctuation character is a literal in Go; in Rust `\<` and
//!   `\>` are word boundaries.
//! - Go has `\Q…\E` literal quoting; Rust does not. (Inside a character class
//!   Go rejects it; the body is taken as literals here.)
//! - Inside a character class Go takes `[`, `&&`, `--` and `~~` literally; Rust
//!   uses them for nested classes and set operations. Go reads `[+--]` as the
//!   range `+`-`-`.
//!
//! Replacement strings need no translation for the usual forms: `$1`, `${1}`,
//! `$name` and `$$` mean the same in both (including Go's rule that `$1x` names
//! group `1x`).
use regex::{Regex, RegexBuilder};

/// Compiles a Go regular expression; errors are worded like Go's
/// (``error parsing regexp: …: `pattern` ``).
pub fn compile(pattern: &str) -> Result<Regex, String> {
    Regex::new(&translate(pattern)).map_err(|e| go_error(pattern, e))
}

/// Like [`compile`], with the compiled program limited to about `size_limit`
/// bytes (see [`RegexBuilder::size_limit`]).
pub fn compile_with_size_limit(pattern: &str, size_limit: usize) -> Result<Regex, String> {
    RegexBuilder::new(&translate(pattern))
        .size_limit(size_limit)
        .build()
        .map_err(|e| go_error(pattern, e))
}

fn go_error(pattern: &str, e: regex::Error) -> String {
    let detail = match e {
        regex::Error::Syntax(s) => s
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .trim_start_matches("error: ")
            .to_string(),
        other => other.to_string(),
    };
    format!("error parsing regexp: {detail}: `{pattern}`")
}

/// Rewrites a Go pattern into an equivalent Rust pattern.
pub fn translate(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                let e = chars[i + 1];
                match e {
                    'Q' => {
                        let (literal, next) = quoted(&chars, i + 2);
                        out.push_str(&regex::escape(&literal));
                        i = next;
                    }
                    'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                        let (negated, set) = perl_class(e);
                        out.push_str(if negated { "[^" } else { "[" });
                        out.push_str(set);
                        out.push(']');
                        i += 2;
                    }
                    'b' | 'B' => {
                        out.push_str("(?-u:\\");
                        out.push(e);
                        out.push(')');
                        i += 2;
                    }
                    _ => i = push_escape(&mut out, &chars, i),
                }
            }
            '[' => i = translate_class(&mut out, &chars, i),
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Go's Perl classes, ASCII-only: whether the class is negated, and its ranges
/// as Rust class items.
fn perl_class(c: char) -> (bool, &'static str) {
    match c {
        'd' => (false, "0-9"),
        'D' => (true, "0-9"),
        'w' => (false, "0-9A-Za-z_"),
        'W' => (true, "0-9A-Za-z_"),
        's' => (false, "\\t\\n\\f\\r "),
        'S' => (true, "\\t\\n\\f\\r "),
        _ => unreachable!("only called for Perl class letters"),
    }
}

/// The body of a `\Q…\E` quote that starts at `start` (after `\Q`), and the
/// index after the quote; without `\E` the quote runs to the end.
fn quoted(chars: &[char], start: usize) -> (String, usize) {
    let mut end = start;
    while end < chars.len() && !(chars[end] == '\\' && chars.get(end + 1) == Some(&'E')) {
        end += 1;
    }
    let literal = chars[start..end].iter().collect();
    (literal, if end < chars.len() { end + 2 } else { end })
}

/// Pushes `c` as a literal, escaped if Rust gives it a meaning (in or out of a
/// character class).
fn push_literal(out: &mut String, c: char) {
    out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
}

/// Copies the escape sequence whose backslash is at `chars[i]` (and which is
/// not followed by the end) and returns the index after it.
fn push_escape(out: &mut String, chars: &[char], i: usize) -> usize {
    let e = chars[i + 1];
    if e.is_ascii() && !e.is_ascii_alphanumeric() {
        // Go: an escaped ASCII non-word character is always itself.
        push_literal(out, e);
        return i + 2;
    }
    out.push('\\');
    out.push(e);
    let mut j = i + 2;
    match e {
        // \p{Greek}, \pL, \x{263a}, \x7F: keep the body with its escape.
        'p' | 'P' | 'x' if chars.get(j) == Some(&'{') => {
            while j < chars.len() {
                out.push(chars[j]);
                j += 1;
                if chars[j - 1] == '}' {
                    break;
                }
            }
        }
        'p' | 'P' if j < chars.len() => {
            out.push(chars[j]);
            j += 1;
        }
        'x' => {
            while j < chars.len() && j < i + 4 && chars[j].is_ascii_hexdigit() {
                out.push(chars[j]);
                j += 1;
            }
        }
        _ => {}
    }
    j
}

/// Translates the character class that opens at `chars[start]` (a `[`) item
/// by item, the way Go's parser reads it, and returns the index after it.
fn translate_class(out: &mut String, chars: &[char], start: usize) -> usize {
    out.push('[');
    let mut i = start + 1;
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    // A `]` first in the class is a literal.
    let first = i;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && i != first {
            out.push(']');
            return i + 1;
        }
        if c == '[' && chars.get(i + 1) == Some(&':') {
            // A POSIX class like [:alpha:], copied whole; without its `:]`, the
            // `[` is a literal.
            if let Some(end) = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == ':' && chars[j + 1] == ']')
            {
                out.extend(&chars[i..end + 2]);
                i = end + 2;
                continue;
            }
        }
        if c == '\\' && i + 1 < chars.len() {
            let e = chars[i + 1];
            match e {
                'Q' => {
                    let (literal, next) = quoted(chars, i + 2);
                    literal.chars().for_each(|ch| push_literal(out, ch));
                    i = next;
                    continue;
                }
                'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                    let (negated, set) = perl_class(e);
                    if negated {
                        out.push_str("[^");
                        out.push_str(set);
                        out.push(']');
                    } else {
                        out.push_str(set);
                    }
                    i += 2;
                    continue;
                }
                'p' | 'P' => {
                    i = push_escape(out, chars, i);
                    continue;
                }
                _ => {}
            }
        }
        // A single character, or a range if `-` and a character other than
        // `]` follow. Every literal `-` is escaped, so Rust sees no `--`.
        i = push_class_char(out, chars, i);
        if chars.get(i) == Some(&'-') && i + 1 < chars.len() && chars[i + 1] != ']' {
            out.push('-');
            i = push_class_char(out, chars, i + 1);
        }
    }
    // Unclosed: Rust reports the error.
    i
}

/// Pushes one character of a class (a literal or an escape) at `chars[i]`
/// and returns the index after it.
fn push_class_char(out: &mut String, chars: &[char], i: usize) -> usize {
    if chars[i] == '\\' && i + 1 < chars.len() {
        push_escape(out, chars, i)
    } else {
        push_literal(out, chars[i]);
        i + 1
    }
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
        let re = compile(r"^\d+$").unwrap();
        assert!(re.is_match("123"));
        assert!(!re.is_match("١٢٣"), "Arabic-Indic digits are not \\d in Go");
        assert!(compile(r"[\w-]+").unwrap().is_match("a-b"));
        assert_eq!(replace(r"\D+", "a1é", "#"), "#1#");
        assert_eq!(replace(r"\W", "a-é", "#"), "a##");
        assert_eq!(
            replace(r"\s", "\t\u{b}", "_"),
            "_\u{b}",
            "Go's \\s has no \\v"
        );
        assert_eq!(replace(r"[\S]", " \u{b}", "#"), " #");
        // Go folds case over the ASCII class: K and s match the Kelvin sign and ſ.
        assert_eq!(replace(r"(?i)\w", "\u{212a}ſ", "#"), "##");
    }

    #[test]
    fn escaped_punctuation_is_literal() {
        assert!(compile(r"a\<b").unwrap().is_match("a<b"));
        assert_eq!(replace(r"a\>b|[\<]|\.", "a>b<.", "#"), "###");
    }

    #[test]
    fn class_literals_that_rust_treats_as_operators() {
        assert_eq!(replace(r"[a[]", "[a]", "#"), "##]");
        assert_eq!(replace(r"[&&]", "a&&b", "#"), "a##b");
        assert!(compile(r"[a&&b]").unwrap().is_match("&"));
        assert_eq!(replace(r"[~~x]", "~x", "#"), "##");
        assert_eq!(replace(r"[]a]", "]a", "#"), "##");
        assert_eq!(replace(r"[^]a]", "]ab", "#"), "]a#");
        assert_eq!(replace(r"[[:digit:]x]", "1x2y", "#"), "###y");
        assert_eq!(replace(r"[+--]", "+,-.", "#"), "###.");
        assert_eq!(replace(r"[--a]", "-0a~", "#"), "###~");
        assert_eq!(replace(r"[\pL-z]", "é-0", "#"), "##0");
        assert_eq!(replace(r"[[:a]", "[:a]", "#"), "###]");
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

    #[test]
    fn errors_name_the_pattern() {
        assert!(compile("a(").unwrap_err().contains("`a(`"));
    }
}
