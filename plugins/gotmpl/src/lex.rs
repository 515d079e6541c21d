//! Tokenizer for Go template source, following text/template's lexer
//! (delimiters `{{ }}`, trim markers, comments, Go literals). It runs to
//! completion in one pass: no goroutine/thread as in Go's design.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    Text,
    LeftDelim,
    RightDelim,
    Space,
    Identifier,
    Field,
    Variable,
    Dot,
    Number,
    CharConstant,
    String,
    RawString,
    Bool,
    Nil,
    Pipe,
    LeftParen,
    RightParen,
    Assign,
    Declare,
    /// Other printable ASCII inside an action (`,` in range declarations).
    Char,
    // Keywords.
    Block,
    Break,
    Continue,
    Define,
    Else,
    End,
    If,
    Range,
    Template,
    With,
    Eof,
    Error,
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub val: String,
    /// Byte offset in the source.
    pub pos: usize,
}

impl Token {
    /// How Go's parser names a token in "unexpected ..." messages.
    pub fn describe(&self) -> String {
        match self.tok {
            Tok::Eof => "EOF".into(),
            Tok::Error => self.val.clone(),
            Tok::Text => format!("{:?}", self.val),
            Tok::Block
            | Tok::Break
            | Tok::Continue
            | Tok::Define
            | Tok::Else
            | Tok::End
            | Tok::If
            | Tok::Range
            | Tok::Template
            | Tok::With
            | Tok::Nil => {
                format!("<{}>", self.val)
            }
            Tok::RightDelim => "\"}}\"".into(),
            Tok::LeftDelim => "\"{{\"".into(),
            _ => {
                if self.val.len() > 10 {
                    format!("{:.10}...", format!("{:?}", self.val))
                } else {
                    format!("{:?}", self.val)
                }
            }
        }
    }
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

fn has_left_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(b[1])
}

fn has_right_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(b[0]) && b[1] == b'-'
}

fn right_trim_len(s: &str) -> usize {
    s.len() - s.trim_end_matches([' ', '\t', '\r', '\n']).len()
}

fn left_trim_len(s: &str) -> usize {
    s.len() - s.trim_start_matches([' ', '\t', '\r', '\n']).len()
}

struct Lexer<'a> {
    input: &'a str,
    start: usize,
    pos: usize,
    paren_depth: i32,
    items: Vec<Token>,
}

