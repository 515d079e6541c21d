//! A single-threaded implementation of Go's `text/template` with sprig's
//! text functions, for WebAssembly guests.
//!
//! Go template engines for Rust that exist (gtmpl) spawn a thread in their
//! lexer and trap on `wasm32-unknown-unknown`; this one lexes, parses and
//! executes in one thread, with no clock, randomness or I/O.
//!
//! ```
//! use syncweave_gotmpl::{ExecOptions, Template};
//! let t = Template::parse("{{ .name | upper }}-{{ sha3short .name 8 }}").unwrap();
//! let out = t.execute(&serde_json::json!({"name": "demo"}), &ExecOptions::default()).unwrap();
//! assert!(out.starts_with("DEMO-"));
//! ```
//!
//! What is covered: the full text/template language (actions, trim markers,
//! comments, pipelines, variables, `if`/`else if`/`range`/`with`/`else with`,
//! `break`/`continue`, `define`/`template`/`block`, literals with Go's
//! rules), Go's builtin functions, Go `fmt` printing and `printf` verbs,
//! sprig v3's deterministic functions, and syncweave's `sha3sum`,
//! `sha3short` and `shortHash`. Sprig functions that need a clock,
//! randomness, the environment or the network fail with an error naming the
//! function.
//!
//! Known differences from Go, by design:
//! - `html_escape` applies html/template's text-context escaper to every
//!   action; it does not track HTML context (attributes, scripts, comments).
//! - Values are JSON-like (see [`Value`]); functions cannot be values, so the
//!   `call` builtin always fails. Lists are `[]interface {}` for `typeOf`.
//! - Guests have small stacks, so nesting is bounded where Go has no limit:
//!   control structures nest at most [`MAX_CONTROL_DEPTH`] deep (and
//!   parentheses 100 deep), `{{template}}` calls at most
//!   [`MAX_TEMPLATE_DEPTH`], both together at most [`MAX_EXEC_NESTING`]; output
//!   is capped at [`MAX_OUTPUT`] bytes.
//! - Strings are always valid UTF-8: byte-offset functions (`trunc`,
//!   `substr`, `abbrev`) that cut a multi-byte character leave U+FFFD where Go
//!   would keep the raw bytes (Go's JSON encoding makes the same replacement).
//! - Typed integer parameters accept any integer kind (Go requires an exact
//!   `int`), so `repeat .count "x"` works on integers from JSON.

use std::collections::HashMap;
use std::fmt;

mod exec;
mod funcs;
mod gjson;
mod gofmt;
mod gojson;
pub mod goregex;
mod lex;
mod parse;
mod value;

pub use exec::{MAX_EXEC_NESTING, MAX_OUTPUT, MAX_TEMPLATE_DEPTH, html_escape};
pub use funcs::{FuncMap, Function, Ty, sha3short, sha3sum, short_hash, standard_function_names};
pub use gjson::GjsonResult;
pub use parse::MAX_CONTROL_DEPTH;
pub use value::{MapRef, Object, Record, Value, deep_equal};

/// Deepest nesting of values that printing, JSON encoding and comparisons
/// walk; deeper (or cyclic, via `set`) values are cut off instead of
/// overflowing the guest's stack.
pub(crate) const MAX_NESTING: usize = 200;

/// A template error, formatted like Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The source is not a valid template.
    #[error("template: {template}:{line}:{col}: {msg}")]
    Parse {
        template: String,
        /// 1-based line of the offending token.
        line: usize,
        /// 0-based byte offset within the line, as Go reports it.
        col: usize,
        msg: String,
    },
    /// Execution failed.
    #[error("template: {template}:{line}:{col}: executing {executing:?} at <{context}>: {msg}")]
    Exec {
        template: String,
        line: usize,
        col: usize,
        /// The template (main or `define`d) being executed.
        executing: String,
        /// The expression being evaluated, shortened like Go does.
        context: String,
        msg: String,
    },
    /// html/template's escaper rejected the template (only with `html_escape`).
    #[error("html/template:{template}:{line}:{col}: {msg}")]
    Escape {
        template: String,
        line: usize,
        col: usize,
        msg: String,
    },
}

impl Error {
    /// The message without the location prefix.
    pub fn message(&self) -> &str {
        match self {
            Error::Parse { msg, .. } | Error::Exec { msg, .. } | Error::Escape { msg, .. } => msg,
        }
    }
}

