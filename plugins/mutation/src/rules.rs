//! Mutation rules: parsing, compilation and application.
use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Deserialize;
use syncweave_gotmpl::{self as gotmpl, goregex};
use syncweave_plugin::{Direction, Object, PluginError, Value, json, path};

/// One rule as written in a PublishedResource. Exactly one field should be set;
/// like upstream, the first set one (in this order) wins.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    #[serde(default)]
    pub delete: Option<DeleteRule>,
    #[serde(default)]
    pub regex: Option<RegexRule>,
    #[serde(default)]
    pub template: Option<TemplateRule>,
    #[serde(default)]
    pub cel: Option<CelRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteRule {
    pub path: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegexRule {
    pub path: String,
    #[serde(default)]
    pub pattern: String,
    #[serde(default)]
    pub replacement: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateRule {
    pub path: String,
    #[serde(default)]
    pub template: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CelRule {
    pub path: String,
    pub expression: String,
}

/// The config: a list of rules for every call, or upstream's `mutation` block with
/// separate lists for each direction.
#[derive(Debug, Clone)]
pub enum RuleSet {
    All(Vec<RawRule>),
    ByDirection {
        spec: Vec<RawRule>,
        status: Vec<RawRule>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SplitConfig {
    #[serde(default)]
    spec: Vec<RawRule>,
    #[serde(default)]
    status: Vec<RawRule>,
}

impl RuleSet {
    /// Parses the config JSON. `null` means no rules.
    pub fn parse(config: &Value) -> Result<RuleSet, String> {
        match config {
            Value::Null => Ok(RuleSet::All(Vec::new())),
            Value::Array(_) => Vec::<RawRule>::deserialize(config)
                .map(RuleSet::All)
                .map_err(|e| format!("invalid mutation rules: {e}")),
            Value::Object(_) => SplitConfig::deserialize(config)
                .map(|s| RuleSet::ByDirection {
                    spec: s.spec,
                    status: s.status,
                })
                .map_err(|e| format!("invalid mutation config: {e}")),
            _ => Err(
                "the config must be a list of mutation rules, or {\"spec\": [rules], \"status\": [rules]}".into(),
            ),
        }
    }

    /// The rules for a call in `direction`: `spec` rules travel from kcp to the service
    /// cluster, `status` rules back.
    pub fn for_direction(&self, direction: Direction) -> (&'static str, &[RawRule]) {
        match self {
            RuleSet::All(rules) => ("rules", rules),
            RuleSet::ByDirection { spec, .. } if direction == Direction::KcpToService => {
                ("spec", spec)
            }
            RuleSet::ByDirection { status, .. } => ("status", status),
        }
    }

    /// Compiles every rule, to report config errors before any object is seen.
    pub fn check(&self) -> Result<(), String> {
        match self {
            RuleSet::All(rules) => compile("rules", rules).map(drop),
            RuleSet::ByDirection { spec, status } => {
                compile("spec", spec)?;
                compile("status", status).map(drop)
            }
        }
    }
}

enum Action {
    Delete,
    Regex {
        regex: Option<regex::Regex>,
        replacement: String,
    },
    Template(gotmpl::Template),
    Cel(cel::Program),
}

/// A compiled rule.
pub struct Rule {
    /// e.g. `spec[2] (regex at "spec.secretName")`, for error messages.
    label: String,
    path: String,
    action: Action,
}

/// Compiles rules; errors name the list and index of the bad rule.
pub fn compile(list: &str, rules: &[RawRule]) -> Result<Vec<Rule>, String> {
    rules
        .iter()
        .enumerate()
        .map(|(i, raw)| compile_rule(list, i, raw))
        .collect()
}

fn compile_rule(list: &str, index: usize, raw: &RawRule) -> Result<Rule, String> {
    let (kind, path, action) = if let Some(d) = &raw.delete {
        ("delete", &d.path, Ok(Action::Delete))
    } else if let Some(r) = &raw.regex {
        let regex = if r.pattern.is_empty() {
            Ok(None)
        } else {
            goregex::compile(&r.pattern)
                .map(Some)
                .map_err(|e| format!("invalid pattern {:?}: {e}", r.pattern))
        };
        (
            "regex",
            &r.path,
            regex.map(|regex| Action::Regex {
                regex,
                replacement: r.replacement.clone(),
            }),
        )
    } else if let Some(t) = &raw.template {
        (
            "template",
            &t.path,
            gotmpl::Template::parse_named("mutation", &t.template)
                .map(Action::Template)
                .map_err(|e| format!("failed to parse template {:?}: {e}", t.template)),
        )
    } else if let Some(c) = &raw.cel {
        (
            "cel",
            &c.path,
            cel::Program::compile(&c.expression)
                .map(Action::Cel)
                .map_err(|e| format!("failed to compile CEL expression {:?}: {e}", c.expression)),
        )
    } else {
        return Err(format!(
            "{list}[{index}]: no mutation mechanism set; set one of delete, regex, template or cel"
        ));
    };
    let label = format!("{list}[{index}] ({kind} at {path:?})");
    path::check_writable(path).map_err(|e| format!("{label}: {e}"))?;
    let action = action.map_err(|e| format!("{label}: {e}"))?;
    Ok(Rule {
        label,
        path: path.clone(),
        action,
    })
}

/// Applies `rules` in order to `object`; `other` is the object's counterpart on the
/// other side, if any.
pub fn apply(
    rules: &[Rule],
    object: &mut Object<'_>,
    other: Option<&Object<'_>>,
) -> Result<(), PluginError> {
    apply_in(rules, object, other, &Value::Object(Default::default()))
}

/// [`apply`] with the context values of earlier chain steps (contract 0.2): a JSON
/// object by key, `.Context` in templates and `context` in CEL.
pub fn apply_in(
    rules: &[Rule],
    object: &mut Object<'_>,
    other: Option<&Object<'_>>,
    context: &Value,
) -> Result<(), PluginError> {
    // Templates and CEL see the other object whole; build it once, if needed.
    let other_value = OnceCell::new();
    let other = || {
        other_value
            .get_or_init(|| other.map(Object::to_value))
            .as_ref()
    };
    for rule in rules {
        apply_rule(rule, object, &other, context)?;
    }
    Ok(())
}

/// Paths are checked when the rules are compiled, so a path that still cannot be written
/// meets data of the wrong shape (e.g. a key on an array).
fn bad_shape(rule: &Rule, err: impl std::fmt::Display) -> PluginError {
    PluginError::InvalidInput(format!("{}: {err}", rule.label))
}

/// Delete and regex rules touch one path, so only the top-level field it names is
/// parsed; templates and CEL see the whole object.
fn apply_rule<'o>(
    rule: &Rule,
    object: &mut Object<'_>,
    other: &impl Fn() -> Option<&'o Value>,
    context: &Value,
) -> Result<(), PluginError> {
    match &rule.action {
        Action::Delete => {
            object.delete(&rule.path).map_err(|e| bad_shape(rule, e))?;
        }
        Action::Regex { regex, replacement } => {
            let new = match regex {
                None => replacement.clone(),
                Some(regex) => {
                    // gjson's String() coercion: numbers and objects become text.
                    let current = gotmpl::GjsonResult::new(object.get_ref(&rule.path)).string();
                    regex
                        .replace_all(&current, replacement.as_str())
                        .into_owned()
                }
            };
            object
                .set(&rule.path, new)
                .map_err(|e| bad_shape(rule, e))?;
        }
        Action::Template(template) => {
            let object = object.value_mut();
            let data = gotmpl::Record::new(
                "transformer.templateMutationContext",
                [
                    (
                        "Value".to_string(),
                        gotmpl::Value::object(gotmpl::GjsonResult::new(path::get_ref(
                            object, &rule.path,
                        ))),
                    ),
                    ("LocalObject".to_string(), gotmpl::Value::from_json(object)),
                    (
                        "RemoteObject".to_string(),
                        // Upstream passes a nil map when there is no other object: indexing it
                        // yields <no value>, like an empty map does here.
                        other().map_or_else(
                            || gotmpl::Value::from(BTreeMap::new()),
                            gotmpl::Value::from_json,
                        ),
                    ),
                    // syncweave: values set by earlier steps of the chain.
                    ("Context".to_string(), gotmpl::Value::from_json(context)),
                ],
            );
            let opts = gotmpl::ExecOptions {
                html_escape: true,
                ..Default::default()
            };
            let rendered = template
                .execute_value(gotmpl::Value::object(data), &opts)
                .map_err(|e| {
                    PluginError::InvalidInput(format!(
                        "{}: failed to execute template: {e}",
                        rule.label
                    ))
                })?;
            path::set(object, &rule.path, json!(rendered.trim()))
                .map_err(|e| bad_shape(rule, e))?;
        }
        Action::Cel(program) => {
            let object = object.value_mut();
            let mut ctx = cel::Context::default();
            // gjson's Value() turns every number into a float64; self and other come from
            // Kubernetes objects, where integers are int64.
            ctx.add_variable_from_value(
                "value",
                path::get_ref(object, &rule.path).map_or(cel::Value::Null, |v| to_cel(v, true)),
            );
            ctx.add_variable_from_value("self", to_cel(object, false));
            ctx.add_variable_from_value(
                "other",
                other().map_or(cel::Value::Null, |o| to_cel(o, false)),
            );
            ctx.add_variable_from_value("context", to_cel(context, false));
            let out = program.execute(&ctx).map_err(|e| {
                PluginError::InvalidInput(format!(
                    "{}: failed to evaluate CEL expression: {e}",
                    rule.label
                ))
            })?;
            let out = out.json().map_err(|e| {
                PluginError::InvalidInput(format!(
                    "{}: cannot store the CEL result: {e}",
                    rule.label
                ))
            })?;
            path::set(object, &rule.path, out).map_err(|e| bad_shape(rule, e))?;
        }
    }
    Ok(())
}

/// JSON to a CEL value; with `floats`, every number is a double.
fn to_cel(value: &Value, floats: bool) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            if floats {
                cel::Value::Float(n.as_f64().unwrap_or_default())
            } else if let Some(i) = n.as_i64() {
                cel::Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                cel::Value::UInt(u)
            } else {
                cel::Value::Float(n.as_f64().unwrap_or_default())
            }
        }
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => {
            cel::Value::List(Arc::new(items.iter().map(|v| to_cel(v, floats)).collect()))
        }
        Value::Object(map) => {
            let entries: HashMap<cel::objects::Key, cel::Value> = map
                .iter()
                .map(|(k, v)| {
                    (
                        cel::objects::Key::String(Arc::new(k.clone())),
                        to_cel(v, floats),
                    )
                })
                .collect();
            cel::Value::Map(cel::objects::Map {
                map: Arc::new(entries),
            })
        }
    }
}