/// Tokenizes the whole source. The last token is `Eof` or `Error`.
pub fn lex(input: &str) -> Vec<Token> {
    let mut l = Lexer {
        input,
        start: 0,
        pos: 0,
        paren_depth: 0,
        items: Vec::new(),
    };
    l.run();
    l.items
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
        }
    }

    fn emit(&mut self, tok: Tok) {
        let val = self.input[self.start..self.pos].to_string();
        self.items.push(Token {
            tok,
            val,
            pos: self.start,
        });
        self.start = self.pos;
    }

    fn ignore(&mut self) {
        self.start = self.pos;
    }

    fn error(&mut self, msg: String) {
        self.items.push(Token {
            tok: Tok::Error,
            val: msg,
            pos: self.start,
        });
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(c) if valid.contains(c) => {
                self.pos += c.len_utf8();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let r = self.rest();
        if has_right_trim(r) && r[2..].starts_with(RIGHT) {
            return (true, true);
        }
        (r.starts_with(RIGHT), false)
    }

    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if c.is_ascii() && is_space(c as u8) => true,
            Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            _ => self.rest().starts_with(RIGHT),
        }
    }

    fn run(&mut self) {
        loop {
            // Text.
            match self.rest().find(LEFT) {
                Some(x) => {
                    if x > 0 {
                        self.pos += x;
                        let mut trim = 0;
                        if has_left_trim(&self.input[self.pos + LEFT.len()..]) {
                            trim = right_trim_len(&self.input[self.start..self.pos]);
                        }
                        let text_end = self.pos - trim;
                        if text_end > self.start {
                            let val = self.input[self.start..text_end].to_string();
                            self.items.push(Token {
                                tok: Tok::Text,
                                val,
                                pos: self.start,
                            });
                        }
                        self.ignore();
                    }
                    if !self.left_delim() {
                        return;
                    }
                }
                None => {
                    self.pos = self.input.len();
                    if self.pos > self.start {
                        self.emit(Tok::Text);
                    }
                    self.emit(Tok::Eof);
                    return;
                }
            }
        }
    }

    /// Lexes from a left delimiter to the end of the action; false on error.
    fn left_delim(&mut self) -> bool {
        self.pos += LEFT.len();
        let trim = has_left_trim(self.rest());
        let after = if trim { 2 } else { 0 };
        if self.input[self.pos + after..].starts_with(LEFT_COMMENT) {
            self.pos += after;
            self.ignore();
            return self.comment();
        }
        self.emit(Tok::LeftDelim);
        self.pos += after;
        self.ignore();
        self.paren_depth = 0;
        self.inside_action()
    }

    fn comment(&mut self) -> bool {
        self.pos += LEFT_COMMENT.len();
        let Some(x) = self.rest().find(RIGHT_COMMENT) else {
            self.error("unclosed comment".into());
            return false;
        };
        self.pos += x + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            self.error("comment ends before closing delimiter".into());
            return false;
        }
        if trim {
            self.pos += 2;
        }
        self.pos += RIGHT.len();
        if trim {
            self.pos += left_trim_len(self.rest());
        }
        self.ignore();
        true
    }

    fn right_delim(&mut self, trim: bool) {
        if trim {
            self.pos += 2;
            self.ignore();
        }
        self.pos += RIGHT.len();
        self.emit(Tok::RightDelim);
        if trim {
            self.pos += left_trim_len(self.rest());
            self.ignore();
        }
    }

    fn inside_action(&mut self) -> bool {
        loop {
            let (delim, trim) = self.at_right_delim();
            if delim {
                if self.paren_depth == 0 {
                    self.right_delim(trim);
                    return true;
                }
                self.error("unclosed left paren".into());
                return false;
            }
            let r = self.next();
            let ok = match r {
                None => {
                    self.error("unclosed action".into());
                    false
                }
                Some(c) if c.is_ascii() && is_space(c as u8) => {
                    self.backup(r);
                    self.space();
                    if self.items.last().is_some_and(|t| t.tok == Tok::RightDelim) {
                        // " -}}" closed the action.
                        return true;
                    }
                    true
                }
                Some('=') => {
                    self.emit(Tok::Assign);
                    true
                }
                Some(':') => {
                    if self.next() != Some('=') {
                        self.error("expected :=".into());
                        false
                    } else {
                        self.emit(Tok::Declare);
                        true
                    }
                }
                Some('|') => {
                    self.emit(Tok::Pipe);
                    true
                }
                Some('"') => self.quote(),
                Some('`') => self.raw_quote(),
                Some('$') => self.variable(),
                Some('\'') => self.char_const(),
                Some('.') => match self.input.as_bytes().get(self.pos) {
                    Some(b) if b.is_ascii_digit() => {
                        self.backup(r);
                        self.number()
                    }
                    _ => self.field_or_variable(Tok::Field),
                },
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.backup(r);
                    self.number()
                }
                Some(c) if is_alnum(c) => {
                    self.backup(r);
                    self.identifier()
                }
                Some('(') => {
                    self.paren_depth += 1;
                    self.emit(Tok::LeftParen);
                    true
                }
                Some(')') => {
                    self.paren_depth -= 1;
                    if self.paren_depth < 0 {
                        self.error("unexpected right paren".into());
                        false
                    } else {
                        self.emit(Tok::RightParen);
                        true
                    }
                }
                Some(c) if c.is_ascii() && !c.is_ascii_control() => {
                    self.emit(Tok::Char);
                    true
                }
                Some(c) => {
                    self.error(format!(
                        "unrecognized character in action: {}",
                        describe_rune(c)
                    ));
                    false
                }
            };
            if !ok {
                return false;
            }
        }
    }

    fn space(&mut self) {
        let mut n = 0;
        while let Some(c) = self.peek() {
            if !(c.is_ascii() && is_space(c as u8)) {
                break;
            }
            self.next();
            n += 1;
        }
        // A space before "-}}" belongs to the trim marker.
        let before = &self.input[self.pos - 1..];
        if has_right_trim(before) && before[2..].starts_with(RIGHT) {
            self.pos -= 1;
            if n == 1 {
                self.right_delim(true);
                return;
            }
        }
        self.emit(Tok::Space);
    }

    fn identifier(&mut self) -> bool {
        while let Some(c) = self.peek() {
            if !is_alnum(c) {
                break;
            }
            self.next();
        }
        if !self.at_terminator() {
            let c = self.peek().unwrap_or(' ');
            self.error(format!("bad character {}", describe_rune(c)));
            return false;
        }
        let word = &self.input[self.start..self.pos];
        let tok = match word {
            "block" => Tok::Block,
            "break" => Tok::Break,
            "continue" => Tok::Continue,
            "define" => Tok::Define,
            "else" => Tok::Else,
            "end" => Tok::End,
            "if" => Tok::If,
            "range" => Tok::Range,
            "nil" => Tok::Nil,
            "template" => Tok::Template,
            "with" => Tok::With,
            "true" | "false" => Tok::Bool,
            _ => Tok::Identifier,
        };
        self.emit(tok);
        true
    }

    fn variable(&mut self) -> bool {
        if self.at_terminator() {
            self.emit(Tok::Variable);
            return true;
        }
        self.field_or_variable(Tok::Variable)
    }

    fn field_or_variable(&mut self, tok: Tok) -> bool {
        if self.at_terminator() {
            self.emit(if tok == Tok::Variable {
                Tok::Variable
            } else {
                Tok::Dot
            });
            return true;
        }
        while let Some(c) = self.peek() {
            if !is_alnum(c) {
                break;
            }
            self.next();
        }
        if !self.at_terminator() {
            let c = self.peek().unwrap_or(' ');
            self.error(format!("bad character {}", describe_rune(c)));
            return false;
        }
        self.emit(tok);
        true
    }

    fn char_const(&mut self) -> bool {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    None | Some('\n') => {
                        self.error("unterminated character constant".into());
                        return false;
                    }
                    _ => {}
                },
                None | Some('\n') => {
                    self.error("unterminated character constant".into());
                    return false;
                }
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(Tok::CharConstant);
        true
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if let Some(c) = self.peek()
            && is_alnum(c)
        {
            self.next();
            return false;
        }
        true
    }

    fn number(&mut self) -> bool {
        if !self.scan_number() {
            let text = self.input[self.start..self.pos].to_string();
            self.error(format!("bad number syntax: {text:?}"));
            return false;
        }
        if matches!(self.peek(), Some('+' | '-')) {
            // Complex numbers are not supported by this engine.
            self.scan_number();
            let text = self.input[self.start..self.pos].to_string();
            self.error(format!(
                "complex number constants are not supported: {text:?}"
            ));
            return false;
        }
        self.emit(Tok::Number);
        true
    }

    fn quote(&mut self) -> bool {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    None | Some('\n') => {
                        self.error("unterminated quoted string".into());
                        return false;
                    }
                    _ => {}
                },
                None | Some('\n') => {
                    self.error("unterminated quoted string".into());
                    return false;
                }
                Some('"') => break,
                _ => {}
            }
        }
        self.emit(Tok::String);
        true
    }

    fn raw_quote(&mut self) -> bool {
        loop {
            match self.next() {
                None => {
                    self.error("unterminated raw quoted string".into());
                    return false;
                }
                Some('`') => break,
                _ => {}
            }
        }
        self.emit(Tok::RawString);
        true
    }
}

