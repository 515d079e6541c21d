//! Template execution, following text/template's exec.go semantics:
//! pipelines, argument typing, field chains, variables, control flow and
//! Go's error messages.

use std::rc::Rc;

use crate::funcs::{self, FuncMap, Function, Ty};
use crate::parse::{Arg, Branch, Command, Node, Number, Pipe};
use crate::value::Value;
use crate::{Error, ExecOptions, MissingKey, Template};

/// Where execution is, for error messages (Go's `s.at(node)`).
#[derive(Clone, Copy)]
enum At<'a> {
    None,
    Arg(&'a Arg),
    Cmd(&'a Command),
    Pipe(&'a Pipe),
    Node(&'a Node, usize),
}

impl At<'_> {
    fn pos(&self) -> usize {
        match self {
            At::None => 0,
            At::Arg(a) => a.pos(),
            At::Cmd(c) => c.pos,
            At::Pipe(p) => p.pos,
            At::Node(_, pos) => *pos,
        }
    }

    fn text(&self) -> String {
        match self {
            At::None => String::new(),
            At::Arg(a) => a.to_string(),
            At::Cmd(c) => c.to_string(),
            At::Pipe(p) => p.to_string(),
            At::Node(n, _) => match n {
                Node::Action { pipe, .. } => format!("{{{{{pipe}}}}}"),
                Node::If(b) => format!("{{{{if {}}}}}", b.pipe),
                Node::With(b) => format!("{{{{with {}}}}}", b.pipe),
                Node::Range(b) => format!("{{{{range {}}}}}", b.pipe),
                Node::Template { name, pipe, .. } => match pipe {
                    Some(p) => format!("{{{{template {name:?} {p}}}}}"),
                    None => format!("{{{{template {name:?}}}}}"),
                },
                Node::Break => "{{break}}".into(),
                Node::Continue => "{{continue}}".into(),
                Node::Text { text } => text.clone(),
            },
        }
    }
}

/// Non-local exits: errors and range's break/continue.
pub(crate) enum Flow {
    Break,
    Continue,
    Err(Box<Error>),
}

type R<T> = Result<T, Flow>;

/// How deep `{{template}}` calls may nest. Go allows 100000; a Wasm guest
/// has a much smaller stack, and real templates never get close.
pub const MAX_TEMPLATE_DEPTH: usize = 100;

/// Largest output a template may produce, against runaway loops and repeats.
pub const MAX_OUTPUT: usize = 16 << 20;

/// Deepest nesting during execution, counting control-structure bodies and
/// template calls together (recursive templates inside nested blocks would
/// otherwise multiply the two limits and exhaust a Wasm guest's stack).
pub const MAX_EXEC_NESTING: usize = 300;

pub(crate) struct State<'a> {
    tmpl: &'a Template,
    opts: &'a ExecOptions,
    extras: Vec<&'a FuncMap>,
    vars: Vec<(String, Value)>,
    pub out: String,
    depth: usize,
    /// Bodies and template calls being executed, see [`MAX_EXEC_NESTING`].
    nesting: usize,
    /// Name of the template being executed (main or a `define`).
    name: String,
    at: At<'a>,
    /// Whether dot is an element of a ranged-over collection, whose Go
    /// static type is interface{} (it shows in error messages).
    iface_dot: bool,
}

impl<'a> State<'a> {
    pub fn new(tmpl: &'a Template, opts: &'a ExecOptions, extra: Option<&'a FuncMap>) -> State<'a> {
        let mut extras = Vec::new();
        if let Some(f) = extra {
            extras.push(f);
        }
        if let Some(f) = opts.functions.as_ref() {
            extras.push(f);
        }
        if let Some(f) = tmpl.funcs.as_ref() {
            extras.push(f);
        }
        State {
            tmpl,
            opts,
            extras,
            vars: Vec::new(),
            out: String::new(),
            depth: 0,
            nesting: 0,
            name: tmpl.name.clone(),
            at: At::None,
            iface_dot: false,
        }
    }

    pub fn run(&mut self, data: Value) -> Result<(), Error> {
        if self.opts.html_escape {
            self.html_precheck()?;
        }
        self.vars.push(("$".into(), data.clone()));
        let root = &self.tmpl.root;
        match self.walk(&data, root) {
            Ok(()) => Ok(()),
            Err(Flow::Err(e)) => Err(*e),
            Err(Flow::Break | Flow::Continue) => Ok(()),
        }
    }

    fn error(&self, msg: impl Into<String>) -> Flow {
        let pos = self.at.pos();
        let (line, col) = self.tmpl.line_col(pos);
        let context = self.at.text();
        Flow::Err(Box::new(Error::Exec {
            template: self.tmpl.name.clone(),
            line,
            col,
            executing: self.name.clone(),
            context,
            msg: msg.into(),
        }))
    }

    fn fail<T>(&self, msg: impl Into<String>) -> R<T> {
        Err(self.error(msg))
    }

    fn write(&mut self, s: &str) -> R<()> {
        if self.out.len() + s.len() > MAX_OUTPUT {
            return self.fail(format!(
                "template output exceeds the limit of {MAX_OUTPUT} bytes"
            ));
        }
        self.out.push_str(s);
        Ok(())
    }

    fn walk(&mut self, dot: &Value, list: &'a [Node]) -> R<()> {
        self.nesting += 1;
        let res = self.walk_list(dot, list);
        self.nesting -= 1;
        res
    }

    fn walk_list(&mut self, dot: &Value, list: &'a [Node]) -> R<()> {
        if self.nesting > MAX_EXEC_NESTING {
            return self.fail(format!("exceeded maximum execution nesting ({MAX_EXEC_NESTING} levels of blocks and template calls)"));
        }
        for node in list {
            match node {
                Node::Text { text } => self.write(text)?,
                Node::Action { pos, pipe } => {
                    self.at = At::Node(node, *pos);
                    let v = self.eval_pipeline(dot, pipe)?;
                    if pipe.decl.is_empty() {
                        self.at = At::Node(node, *pos);
                        self.print_value(pipe, v)?;
                    }
                }
                Node::If(b) => self.walk_if_or_with(false, dot, b)?,
                Node::With(b) => self.walk_if_or_with(true, dot, b)?,
                Node::Range(b) => self.walk_range(dot, b, node)?,
                Node::Template { pos, name, pipe } => {
                    self.at = At::Node(node, *pos);
                    self.walk_template(dot, name, pipe.as_ref())?;
                }
                Node::Break => return Err(Flow::Break),
                Node::Continue => return Err(Flow::Continue),
            }
        }
        Ok(())
    }

    /// html/template rejects its predefined escapers anywhere but at the
    /// end of an output pipeline; it checks the whole template before
    /// executing anything.
    fn html_precheck(&self) -> Result<(), Error> {
        let mut lists: Vec<&'a [Node]> = vec![&self.tmpl.root];
        lists.extend(self.tmpl.defs.values().map(|d| &d[..]));
        while let Some(list) = lists.pop() {
            for node in list {
                match node {
                    Node::Action { pos, pipe } if pipe.decl.is_empty() => {
                        for (i, c) in pipe.cmds.iter().enumerate() {
                            if let Arg::Identifier { name, .. } = &c.args[0]
                                && (name == "html" || name == "urlquery")
                                && i + 1 < pipe.cmds.len()
                                && self.is_builtin(name)
                            {
                                let (line, col) = self.tmpl.line_col(*pos);
                                return Err(Error::Escape {
                                    template: self.tmpl.name.clone(),
                                    line,
                                    col,
                                    msg: format!(
                                        "predefined escaper {name:?} disallowed in template"
                                    ),
                                });
                            }
                        }
                    }
                    Node::If(b) | Node::With(b) | Node::Range(b) => {
                        lists.push(&b.list);
                        if let Some(e) = &b.else_list {
                            lists.push(e);
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn is_builtin(&self, name: &str) -> bool {
        funcs::lookup(name, &self.extras).is_some_and(|(_, b)| b)
    }

    fn print_value(&mut self, pipe: &Pipe, v: Value) -> R<()> {
        if self.opts.html_escape {
            // html/template appends its escaper to every output pipeline,
            // unless the pipeline already ends with the equivalent `html`.
            let ends_with_html = matches!(pipe.cmds.last().map(|c| &c.args[0]), Some(Arg::Identifier { name, .. }) if name == "html" && self.is_builtin("html"));
            let s = if ends_with_html {
                html_stringify(&v)
            } else {
                html_escape(&html_stringify(&v))
            };
            return self.write(&s);
        }
        match v {
            Value::Missing => self.write("<no value>"),
            other => {
                let s = crate::gofmt::sprint_one(&other);
                self.write(&s)
            }
        }
    }

    fn walk_if_or_with(&mut self, with: bool, dot: &Value, b: &'a Branch) -> R<()> {
        let mark = self.vars.len();
        let val = self.eval_pipeline(dot, &b.pipe)?;
        let res = if val.truth() {
            if with {
                let saved = std::mem::replace(&mut self.iface_dot, false);
                let r = self.walk(&val, &b.list);
                self.iface_dot = saved;
                r
            } else {
                self.walk(dot, &b.list)
            }
        } else if let Some(e) = &b.else_list {
            self.walk(dot, e)
        } else {
            Ok(())
        };
        self.vars.truncate(mark);
        res
    }

    fn set_top_var(&mut self, n: usize, v: Value) {
        let len = self.vars.len();
        self.vars[len - n].1 = v;
    }

    fn set_var(&mut self, name: &str, v: Value) -> R<()> {
        for slot in self.vars.iter_mut().rev() {
            if slot.0 == name {
                slot.1 = v;
                return Ok(());
            }
        }
        self.fail(format!("undefined variable: {name}"))
    }

    fn var_value(&self, name: &str) -> R<Value> {
        for (n, v) in self.vars.iter().rev() {
            if n == name {
                return Ok(v.clone());
            }
        }
        self.fail(format!("undefined variable: {name}"))
    }

    fn walk_range(&mut self, dot: &Value, b: &'a Branch, node: &'a Node) -> R<()> {
        self.at = At::Node(node, b.pos);
        let mark = self.vars.len();
        let res = self.walk_range_inner(dot, b);
        self.vars.truncate(mark);
        match res {
            Err(Flow::Break) => Ok(()),
            other => other,
        }
    }

    fn range_iteration(&mut self, b: &'a Branch, index: Value, elem: Value) -> R<()> {
        let decl = &b.pipe.decl;
        if !decl.is_empty() {
            if b.pipe.is_assign {
                if decl.len() > 1 {
                    self.set_var(&decl[0].0, index.clone())?;
                } else {
                    self.set_var(&decl[0].0, elem.clone())?;
                }
            } else {
                self.set_top_var(1, elem.clone());
            }
        }
        if decl.len() > 1 {
            if b.pipe.is_assign {
                self.set_var(&decl[1].0, elem.clone())?;
            } else {
                self.set_top_var(2, index);
            }
        }
        let mark = self.vars.len();
        let saved = std::mem::replace(&mut self.iface_dot, true);
        let res = self.walk(&elem, &b.list);
        self.iface_dot = saved;
        self.vars.truncate(mark);
        match res {
            Err(Flow::Continue) => Ok(()),
            other => other,
        }
    }

    fn walk_range_inner(&mut self, dot: &Value, b: &'a Branch) -> R<()> {
        let val = self.eval_pipeline(dot, &b.pipe)?;
        let mut ran = false;
        match &val {
            Value::List(l) => {
                let l = Rc::clone(l);
                for (i, e) in l.iter().enumerate() {
                    ran = true;
                    self.range_iteration(b, Value::Int(i as i64), e.clone())?;
                }
            }
            Value::Map(m) => {
                // Snapshot: the body may mutate the map with `set`.
                let entries: Vec<(String, Value)> = m
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                for (k, v) in entries {
                    ran = true;
                    self.range_iteration(b, Value::from(k), v)?;
                }
            }
            Value::Int(n) | Value::Int64(n) => {
                if b.pipe.decl.len() > 1 {
                    return self.fail(format!(
                        "can't use {n} to iterate over more than one variable"
                    ));
                }
                let n = *n;
                let ctor = if matches!(val, Value::Int(_)) {
                    Value::Int
                } else {
                    Value::Int64
                };
                for i in 0..n.max(0) {
                    ran = true;
                    self.range_iteration(b, Value::Missing, ctor(i))?;
                }
            }
            Value::Uint8(n) => {
                for i in 0..*n {
                    ran = true;
                    self.range_iteration(b, Value::Missing, Value::Uint8(i))?;
                }
            }
            Value::Missing | Value::Nil => {}
            other => {
                return self.fail(format!("range can't iterate over {}", other.to_go_string()));
            }
        }
        if !ran && let Some(e) = &b.else_list {
            return self.walk(dot, e);
        }
        Ok(())
    }

    fn walk_template(&mut self, dot: &Value, name: &str, pipe: Option<&'a Pipe>) -> R<()> {
        let Some(list) = self.tmpl.lookup(name) else {
            return self.fail(format!("template {name:?} not defined"));
        };
        if self.depth >= MAX_TEMPLATE_DEPTH {
            return self.fail(format!(
                "exceeded maximum template depth ({MAX_TEMPLATE_DEPTH})"
            ));
        }
        let new_dot = match pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Value::Missing,
        };
        // No dynamic scoping: the callee sees only `$`.
        let saved_vars = std::mem::replace(&mut self.vars, vec![("$".into(), new_dot.clone())]);
        let saved_name = std::mem::replace(&mut self.name, name.to_string());
        let saved_iface = std::mem::replace(&mut self.iface_dot, false);
        self.depth += 1;
        let res = self.walk(&new_dot, list);
        self.depth -= 1;
        self.iface_dot = saved_iface;
        self.name = saved_name;
        self.vars = saved_vars;
        res
    }

    fn eval_pipeline(&mut self, dot: &Value, pipe: &'a Pipe) -> R<Value> {
        self.at = At::Pipe(pipe);
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, cmd, value.take())?;
            // An interface{} holding nil digs down to an invalid value.
            value = Some(if let Value::Nil = v {
                Value::Missing
            } else {
                v
            });
        }
        let value = value.unwrap_or(Value::Missing);
        for (name, _) in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, value.clone())?;
            } else {
                self.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Arg], fin: &Option<Value>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return self.fail(format!("can't give argument to non-function {}", args[0]));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Value, cmd: &'a Command, fin: Option<Value>) -> R<Value> {
        let first = &cmd.args[0];
        match first {
            Arg::Field { .. } => return self.eval_field_node(dot, first, &cmd.args, fin),
            Arg::Chain { .. } => return self.eval_chain_node(dot, first, &cmd.args, fin),
            Arg::Identifier { name, .. } => {
                return self.eval_function(dot, name, first, Some(cmd), &cmd.args, fin);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin)?;
                return self.eval_pipeline(dot, p);
            }
            Arg::Variable { .. } => return self.eval_variable_node(dot, first, &cmd.args, fin),
            _ => {}
        }
        self.at = At::Arg(first);
        self.not_a_function(&cmd.args, &fin)?;
        match first {
            Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
            Arg::Dot { .. } => Ok(dot.clone()),
            Arg::Nil { .. } => self.fail("nil is not a command"),
            Arg::Number { num, .. } => self.ideal_constant(num),
            Arg::String { text, .. } => Ok(Value::from(text.as_str())),
            _ => self.fail(format!("can't evaluate command {first}")),
        }
    }

    fn ideal_constant(&self, num: &Number) -> R<Value> {
        let t = &num.text;
        let is_hex_int = t.len() > 2
            && t.starts_with('0')
            && matches!(t.as_bytes()[1], b'x' | b'X')
            && !t.contains(['p', 'P']);
        if num.is_float && !is_hex_int && !num.is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Value::Float(num.float));
        }
        if num.is_int {
            return Ok(Value::Int(num.int));
        }
        self.fail(format!("{t} overflows int"))
    }

    fn eval_function(
        &mut self,
        dot: &Value,
        name: &str,
        node: &'a Arg,
        cmd: Option<&'a Command>,
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        self.at = At::Arg(node);
        let Some((f, is_builtin)) = funcs::lookup(name, &self.extras) else {
            return self.fail(format!("{name:?} is not a defined function"));
        };
        self.eval_call(
            dot,
            &f,
            is_builtin,
            cmd.map(At::Cmd).unwrap_or(At::Arg(node)),
            name,
            args,
            fin,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_call(
        &mut self,
        dot: &Value,
        f: &Function,
        is_builtin: bool,
        node: At<'a>,
        name: &str,
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let args: &'a [Arg] = if args.is_empty() { args } else { &args[1..] };
        let num_in = args.len() + usize::from(fin.is_some());
        let num_fixed = if f.variadic.is_some() {
            f.params.len()
        } else {
            args.len()
        };
        if f.variadic.is_some() {
            if num_in < num_fixed {
                return self.fail(format!(
                    "wrong number of args for {name}: want at least {} got {}",
                    f.params.len(),
                    args.len()
                ));
            }
        } else if num_in != f.params.len() {
            return self.fail(format!(
                "wrong number of args for {name}: want {} got {num_in}",
                f.params.len()
            ));
        }

        if is_builtin && (name == "and" || name == "or") {
            let is_or = name == "or";
            let mut v = Value::Missing;
            for a in args {
                v = self.eval_arg(dot, Ty::Raw, a)?;
                if v.truth() == is_or {
                    return Ok(v);
                }
            }
            if let Some(fv) = fin {
                v = self.validate_type(fv, Ty::Raw)?;
            }
            return Ok(v);
        }

        let mut argv = Vec::with_capacity(num_in);
        let mut i = 0;
        while i < num_fixed && i < args.len() {
            argv.push(self.eval_arg(dot, f.params[i], &args[i])?);
            i += 1;
        }
        if let Some(vt) = f.variadic {
            while i < args.len() {
                argv.push(self.eval_arg(dot, vt, &args[i])?);
                i += 1;
            }
        }
        if let Some(fv) = fin {
            let t = match f.variadic {
                Some(vt) => {
                    if num_in - 1 < num_fixed {
                        f.params[num_in - 1]
                    } else {
                        vt
                    }
                }
                None => *f.params.last().unwrap_or(&Ty::Any),
            };
            argv.push(self.validate_type(fv, t)?);
        }
        if is_builtin && name == "call" {
            self.at = node;
            return self.fail(
                "error calling call: functions cannot be passed as values in syncweave templates",
            );
        }
        match f.call(argv) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.at = node;
                self.fail(format!("error calling {name}: {e}"))
            }
        }
    }

    fn validate_type(&self, v: Value, t: Ty) -> R<Value> {
        let wrong = |got: &str| -> R<Value> {
            self.fail(format!("wrong type for value; expected {t}; got {got}"))
        };
        match v {
            Value::Missing => match t {
                Ty::Any => Ok(Value::Nil),
                Ty::Raw => Ok(Value::Missing),
                Ty::Map => Ok(Value::map([])),
                Ty::StrList => Ok(Value::from(Vec::new())),
                _ => self.fail(format!("invalid value; expected {t}")),
            },
            Value::Nil => match t {
                Ty::Any | Ty::Raw => Ok(Value::Nil),
                _ => wrong("interface {}"),
            },
            v => match t {
                Ty::Any | Ty::Raw => Ok(v),
                Ty::Str => match v {
                    Value::String(_) => Ok(v),
                    other => wrong(&other.type_name()),
                },
                Ty::Int => match v.as_int() {
                    Some(i) => Ok(Value::Int(i)),
                    None => wrong(&v.type_name()),
                },
                Ty::Float => match v {
                    Value::Float(_) => Ok(v),
                    other => wrong(&other.type_name()),
                },
                Ty::Bool => match v {
                    Value::Bool(_) => Ok(v),
                    other => wrong(&other.type_name()),
                },
                Ty::Map => match v {
                    Value::Map(_) => Ok(v),
                    other => wrong(&other.type_name()),
                },
                Ty::StrList => match &v {
                    Value::List(l) if l.iter().all(|e| matches!(e, Value::String(_))) => Ok(v),
                    other => wrong(&other.type_name()),
                },
            },
        }
    }

    fn eval_arg(&mut self, dot: &Value, t: Ty, arg: &'a Arg) -> R<Value> {
        self.at = At::Arg(arg);
        match arg {
            Arg::Dot { .. } => return self.validate_type(dot.clone(), t),
            Arg::Nil { .. } => {
                return match t {
                    Ty::Any => Ok(Value::Nil),
                    Ty::Raw => Ok(Value::Missing),
                    Ty::Map => Ok(Value::map([])),
                    Ty::StrList => Ok(Value::from(Vec::new())),
                    _ => self.fail(format!("cannot assign nil to {t}")),
                };
            }
            Arg::Field { .. } => {
                let v = self.eval_field_node(dot, arg, std::slice::from_ref(arg), None)?;
                return self.validate_type(v, t);
            }
            Arg::Variable { .. } => {
                let v = self.eval_variable_node(dot, arg, &[], None)?;
                return self.validate_type(v, t);
            }
            Arg::Pipe(p) => {
                let v = self.eval_pipeline(dot, p)?;
                return self.validate_type(v, t);
            }
            Arg::Identifier { name, .. } => {
                let v = self.eval_function(dot, name, arg, None, &[], None)?;
                return self.validate_type(v, t);
            }
            Arg::Chain { .. } => {
                let v = self.eval_chain_node(dot, arg, &[], None)?;
                return self.validate_type(v, t);
            }
            _ => {}
        }
        self.at = At::Arg(arg);
        match t {
            Ty::Bool => match arg {
                Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
                _ => self.fail(format!("expected bool; found {arg}")),
            },
            Ty::Float => match arg {
                Arg::Number { num, .. } if num.is_float => Ok(Value::Float(num.float)),
                _ => self.fail(format!("expected float; found {arg}")),
            },
            Ty::Int => match arg {
                Arg::Number { num, .. } if num.is_int => Ok(Value::Int(num.int)),
                _ => self.fail(format!("expected integer; found {arg}")),
            },
            Ty::Str => match arg {
                Arg::String { text, .. } => Ok(Value::from(text.as_str())),
                _ => self.fail(format!("expected string; found {arg}")),
            },
            Ty::Any | Ty::Raw => match arg {
                Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
                Arg::Number { num, .. } => self.ideal_constant(num),
                Arg::String { text, .. } => Ok(Value::from(text.as_str())),
                _ => self.fail(format!(
                    "can't handle assignment of {arg} to empty interface argument"
                )),
            },
            Ty::Map | Ty::StrList => self.fail(format!("can't handle {arg} for arg of type {t}")),
        }
    }

    fn eval_field_node(
        &mut self,
        dot: &Value,
        field: &'a Arg,
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        self.at = At::Arg(field);
        let Arg::Field { idents, .. } = field else {
            return self.fail("internal error: not a field");
        };
        let iface = self.iface_dot;
        self.eval_field_chain(dot, dot.clone(), field, idents, args, fin, iface)
    }

    fn eval_variable_node(
        &mut self,
        dot: &Value,
        var: &'a Arg,
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        self.at = At::Arg(var);
        let Arg::Variable { idents, .. } = var else {
            return self.fail("internal error: not a variable");
        };
        let value = self.var_value(&idents[0])?;
        if idents.len() == 1 {
            if !args.is_empty() {
                self.not_a_function(args, &fin)?;
            } else if fin.is_some() {
                return self.fail(format!("can't give argument to non-function {var}"));
            }
            return Ok(value);
        }
        self.eval_field_chain(dot, value, var, &idents[1..], args, fin, false)
    }

    fn eval_chain_node(
        &mut self,
        dot: &Value,
        chain: &'a Arg,
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        self.at = At::Arg(chain);
        let Arg::Chain { node, fields, .. } = chain else {
            return self.fail("internal error: not a chain");
        };
        if let Arg::Nil { .. } = **node {
            return self.fail(format!("indirection through explicit nil in {chain}"));
        }
        let recv = match &**node {
            Arg::Dot { .. } => dot.clone(),
            Arg::Field { .. } => {
                self.eval_field_node(dot, node, std::slice::from_ref(&**node), None)?
            }
            Arg::Variable { .. } => self.eval_variable_node(dot, node, &[], None)?,
            Arg::Pipe(p) => self.eval_pipeline(dot, p)?,
            Arg::Identifier { name, .. } => self.eval_function(dot, name, node, None, &[], None)?,
            Arg::Chain { .. } => self.eval_chain_node(dot, node, &[], None)?,
            other => return self.fail(format!("unexpected . after term {other}")),
        };
        self.at = At::Arg(chain);
        self.eval_field_chain(dot, recv, chain, fields, args, fin, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_field_chain(
        &mut self,
        dot: &Value,
        mut recv: Value,
        node: &'a Arg,
        idents: &'a [String],
        args: &'a [Arg],
        fin: Option<Value>,
        iface: bool,
    ) -> R<Value> {
        let n = idents.len();
        // Values read out of a map have Go's static type interface{}.
        let mut from_map = iface;
        for ident in &idents[..n - 1] {
            let was_map = matches!(recv, Value::Map(_));
            recv = self.eval_field(dot, ident, node, &[], None, recv, from_map)?;
            from_map = was_map;
        }
        self.eval_field(dot, &idents[n - 1], node, args, fin, recv, from_map)
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_field(
        &mut self,
        dot: &Value,
        name: &str,
        node: &'a Arg,
        args: &'a [Arg],
        fin: Option<Value>,
        recv: Value,
        from_map: bool,
    ) -> R<Value> {
        self.at = At::Arg(node);
        let has_args = args.len() > 1 || fin.is_some();
        match recv {
            Value::Missing => {
                if self.opts.missing_key == MissingKey::Error {
                    return self.fail(format!("nil data; no entry for key {name:?}"));
                }
                Ok(Value::Missing)
            }
            Value::Nil => self.fail(format!("nil pointer evaluating interface {{}}.{name}")),
            Value::Object(o) => {
                if o.has_method(name) {
                    let mut argv = Vec::new();
                    for a in args.iter().skip(1) {
                        argv.push(self.eval_arg(dot, Ty::Any, a)?);
                    }
                    if let Some(f) = fin {
                        argv.push(self.validate_type(f, Ty::Any)?);
                    }
                    self.at = At::Arg(node);
                    return o
                        .call_method(name, &argv)
                        .or_else(|e| self.fail(format!("error calling {name}: {e}")));
                }
                match o.field(name) {
                    Some(v) => {
                        if has_args {
                            return self.fail(format!(
                                "{name} has arguments but cannot be invoked as function"
                            ));
                        }
                        Ok(v)
                    }
                    None => self.fail(format!(
                        "can't evaluate field {name} in type {}",
                        o.type_name()
                    )),
                }
            }
            Value::Map(m) => {
                if has_args {
                    return self.fail(format!("{name} is not a method but has arguments"));
                }
                let got = m.borrow().get(name).cloned();
                match got {
                    Some(v) => Ok(v),
                    None => match self.opts.missing_key {
                        MissingKey::Default => Ok(Value::Missing),
                        MissingKey::Zero => Ok(Value::Nil),
                        MissingKey::Error => {
                            self.fail(format!("map has no entry for key {name:?}"))
                        }
                    },
                }
            }
            other => {
                let ty = if from_map {
                    "interface {}".to_string()
                } else {
                    other.type_name()
                };
                self.fail(format!("can't evaluate field {name} in type {ty}"))
            }
        }
    }
}

/// html/template's `stringify`: a lone string as is, otherwise Sprint of
/// the non-nil arguments (so a missing value prints as nothing).
fn html_stringify(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Missing | Value::Nil => String::new(),
        other => crate::gofmt::sprint_one(other),
    }
}

/// html/template's escaper for text context.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '"' => out.push_str("&#34;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '+' => out.push_str("&#43;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}
