//! Parser from tokens to the template tree, following text/template/parse:
//! the same grammar, scoping of variables, `else if`/`else with` sugar,
//! `define`/`block` handling and error messages.

use std::collections::HashMap;
use std::fmt;

use crate::lex::{Tok, Token, lex};

/// A parsed number literal with every interpretation Go allows for it.
#[derive(Clone, Debug)]
pub struct Number {
    pub text: String,
    pub is_int: bool,
    pub is_float: bool,
    pub int: i64,
    pub float: f64,
    /// Char constants (`'a'`) and hex integers are never floats when untyped.
    pub is_rune: bool,
}

#[derive(Clone, Debug)]
pub enum Arg {
    Dot {
        pos: usize,
    },
    Nil {
        pos: usize,
    },
    Bool {
        pos: usize,
        val: bool,
    },
    Number {
        pos: usize,
        num: Number,
    },
    String {
        pos: usize,
        quoted: String,
        text: String,
    },
    /// `.a.b`
    Field {
        pos: usize,
        idents: Vec<String>,
    },
    /// `$x.a.b`; `idents[0]` is the variable name including `$`.
    Variable {
        pos: usize,
        idents: Vec<String>,
    },
    Identifier {
        pos: usize,
        name: String,
    },
    /// `(pipeline).a.b` or another term followed by fields.
    Chain {
        pos: usize,
        node: Box<Arg>,
        fields: Vec<String>,
    },
    Pipe(Box<Pipe>),
}