/// Go's `%#U` of a rune: `U+0021 '!'`.
pub fn describe_rune(c: char) -> String {
    if crate::gofmt::is_print(c) {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        lex(src).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn lexes_actions_and_text() {
        assert_eq!(
            kinds("a{{ .b | printf \"%d\" }}c"),
            vec![
                Tok::Text,
                Tok::LeftDelim,
                Tok::Space,
                Tok::Field,
                Tok::Space,
                Tok::Pipe,
                Tok::Space,
                Tok::Identifier,
                Tok::Space,
                Tok::String,
                Tok::Space,
                Tok::RightDelim,
                Tok::Text,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn trim_markers_remove_surrounding_whitespace() {
        let toks = lex("a  \n{{- 1 -}}\n  b");
        assert_eq!(toks[0].val, "a");
        assert_eq!(toks.iter().rev().nth(1).map(|t| t.val.as_str()), Some("b"));
        // "-3" is a number, not a trim marker.
        assert_eq!(
            kinds("{{-3}}"),
            vec![Tok::LeftDelim, Tok::Number, Tok::RightDelim, Tok::Eof]
        );
    }

    #[test]
    fn comments_are_dropped() {
        let toks = lex("a {{- /* c */ -}} b");
        assert_eq!(
            toks.iter()
                .filter(|t| t.tok == Tok::Text)
                .map(|t| t.val.clone())
                .collect::<Vec<_>>(),
            vec!["a", "b"]
        );
        assert_eq!(
            lex("{{/* x */ 1}}").last().map(|t| t.val.clone()),
            Some("comment ends before closing delimiter".into())
        );
    }

    #[test]
    fn reports_lexical_errors() {
        assert_eq!(lex("{{ \"abc }}").last().map(|t| t.tok), Some(Tok::Error));
        assert_eq!(
            lex("{{ 3x }}").last().map(|t| t.val.clone()),
            Some("bad number syntax: \"3x\"".into())
        );
        assert_eq!(
            lex("{{ (1 }}").last().map(|t| t.val.clone()),
            Some("unclosed left paren".into())
        );
        assert_eq!(
            lex("{{ 1").last().map(|t| t.val.clone()),
            Some("unclosed action".into())
        );
    }
}