/// What happens when a map lacks a key, as Go's `missingkey` option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissingKey {
    /// Go's default: an invalid value, printed as `<no value>`.
    #[default]
    Default,
    /// The zero value of the map's element type (nil, also `<no value>`).
    Zero,
    /// An execution error.
    Error,
}

/// Options for one execution.
#[derive(Clone, Debug, Default)]
pub struct ExecOptions {
    /// Escape every action's output like Go's html/template does in text
    /// context (upstream init-agent and mutation templates use html/template).
    pub html_escape: bool,
    /// Extra functions, taking precedence over those given at parse time.
    /// Their names must also be known when parsing: use [`Template::parse_with`].
    pub functions: Option<FuncMap>,
    /// Behaviour for missing map keys.
    pub missing_key: MissingKey,
}

/// A parsed template, reusable for any number of executions.
#[derive(Debug)]
pub struct Template {
    name: String,
    root: Vec<parse::Node>,
    defs: HashMap<String, Vec<parse::Node>>,
    funcs: Option<FuncMap>,
    line_starts: Vec<usize>,
}

impl Template {
    /// Parses `src` as a template named "template" (the name upstream
    /// init-agent uses; it appears in error messages).
    pub fn parse(src: &str) -> Result<Template, Error> {
        Template::parse_named("template", src)
    }

    /// Parses `src` under the given name.
    pub fn parse_named(name: &str, src: &str) -> Result<Template, Error> {
        Template::build(name, src, None)
    }

    /// Parses `src` with extra functions, which override built-in ones of
    /// the same name and are used by every execution.
    pub fn parse_with(name: &str, src: &str, funcs: FuncMap) -> Result<Template, Error> {
        Template::build(name, src, Some(funcs))
    }

    fn build(name: &str, src: &str, funcs: Option<FuncMap>) -> Result<Template, Error> {
        let line_starts = std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut t = Template {
            name: name.to_string(),
            root: Vec::new(),
            defs: HashMap::new(),
            funcs,
            line_starts,
        };
        let extras: Vec<&FuncMap> = t.funcs.iter().collect();
        let has_func = |n: &str| funcs::exists(n, &extras);
        let parsed = parse::parse(src, &has_func).map_err(|e| {
            let (line, col) = t.line_col(e.pos);
            Error::Parse {
                template: name.to_string(),
                line,
                col,
                msg: e.msg,
            }
        })?;
        t.root = parsed.root;
        t.defs = parsed.defs;
        Ok(t)
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `{{template "name"}}` would find something.
    pub fn has_template(&self, name: &str) -> bool {
        self.lookup(name).is_some()
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<&[parse::Node]> {
        if let Some(d) = self.defs.get(name) {
            return Some(d);
        }
        (name == self.name).then_some(&self.root[..])
    }

    pub(crate) fn line_col(&self, pos: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= pos);
        let start = self.line_starts[line.saturating_sub(1)];
        (line.max(1), pos - start)
    }

    /// Executes the template on JSON data (integers become Go `int64`,
    /// like Kubernetes' unstructured objects).
    pub fn execute(&self, data: &serde_json::Value, opts: &ExecOptions) -> Result<String, Error> {
        self.execute_value(Value::from_json(data), opts)
    }

    /// Executes with extra functions for this call only.
    pub fn execute_with(
        &self,
        data: &serde_json::Value,
        opts: &ExecOptions,
        funcs: &FuncMap,
    ) -> Result<String, Error> {
        let mut st = exec::State::new(self, opts, Some(funcs));
        st.run(Value::from_json(data))?;
        Ok(st.out)
    }

    /// Executes the template on a [`Value`], which may contain objects
    /// with methods (e.g. a [`GjsonResult`]) or strict [`Record`]s.
    pub fn execute_value(&self, data: Value, opts: &ExecOptions) -> Result<String, Error> {
        let mut st = exec::State::new(self, opts, None);
        st.run(data)?;
        Ok(st.out)
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "template {:?}", self.name)
    }
}