impl Arg {
    pub fn pos(&self) -> usize {
        match self {
            Arg::Dot { pos }
            | Arg::Nil { pos }
            | Arg::Bool { pos, .. }
            | Arg::Number { pos, .. }
            | Arg::String { pos, .. }
            | Arg::Field { pos, .. }
            | Arg::Variable { pos, .. }
            | Arg::Identifier { pos, .. }
            | Arg::Chain { pos, .. } => *pos,
            Arg::Pipe(p) => p.pos,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Command {
    pub pos: usize,
    pub args: Vec<Arg>,
}

#[derive(Clone, Debug)]
pub struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    /// Declared or assigned variables, with their positions.
    pub decl: Vec<(String, usize)>,
    pub cmds: Vec<Command>,
}

#[derive(Clone, Debug)]
pub struct Branch {
    pub pos: usize,
    pub pipe: Pipe,
    pub list: Vec<Node>,
    pub else_list: Option<Vec<Node>>,
}

#[derive(Clone, Debug)]
pub enum Node {
    Text {
        text: String,
    },
    Action {
        pos: usize,
        pipe: Pipe,
    },
    If(Branch),
    With(Branch),
    Range(Branch),
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break,
    Continue,
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Dot { .. } => write!(f, "."),
            Arg::Nil { .. } => write!(f, "nil"),
            Arg::Bool { val, .. } => write!(f, "{val}"),
            Arg::Number { num, .. } => write!(f, "{}", num.text),
            Arg::String { quoted, .. } => write!(f, "{quoted}"),
            Arg::Field { idents, .. } => {
                for i in idents {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Variable { idents, .. } => write!(f, "{}", idents.join(".")),
            Arg::Identifier { name, .. } => write!(f, "{name}"),
            Arg::Chain { node, fields, .. } => {
                if let Arg::Pipe(_) = **node {
                    write!(f, "({node})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for i in fields {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                write!(f, " ")?;
            }
            if let Arg::Pipe(p) = a {
                write!(f, "({p})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            let names: Vec<&str> = self.decl.iter().map(|(n, _)| n.as_str()).collect();
            write!(f, "{}", names.join(", "))?;
            write!(f, "{}", if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                write!(f, " | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// A parse failure at a byte offset.
#[derive(Debug)]
pub struct ParseError {
    pub pos: usize,
    pub msg: String,
}

type PResult<T> = Result<T, ParseError>;

/// The result of parsing: the main tree plus every `define`/`block`.
#[derive(Debug)]
pub struct Parsed {
    pub root: Vec<Node>,
    pub defs: HashMap<String, Vec<Node>>,
}

struct Parser<'a> {
    toks: Vec<Token>,
    i: usize,
    vars: Vec<String>,
    range_depth: usize,
    paren_depth: usize,
    /// Nesting of if/range/with/block, bounded like parentheses.
    control_depth: usize,
    has_func: &'a dyn Fn(&str) -> bool,
    defs: HashMap<String, Vec<Node>>,
}

/// Deepest nesting of parenthesised pipelines accepted; deeper input would
/// risk exhausting the guest's stack.
const MAX_PAREN_DEPTH: usize = 100;

/// Deepest nesting of control structures (if/range/with/block) accepted,
/// for the same reason; real templates stay far below it.
pub const MAX_CONTROL_DEPTH: usize = 100;

/// Parses `src`; `has_func` decides which identifiers are functions.
pub fn parse(src: &str, has_func: &dyn Fn(&str) -> bool) -> PResult<Parsed> {
    let mut p = Parser {
        toks: lex(src),
        i: 0,
        vars: vec!["$".into()],
        range_depth: 0,
        paren_depth: 0,
        control_depth: 0,
        has_func,
        defs: HashMap::new(),
    };
    let mut root = Vec::new();
    while p.peek().tok != Tok::Eof {
        if p.peek().tok == Tok::LeftDelim {
            let save = p.i;
            p.next();
            if p.next_non_space().tok == Tok::Define {
                p.parse_definition()?;
                continue;
            }
            p.i = save;
        }
        match p.text_or_action()? {
            Item::Node(n) => root.push(n),
            Item::End(pos) => {
                return Err(ParseError {
                    pos,
                    msg: "unexpected {{end}}".into(),
                });
            }
            Item::Else(pos) => {
                return Err(ParseError {
                    pos,
                    msg: "unexpected {{else}}".into(),
                });
            }
        }
    }
    if let Some(t) = p.toks.last()
        && t.tok == Tok::Error
    {
        return Err(ParseError {
            pos: t.pos,
            msg: t.val.clone(),
        });
    }
    Ok(Parsed { root, defs: p.defs })
}

enum Item {
    Node(Node),
    End(usize),
    Else(usize),
}

/// Whether a tree has nothing but whitespace text (Go's IsEmptyTree).
fn is_empty_tree(list: &[Node]) -> bool {
    list.iter()
        .all(|n| matches!(n, Node::Text { text } if text.trim().is_empty()))
}

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.toks[self.i.min(self.toks.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.toks[self.i.min(self.toks.len() - 1)].clone();
        if self.i < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn backup(&mut self) {
        self.i -= 1;
    }

    fn next_non_space(&mut self) -> Token {
        loop {
            let t = self.next();
            if t.tok != Tok::Space {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> Token {
        let t = self.next_non_space();
        self.backup();
        t
    }

    fn err<T>(&self, pos: usize, msg: impl Into<String>) -> PResult<T> {
        Err(ParseError {
            pos,
            msg: msg.into(),
        })
    }

    fn unexpected<T>(&self, t: &Token, context: &str) -> PResult<T> {
        if t.tok == Tok::Error {
            return self.err(t.pos, t.val.clone());
        }
        self.err(t.pos, format!("unexpected {} in {context}", t.describe()))
    }

    fn expect(&mut self, tok: Tok, context: &str) -> PResult<Token> {
        let t = self.next_non_space();
        if t.tok != tok {
            return self.unexpected(&t, context);
        }
        Ok(t)
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let t = self.next_non_space();
        if !matches!(t.tok, Tok::String | Tok::RawString) {
            return self.unexpected(&t, context);
        }
        let name = unquote(&t.val).map_err(|m| ParseError { pos: t.pos, msg: m })?;
        self.expect(Tok::RightDelim, context)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (list, end) = self.item_list()?;
        self.vars = saved_vars;
        self.range_depth = saved_range;
        if let Item::Else(pos) = end {
            return self.err(pos, format!("unexpected {{{{else}}}} in {context}"));
        }
        self.add_def(name, list, t.pos)
    }

    fn add_def(&mut self, name: String, list: Vec<Node>, pos: usize) -> PResult<()> {
        match self.defs.get(&name) {
            Some(existing) if !is_empty_tree(existing) => {
                if !is_empty_tree(&list) {
                    return self.err(
                        pos,
                        format!("template: multiple definition of template {name:?}"),
                    );
                }
            }
            _ => {
                self.defs.insert(name, list);
            }
        }
        Ok(())
    }

    /// Parses items until `{{end}}` or `{{else}}`, which is returned.
    fn item_list(&mut self) -> PResult<(Vec<Node>, Item)> {
        let mut list = Vec::new();
        while self.peek_non_space().tok != Tok::Eof {
            match self.text_or_action()? {
                Item::Node(n) => list.push(n),
                other => return Ok((list, other)),
            }
        }
        let t = self.peek().clone();
        if t.tok == Tok::Error {
            return self.err(t.pos, t.val);
        }
        self.err(t.pos, "unexpected EOF")
    }

    fn text_or_action(&mut self) -> PResult<Item> {
        let t = self.next_non_space();
        match t.tok {
            Tok::Text => Ok(Item::Node(Node::Text { text: t.val })),
            Tok::LeftDelim => self.action(),
            _ => self.unexpected(&t, "input"),
        }
    }

    fn action(&mut self) -> PResult<Item> {
        let t = self.next_non_space();
        match t.tok {
            Tok::Block => return self.block_control().map(Item::Node),
            Tok::Break | Tok::Continue => {
                let what = if t.tok == Tok::Break {
                    "break"
                } else {
                    "continue"
                };
                let n = self.next_non_space();
                if n.tok != Tok::RightDelim {
                    return self.unexpected(&n, &format!("{{{{{what}}}}}"));
                }
                if self.range_depth == 0 {
                    return self.err(t.pos, format!("{{{{{what}}}}} outside {{{{range}}}}"));
                }
                return Ok(Item::Node(if t.tok == Tok::Break {
                    Node::Break
                } else {
                    Node::Continue
                }));
            }
            Tok::Else => {
                let peek = self.peek_non_space();
                if matches!(peek.tok, Tok::If | Tok::With) {
                    return Ok(Item::Else(peek.pos));
                }
                let t = self.expect(Tok::RightDelim, "else")?;
                return Ok(Item::Else(t.pos));
            }
            Tok::End => {
                let t = self.expect(Tok::RightDelim, "end")?;
                return Ok(Item::End(t.pos));
            }
            Tok::If => return self.control(ControlKind::If).map(Item::Node),
            Tok::Range => return self.control(ControlKind::Range).map(Item::Node),
            Tok::With => return self.control(ControlKind::With).map(Item::Node),
            Tok::Template => return self.template_control().map(Item::Node),
            _ => {}
        }
        self.backup();
        let pos = self.peek().pos;
        let pipe = self.pipeline("command", Tok::RightDelim)?;
        Ok(Item::Node(Node::Action { pos, pipe }))
    }

    fn enter_control(&mut self) -> PResult<()> {
        self.control_depth += 1;
        if self.control_depth > MAX_CONTROL_DEPTH {
            let pos = self.peek().pos;
            return self.err(
                pos,
                format!("control structures nest more than {MAX_CONTROL_DEPTH} levels deep"),
            );
        }
        Ok(())
    }

    fn control(&mut self, kind: ControlKind) -> PResult<Node> {
        self.enter_control()?;
        let node = self.control_inner(kind);
        self.control_depth -= 1;
        node
    }

    fn control_inner(&mut self, kind: ControlKind) -> PResult<Node> {
        let context = match kind {
            ControlKind::If => "if",
            ControlKind::Range => "range",
            ControlKind::With => "with",
        };
        let vars_len = self.vars.len();
        let pipe = self.pipeline(context, Tok::RightDelim)?;
        if kind == ControlKind::Range {
            self.range_depth += 1;
        }
        let (list, next) = self.item_list()?;
        if kind == ControlKind::Range {
            self.range_depth -= 1;
        }
        let mut else_list = None;
        if let Item::Else(_) = next {
            let peek = self.peek_non_space();
            if kind == ControlKind::If && peek.tok == Tok::If {
                self.next_non_space();
                else_list = Some(vec![self.control(ControlKind::If)?]);
            } else if kind == ControlKind::With && peek.tok == Tok::With {
                self.next_non_space();
                else_list = Some(vec![self.control(ControlKind::With)?]);
            } else {
                let (l, next) = self.item_list()?;
                if let Item::Else(pos) = next {
                    return self.err(pos, "expected end; found {{else}}");
                }
                else_list = Some(l);
            }
        }
        self.vars.truncate(vars_len);
        let b = Branch {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        };
        Ok(match kind {
            ControlKind::If => Node::If(b),
            ControlKind::Range => Node::Range(b),
            ControlKind::With => Node::With(b),
        })
    }

    fn template_name(&self, t: &Token, context: &str) -> PResult<String> {
        match t.tok {
            Tok::String | Tok::RawString => {
                unquote(&t.val).map_err(|m| ParseError { pos: t.pos, msg: m })
            }
            _ => self.unexpected(t, context),
        }
    }

    fn template_control(&mut self) -> PResult<Node> {
        let context = "template clause";
        let t = self.next_non_space();
        let name = self.template_name(&t, context)?;
        let pipe = if self.next_non_space().tok != Tok::RightDelim {
            self.backup();
            Some(self.pipeline(context, Tok::RightDelim)?)
        } else {
            None
        };
        Ok(Node::Template {
            pos: t.pos,
            name,
            pipe,
        })
    }

    fn block_control(&mut self) -> PResult<Node> {
        self.enter_control()?;
        let node = self.block_control_inner();
        self.control_depth -= 1;
        node
    }

    fn block_control_inner(&mut self) -> PResult<Node> {
        let context = "block clause";
        let t = self.next_non_space();
        let name = self.template_name(&t, context)?;
        let pipe = self.pipeline(context, Tok::RightDelim)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (list, end) = self.item_list()?;
        self.vars = saved_vars;
        self.range_depth = saved_range;
        if let Item::Else(pos) = end {
            return self.err(pos, format!("unexpected {{{{else}}}} in {context}"));
        }
        self.add_def(name.clone(), list, t.pos)?;
        Ok(Node::Template {
            pos: t.pos,
            name,
            pipe: Some(pipe),
        })
    }

    fn pipeline(&mut self, context: &str, end: Tok) -> PResult<Pipe> {
        let start = self.peek_non_space();
        let mut pipe = Pipe {
            pos: start.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        // Declarations: "$x :=", "$x =", "$i, $v :=" (range only).
        'decl: loop {
            let v = self.peek_non_space();
            if v.tok != Tok::Variable {
                break;
            }
            let save = self.i;
            self.next_non_space();
            let next = self.peek_non_space();
            match next.tok {
                Tok::Assign | Tok::Declare => {
                    pipe.is_assign = next.tok == Tok::Assign;
                    self.next_non_space();
                    pipe.decl.push((v.val.clone(), v.pos));
                    self.vars.push(v.val.clone());
                }
                Tok::Char if next.val == "," => {
                    self.next_non_space();
                    pipe.decl.push((v.val.clone(), v.pos));
                    self.vars.push(v.val.clone());
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().tok {
                            Tok::Variable | Tok::RightDelim | Tok::RightParen => continue 'decl,
                            _ => return self.err(next.pos, "range can only initialize variables"),
                        }
                    }
                    return self.err(next.pos, format!("too many declarations in {context}"));
                }
                _ => {
                    self.i = save;
                }
            }
            break;
        }
        loop {
            let t = self.next_non_space();
            if t.tok == end {
                self.check_pipeline(&pipe, context, t.pos)?;
                return Ok(pipe);
            }
            match t.tok {
                Tok::Bool
                | Tok::CharConstant
                | Tok::Dot
                | Tok::Field
                | Tok::Identifier
                | Tok::Number
                | Tok::Nil
                | Tok::RawString
                | Tok::String
                | Tok::Variable
                | Tok::LeftParen => {
                    self.backup();
                    let c = self.command()?;
                    pipe.cmds.push(c);
                }
                _ => return self.unexpected(&t, context),
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str, pos: usize) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return self.err(pos, format!("missing value for {context}"));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args[0],
                Arg::Bool { .. }
                    | Arg::Dot { .. }
                    | Arg::Nil { .. }
                    | Arg::Number { .. }
                    | Arg::String { .. }
            ) {
                return self.err(
                    c.pos,
                    format!("non executable command in pipeline stage {}", i + 1),
                );
            }
        }
        Ok(())
    }

    fn command(&mut self) -> PResult<Command> {
        let pos = self.peek_non_space().pos;
        let mut cmd = Command {
            pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(a) = self.operand()? {
                cmd.args.push(a);
            }
            let t = self.next();
            match t.tok {
                Tok::Space => continue,
                Tok::RightDelim | Tok::RightParen => self.backup(),
                Tok::Pipe => {}
                _ => return self.unexpected(&t, "operand"),
            }
            break;
        }
        if cmd.args.is_empty() {
            return self.err(pos, "empty command");
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().tok != Tok::Field {
            return Ok(Some(node));
        }
        let pos = self.peek().pos;
        let mut fields = Vec::new();
        while self.peek().tok == Tok::Field {
            fields.push(self.next().val[1..].to_string());
        }
        Ok(Some(match node {
            // Go gives the merged node the position of the first trailing field.
            Arg::Field { mut idents, .. } => {
                idents.extend(fields);
                Arg::Field { pos, idents }
            }
            Arg::Variable { mut idents, .. } => {
                idents.extend(fields);
                Arg::Variable { pos, idents }
            }
            Arg::Bool { .. }
            | Arg::String { .. }
            | Arg::Number { .. }
            | Arg::Nil { .. }
            | Arg::Dot { .. } => {
                return self.err(
                    pos,
                    format!("unexpected . after term {:?}", node.to_string()),
                );
            }
            other => Arg::Chain {
                pos,
                node: Box::new(other),
                fields,
            },
        }))
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let t = self.next_non_space();
        let pos = t.pos;
        Ok(Some(match t.tok {
            Tok::Identifier => {
                if !(self.has_func)(&t.val) {
                    return self.err(pos, format!("function {:?} not defined", t.val));
                }
                Arg::Identifier { pos, name: t.val }
            }
            Tok::Dot => Arg::Dot { pos },
            Tok::Nil => Arg::Nil { pos },
            Tok::Variable => {
                if !self.vars.contains(&t.val) {
                    return self.err(pos, format!("undefined variable {:?}", t.val));
                }
                Arg::Variable {
                    pos,
                    idents: vec![t.val],
                }
            }
            Tok::Field => Arg::Field {
                pos,
                idents: vec![t.val[1..].to_string()],
            },
            Tok::Bool => Arg::Bool {
                pos,
                val: t.val == "true",
            },
            Tok::CharConstant | Tok::Number => {
                let num = parse_number(&t.val, t.tok == Tok::CharConstant)
                    .map_err(|m| ParseError { pos, msg: m })?;
                Arg::Number { pos, num }
            }
            Tok::LeftParen => {
                self.paren_depth += 1;
                if self.paren_depth > MAX_PAREN_DEPTH {
                    return self.err(pos, "max expression depth exceeded");
                }
                let p = self.pipeline("parenthesized pipeline", Tok::RightParen)?;
                self.paren_depth -= 1;
                Arg::Pipe(Box::new(p))
            }
            Tok::String | Tok::RawString => {
                let text = unquote(&t.val).map_err(|m| ParseError { pos, msg: m })?;
                Arg::String {
                    pos,
                    quoted: t.val,
                    text,
                }
            }
            Tok::Error => return self.err(pos, t.val),
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ControlKind {
    If,
    Range,
    With,
}

/// Go's `strconv.Unquote` for "...", `...` and '...' literals.
pub fn unquote(s: &str) -> Result<String, String> {
    let bad = || "invalid syntax".to_string();
    let b = s.as_bytes();
    if b.len() < 2 {
        return Err(bad());
    }
    let q = b[0];
    if q != b[b.len() - 1] {
        return Err(bad());
    }
    let body = &s[1..s.len() - 1];
    if q == b'`' {
        if body.contains('`') {
            return Err(bad());
        }
        return Ok(body.replace('\r', ""));
    }
    if q != b'"' && q != b'\'' {
        return Err(bad());
    }
    let mut out: Vec<u8> = Vec::with_capacity(body.len());
    let mut chars = body.char_indices().peekable();
    let mut count = 0;
    while let Some((_, c)) = chars.next() {
        count += 1;
        if c == q as char && q == b'"' {
            return Err(bad());
        }
        if c == '\n' {
            return Err(bad());
        }
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let Some((_, e)) = chars.next() else {
            return Err(bad());
        };
        let push_char = |c: char, out: &mut Vec<u8>| {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        };
        match e {
            'a' => out.push(7),
            'b' => out.push(8),
            'f' => out.push(12),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'v' => out.push(11),
            '\\' => out.push(b'\\'),
            '\'' | '"' => {
                if e as u8 != q {
                    return Err(bad());
                }
                out.push(e as u8);
            }
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                for _ in 0..n {
                    let Some((_, h)) = chars.next() else {
                        return Err(bad());
                    };
                    v = v * 16 + h.to_digit(16).ok_or_else(bad)?;
                }
                if e == 'x' {
                    if q == b'\'' {
                        push_char(char::from_u32(v).ok_or_else(bad)?, &mut out);
                    } else {
                        out.push(v as u8);
                    }
                } else {
                    push_char(char::from_u32(v).ok_or_else(bad)?, &mut out);
                }
            }
            '0'..='7' => {
                let mut v: u32 = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    let Some((_, o)) = chars.next() else {
                        return Err(bad());
                    };
                    v = v * 8 + o.to_digit(8).ok_or_else(bad)?;
                }
                if v > 255 {
                    return Err(bad());
                }
                if q == b'\'' {
                    push_char(char::from_u32(v).ok_or_else(bad)?, &mut out);
                } else {
                    out.push(v as u8);
                }
            }
            _ => return Err(bad()),
        }
    }
    if q == b'\'' && count != 1 {
        return Err(bad());
    }
    Ok(String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

fn strip_underscores(s: &str) -> Result<String, String> {
    if !s.contains('_') {
        return Ok(s.to_string());
    }
    // Underscores may only separate digits (or follow a base prefix).
    let b = s.as_bytes();
    for (i, c) in b.iter().enumerate() {
        if *c == b'_' {
            let prev_ok = i > 0
                && (b[i - 1].is_ascii_hexdigit()
                    || matches!(b[i - 1], b'x' | b'X' | b'o' | b'O' | b'b' | b'B'));
            let next_ok = i + 1 < b.len() && b[i + 1].is_ascii_hexdigit();
            if !prev_ok || !next_ok {
                return Err("invalid syntax".into());
            }
        }
    }
    Ok(s.replace('_', ""))
}

fn parse_int_base0(text: &str) -> Option<i128> {
    let s = strip_underscores(text).ok()?;
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, &s[..]),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.to_string())
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.to_string())
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower.clone())
    };
    if digits.is_empty() {
        return None;
    }
    let v = u128::from_str_radix(&digits, radix).ok()?;
    if v > u64::MAX as u128 {
        return None;
    }
    Some(if neg { -(v as i128) } else { v as i128 })
}

/// Parses a hexadecimal float literal (`0x1.8p3`), lower-cased.
fn parse_hex_float(s: &str) -> Option<f64> {
    let s = s.replace('_', "");
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(&s)),
    };
    let body = body.strip_prefix("0x")?;
    let (mant, exp) = body.split_once('p')?;
    let exp: i32 = exp.parse().ok()?;
    let (int_part, frac_part) = mant.split_once('.').unwrap_or((mant, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int_part.chars().chain(frac_part.chars()) {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let v = v * 2f64.powi(exp - 4 * frac_part.len() as i32);
    Some(if neg { -v } else { v })
}

/// Parses a number literal with Go's rules (parse.newNumber).
pub fn parse_number(text: &str, is_char: bool) -> Result<Number, String> {
    if is_char {
        let s = unquote(text).map_err(|_| format!("malformed character constant: {text}"))?;
        let mut cs = s.chars();
        let c = cs
            .next()
            .ok_or_else(|| format!("malformed character constant: {text}"))?;
        if cs.next().is_some() {
            return Err(format!("malformed character constant: {text}"));
        }
        let v = c as i64;
        return Ok(Number {
            text: text.into(),
            is_int: true,
            is_float: true,
            int: v,
            float: v as f64,
            is_rune: true,
        });
    }
    if text.ends_with('i') {
        return Err(format!(
            "complex number constants are not supported: {text:?}"
        ));
    }
    let mut n = Number {
        text: text.into(),
        is_int: false,
        is_float: false,
        int: 0,
        float: 0.0,
        is_rune: false,
    };
    if let Some(v) = parse_int_base0(text) {
        // A uint64 beyond int64 stays a float-capable constant; using it as
        // an int fails at execution ("overflows int"), as in Go.
        if let Ok(i) = i64::try_from(v) {
            n.is_int = true;
            n.int = i;
        }
        n.is_float = true;
        n.float = v as f64;
        return Ok(n);
    }
    let lower = text.to_ascii_lowercase();
    let f = if lower.trim_start_matches(['+', '-']).starts_with("0x") {
        parse_hex_float(&lower)
    } else {
        strip_underscores(text)
            .ok()
            .and_then(|clean| clean.parse::<f64>().ok())
    };
    if let Some(f) = f.filter(|f| f.is_finite()) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {text:?}"));
        }
        n.is_float = true;
        n.float = f;
        if f.fract() == 0.0 && f.abs() < 9.2e18 {
            n.is_int = true;
            n.int = f as i64;
        }
        return Ok(n);
    }
    Err(format!("illegal number syntax: {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any_func(_: &str) -> bool {
        true
    }

    fn p(src: &str) -> Result<Parsed, String> {
        parse(src, &any_func).map_err(|e| e.msg)
    }

    #[test]
    fn parses_control_structures() {
        let t = p("{{if .a}}x{{else if .b}}y{{else}}z{{end}}").unwrap();
        let Node::If(b) = &t.root[0] else {
            panic!("expected if")
        };
        let else_list = b.else_list.as_ref().unwrap();
        assert!(matches!(else_list[0], Node::If(_)));
        assert!(p("{{range $i, $v := .}}{{$i}}{{end}}").is_ok());
        assert!(
            p("{{with $x := 1}}{{$x}}{{end}}{{$x}}")
                .unwrap_err()
                .contains("undefined variable \"$x\"")
        );
    }

    #[test]
    fn collects_definitions() {
        let t = p("{{define \"a\"}}A{{end}}b{{block \"c\" .}}C{{end}}").unwrap();
        assert!(t.defs.contains_key("a"));
        assert!(t.defs.contains_key("c"));
        assert!(
            p("{{define \"a\"}}A{{end}}{{define \"a\"}}B{{end}}")
                .unwrap_err()
                .contains("multiple definition")
        );
    }

    #[test]
    fn reports_go_parse_errors() {
        assert_eq!(p("{{end}}").unwrap_err(), "unexpected {{end}}");
        assert_eq!(p("{{if .a}}").unwrap_err(), "unexpected EOF");
        assert_eq!(p("{{break}}").unwrap_err(), "{{break}} outside {{range}}");
        assert_eq!(
            p("{{.a | 3}}").unwrap_err(),
            "non executable command in pipeline stage 2"
        );
        assert_eq!(p("{{}}").unwrap_err(), "missing value for command");
        assert!(
            parse("{{nope 1}}", &|f| f == "x")
                .unwrap_err()
                .msg
                .contains("function \"nope\" not defined")
        );
        assert_eq!(
            p("{{\"a\".b}}").unwrap_err(),
            "unexpected . after term \"\\\"a\\\"\""
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let ok = format!(
            "{}x{}",
            "{{if 1}}".repeat(MAX_CONTROL_DEPTH),
            "{{end}}".repeat(MAX_CONTROL_DEPTH)
        );
        assert!(p(&ok).is_ok());
        let deep = format!(
            "{}x{}",
            "{{if 1}}".repeat(MAX_CONTROL_DEPTH + 1),
            "{{end}}".repeat(MAX_CONTROL_DEPTH + 1)
        );
        assert!(p(&deep).unwrap_err().contains("nest more than 100 levels"));
        let parens = format!("{{{{{}1{}}}}}", "(".repeat(101), ")".repeat(101));
        assert_eq!(p(&parens).unwrap_err(), "max expression depth exceeded");
    }

    #[test]
    fn numbers_follow_go_literal_rules() {
        let n = parse_number("0x1F", false).unwrap();
        assert!(n.is_int && n.int == 31);
        let n = parse_number("1e3", false).unwrap();
        assert!(n.is_int && n.is_float && n.float == 1000.0);
        let n = parse_number("1.5", false).unwrap();
        assert!(!n.is_int && n.is_float);
        let n = parse_number("'a'", true).unwrap();
        assert!(n.is_int && n.int == 97);
        assert!(parse_number("1_000", false).unwrap().int == 1000);
        assert!(parse_number("017", false).unwrap().int == 15);
    }

    #[test]
    fn unquotes_go_strings() {
        assert_eq!(unquote(r#""a\tb\x41\u00e9\101""#).unwrap(), "a\tbAéA");
        assert_eq!(unquote("`a\\n`").unwrap(), "a\\n");
        assert!(unquote(r#""\q""#).is_err());
    }

    #[test]
    fn node_strings_match_go() {
        let t = p("{{$x := (.a.b | printf \"%s\") | len}}").unwrap();
        let Node::Action { pipe, .. } = &t.root[0] else {
            panic!("expected action")
        };
        assert_eq!(pipe.to_string(), "$x := (.a.b | printf \"%s\") | len");
    }
}
