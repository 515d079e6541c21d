//! Built-in mutator: upstream PublishedResource mutation rules.
//!
//! Config: a list of rules applied in order, or upstream's `mutation` block
//! `{"spec": [rules], "status": [rules]}` (spec rules run on calls from kcp to the
//! service cluster, status rules on calls back). Each rule sets one of:
//! - `{"delete": {"path"}}` removes the value at `path`;
//! - `{"regex": {"path", "pattern", "replacement"}}` runs Go's `ReplaceAllString` on the
//!   value (coerced to a string, objects as JSON) and stores the string; an empty
//!   pattern stores `replacement` as is;
//! - `{"template": {"path", "template"}}` renders an html/template-escaped Go template
//!   with `.Value` (a gjson result: `.Value.String`, `.Value.Int`, …), `.LocalObject`
//!   (the object being mutated) and `.RemoteObject` (the other object), and stores the
//!   trimmed output as a string;
//! - `{"cel": {"path", "expression"}}` evaluates CEL with `value` (the current value,
//!   numbers as doubles like gjson), `self` and `other` (null when absent) and stores
//!   the typed result.
//!
//! Paths use gjson/sjson syntax (see `syncweave_plugin::path`). If a rule sets several
//! mechanisms the first of delete, regex, template, cel wins, as upstream.
use std::cell::RefCell;
use std::rc::Rc;

use syncweave_plugin::{
    Context, Direction, Fixture, Mutator, Object, PluginError, PluginInfo, Value, json,
};

pub mod rules;

use rules::RuleSet;

/// The built-in mutation plugin.
pub struct Mutation;

impl Mutator for Mutation {
    fn info() -> PluginInfo {
        let rule_schema = |props: Value, required: Value| json!({"type": "object", "additionalProperties": false, "required": required, "properties": props});
        let rule = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "delete": rule_schema(json!({"path": {"type": "string"}}), json!(["path"])),
                "regex": rule_schema(
                    json!({"path": {"type": "string"}, "pattern": {"type": "string"}, "replacement": {"type": "string"}}),
                    json!(["path"])
                ),
                "template": rule_schema(
                    json!({"path": {"type": "string"}, "template": {"type": "string"}}),
                    json!(["path"])
                ),
                "cel": rule_schema(
                    json!({"path": {"type": "string"}, "expression": {"type": "string"}}),
                    json!(["path", "expression"])
                )
            }
        });
        let rules = json!({"type": "array", "items": rule});
        syncweave_plugin::plugin_info!(
            "Applies upstream PublishedResource mutation rules (delete, regex, template, cel) in order"
        )
        .config_schema(json!({
            "oneOf": [
                rules,
                {"type": "object", "additionalProperties": false,
                 "properties": {"spec": rules, "status": rules}}
            ]
        }))
        .example(
            Fixture::new(
                "rewrite a secret name and drop a field",
                json!([
                    {"regex": {"path": "spec.secretName", "pattern": "^(.*)$", "replacement": "kcp-$1"}},
                    {"delete": {"path": "spec.debug"}},
                    {"cel": {"path": "spec.replicas", "expression": "self.spec.replicas * 2"}},
                    {"template": {"path": "metadata.annotations.owner", "template": "{{ upper .LocalObject.metadata.name }}"}}
                ]),
                json!({"apiVersion": "example.com/v1", "kind": "Thing",
                       "metadata": {"name": "demo", "namespace": "default"},
                       "spec": {"secretName": "creds", "debug": true, "replicas": 2}}),
            )
            .expect(json!({"apiVersion": "example.com/v1", "kind": "Thing",
                           "metadata": {"name": "demo", "namespace": "default", "annotations": {"owner": "DEMO"}},
                           "spec": {"secretName": "kcp-creds", "replicas": 4}})),
        )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        RuleSet::parse(config)?.check()
    }

    fn mutate(
        ctx: &Context,
        config: &Value,
        object: &mut Object<'_>,
        other: Option<&Object<'_>>,
    ) -> Result<(), PluginError> {
        let compiled = compiled_rules(config, ctx.direction)?;
        rules::apply(&compiled, object, other)
    }
}

/// Compiled rules with the config and direction they were compiled for.
type CachedRules = (Value, Direction, Rc<Vec<rules::Rule>>);

thread_local! {
    /// The rules last compiled, by config and direction: a warm instance mutating many
    /// objects for one PublishedResource compiles its regexes, templates and CEL
    /// programs once instead of on every call.
    static LAST: RefCell<Option<CachedRules>> = const { RefCell::new(None) };
}

fn compiled_rules(
    config: &Value,
    direction: Direction,
) -> Result<Rc<Vec<rules::Rule>>, PluginError> {
    if let Some(hit) = LAST.with_borrow(|last| {
        last.as_ref()
            .filter(|(c, d, _)| c == config && *d == direction)
            .map(|(_, _, r)| r.clone())
    }) {
        return Ok(hit);
    }
    let set = RuleSet::parse(config).map_err(PluginError::InvalidConfig)?;
    let (list, raw) = set.for_direction(direction);
    let compiled = Rc::new(rules::compile(list, raw).map_err(PluginError::InvalidConfig)?);
    LAST.set(Some((config.clone(), direction, compiled.clone())));
    Ok(compiled)
}

/// Contract 0.2: the same rules, and templates and CEL see the context values of
/// earlier chain steps (`.Context.<key>`, `context["<key>"]`). The 0.1 trait above
/// stays for the unit tests and gives the info; the component exports 0.2.
impl syncweave_plugin::v2::Mutator for Mutation {
    fn info() -> syncweave_plugin::v2::PluginInfo {
        let info: syncweave_plugin::v2::PluginInfo = <Mutation as Mutator>::info().into();
        info.example(
            syncweave_plugin::v2::Fixture::new(
                "a template and CEL read a context value an earlier step set",
                json!([
                    {"template": {"path": "metadata.labels.tenant", "template": "{{ .Context.tenant }}"}},
                    {"cel": {"path": "spec.tier", "expression": "context.tier + \"-\" + self.metadata.name"}}
                ]),
                json!({"apiVersion": "example.com/v1", "kind": "Thing",
                       "metadata": {"name": "demo", "namespace": "default"}, "spec": {}}),
            )
            .value("tenant", "acme")
            .value("tier", "gold")
            .expect(json!({"apiVersion": "example.com/v1", "kind": "Thing",
                           "metadata": {"name": "demo", "namespace": "default", "labels": {"tenant": "acme"}},
                           "spec": {"tier": "gold-demo"}})),
        )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        <Mutation as Mutator>::validate_config(config)
    }

    fn mutate(
        ctx: &syncweave_plugin::v2::Context,
        config: &Value,
        object: &mut Object<'_>,
        other: Option<&Object<'_>>,
        _report: &mut syncweave_plugin::v2::Report,
    ) -> Result<(), PluginError> {
        let compiled = compiled_rules(config, ctx.direction)?;
        let mut context = syncweave_plugin::serde_json::Map::new();
        for (k, v) in &ctx.values {
            let v: Value = syncweave_plugin::serde_json::from_str(v).map_err(|e| {
                PluginError::InvalidInput(format!("context value {k:?} is not JSON: {e}"))
            })?;
            context.insert(k.clone(), v);
        }
        rules::apply_in(&compiled, object, other, &Value::Object(context))
    }
}

syncweave_plugin::v2::mutator!(Mutation);

#[cfg(test)]
mod tests;