/// Parses and executes in one step (text/template semantics).
pub fn render(src: &str, data: &serde_json::Value) -> Result<String, Error> {
    Template::parse(src)?.execute(data, &ExecOptions::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, data: serde_json::Value) -> String {
        match render(src, &data) {
            Ok(s) => s,
            Err(e) => format!("ERR {e}"),
        }
    }

    #[test]
    fn basic_actions() {
        assert_eq!(run("hello {{.name}}", json!({"name": "x"})), "hello x");
        assert_eq!(run("{{.missing}}", json!({})), "<no value>");
        assert_eq!(run("{{.a.b.c}}", json!({})), "<no value>");
        assert_eq!(
            run("{{ 1 }} {{ 1.5 }} {{ \"s\" }} {{ true }}", json!({})),
            "1 1.5 s true"
        );
    }

    #[test]
    fn error_locations_follow_go() {
        let e = render("line1\n  {{ .a | nope }}", &json!({})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "template: template:2:10: function \"nope\" not defined"
        );
        let e = render("{{ .a.b }}", &json!({"a": "s"})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "template: template:1:5: executing \"template\" at <.a.b>: can't evaluate field b in type interface {}"
        );
    }

    #[test]
    fn naming_vectors_from_api_syncagent() {
        assert_eq!(
            run("{{ \"objnamespace\" | sha3short }}", json!({})),
            "2928c2aa0e510f017f07"
        );
        assert_eq!(
            run("{{ \"objname\" | sha3short }}", json!({})),
            "73d08a1ba188f1340dae"
        );
        let tpl =
            "{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}";
        let out = run(
            tpl,
            json!({"Object": {"metadata": {"namespace": "objnamespace", "name": "objname"}}}),
        );
        assert_eq!(out, "2928c2aa0e510f017f07-73d08a1ba188f1340dae");
    }

    #[test]
    fn html_escape_mode_escapes_action_output_only() {
        let t = Template::parse("<b>{{ .v }}</b>{{ .missing }}|{{ .v | html }}").unwrap();
        let opts = ExecOptions {
            html_escape: true,
            ..Default::default()
        };
        let out = t.execute(&json!({"v": "a+b<'\"&>"}), &opts).unwrap();
        assert_eq!(
            out,
            "<b>a&#43;b&lt;&#39;&#34;&amp;&gt;</b>|a+b&lt;&#39;&#34;&amp;&gt;"
        );
    }

    #[test]
    fn records_reject_unknown_fields() {
        let data = Value::object(Record::new(
            "ctx",
            [("ClusterName".to_string(), Value::from("abc"))],
        ));
        let t = Template::parse("{{ .ClusterName }}").unwrap();
        assert_eq!(
            t.execute_value(data.clone(), &ExecOptions::default())
                .unwrap(),
            "abc"
        );
        let t = Template::parse("{{ .Other }}").unwrap();
        let e = t.execute_value(data, &ExecOptions::default()).unwrap_err();
        assert_eq!(e.message(), "can't evaluate field Other in type ctx");
    }

    #[test]
    fn custom_functions_and_missing_key_option() {
        let mut m = FuncMap::new();
        m.insert(
            "twice",
            Function::new(&[Ty::Str], None, |a| {
                Ok(Value::from(a[0].as_str().unwrap_or_default().repeat(2)))
            }),
        );
        let t = Template::parse_with("t", "{{ twice .s }}", m).unwrap();
        assert_eq!(
            t.execute(&json!({"s": "ab"}), &ExecOptions::default())
                .unwrap(),
            "abab"
        );
        let t = Template::parse("{{ .nope }}").unwrap();
        let opts = ExecOptions {
            missing_key: MissingKey::Error,
            ..Default::default()
        };
        assert_eq!(
            t.execute(&json!({}), &opts).unwrap_err().message(),
            "map has no entry for key \"nope\""
        );
        let t = Template::parse("{{ join .l \",\" }}").unwrap();
        let out = t
            .execute_with(
                &json!({"l": ["a", "b"]}),
                &ExecOptions::default(),
                &FuncMap::syncagent_templating(),
            )
            .unwrap();
        assert_eq!(out, "a,b");
    }

    #[test]
    fn parsed_templates_can_be_shared_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Template>();
        assert_send_sync::<FuncMap>();
    }

    #[test]
    fn template_recursion_is_bounded() {
        let e = render(
            "{{define \"r\"}}{{template \"r\" .}}{{end}}{{template \"r\" .}}",
            &json!({}),
        )
        .unwrap_err();
        assert!(e.message().contains("exceeded maximum template depth"));
    }
}
