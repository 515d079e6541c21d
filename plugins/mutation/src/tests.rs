//! Upstream's TestCEL, TestDelete, TestRegex and TestTemplate cases, plus config
//! handling.
use super::*;
use syncweave_plugin::{Direction, testing};

fn mutate(rules: Value, object: Value, other: Option<Value>) -> Result<Value, PluginError> {
    testing::mutate::<Mutation>(&Context::fixture(), &rules, &object, other.as_ref())
}

fn crontab() -> Value {
    json!({
        "apiVersion": "kcp.example.com/v1",
        "kind": "CronTab",
        "metadata": {"namespace": "default", "name": "my-crontab"},
        "spec": {"cronSpec": "* * *", "image": "ubuntu:latest"}
    })
}

fn list_object() -> Value {
    json!({
        "apiVersion": "kcp.example.com/v1",
        "kind": "List",
        "metadata": {"namespace": "default", "name": "my-list"},
        "spec": {"items": [
            {"name": "foo", "image": "ubuntu:latest"},
            {"name": "bar", "image": "alpine:latest"}
        ]}
    })
}

fn with(mut base: Value, path: &str, value: Value) -> Value {
    syncweave_plugin::path::set(&mut base, path, value).unwrap();
    base
}

// TestCEL

#[test]
fn cel_replaces_value_with_constant_of_same_type() {
    let rules = json!([{"cel": {"path": "spec.cronSpec", "expression": "\"hei verden\""}}]);
    assert_eq!(
        mutate(rules, crontab(), None).unwrap(),
        with(crontab(), "spec.cronSpec", json!("hei verden"))
    );
}

#[test]
fn cel_replaces_value_with_constant_of_other_type() {
    let rules = json!([{"cel": {"path": "spec.cronSpec", "expression": "42"}}]);
    assert_eq!(
        mutate(rules, crontab(), None).unwrap(),
        with(crontab(), "spec.cronSpec", json!(42))
    );
}

#[test]
fn cel_accesses_current_value() {
    let rules = json!([{"cel": {"path": "spec.cronSpec", "expression": "value + \"foo\""}}]);
    assert_eq!(
        mutate(rules, crontab(), None).unwrap(),
        with(crontab(), "spec.cronSpec", json!("* * *foo"))
    );
}

#[test]
fn cel_accesses_other_object() {
    let rules = json!([{"cel": {"path": "spec.cronSpec", "expression": "other.spec.image"}}]);
    assert_eq!(
        mutate(rules, crontab(), Some(crontab())).unwrap(),
        with(crontab(), "spec.cronSpec", json!("ubuntu:latest"))
    );
}

#[test]
fn cel_recreates_list_value() {
    let rules = json!([{"cel": {"path": "spec.items", "expression": "other.spec.items"}}]);
    assert_eq!(
        mutate(rules, list_object(), Some(list_object())).unwrap(),
        list_object()
    );
}

#[test]
fn cel_modifies_list_value() {
    let rules = json!([{"cel": {"path": "spec.items", "expression":
        "self.spec.items.map(a, {\n  \"name\": a.name,\n  \"image\": \"registry.example.com/\" + a.image\n})"}}]);
    let expected = with(
        list_object(),
        "spec.items",
        json!([
            {"name": "foo", "image": "registry.example.com/ubuntu:latest"},
            {"name": "bar", "image": "registry.example.com/alpine:latest"}
        ]),
    );
    assert_eq!(
        mutate(rules, list_object(), Some(list_object())).unwrap(),
        expected
    );
}

#[test]
fn cel_types_follow_upstream() {
    // self/other integers are ints; value numbers are doubles (gjson's Value()).
    let object = json!({"spec": {"replicas": 3}});
    let rules = json!([{"cel": {"path": "spec.replicas", "expression": "self.spec.replicas + 1"}}]);
    assert_eq!(
        mutate(rules, object.clone(), None).unwrap(),
        json!({"spec": {"replicas": 4}})
    );
    let rules = json!([{"cel": {"path": "spec.replicas", "expression": "value * 1.5"}}]);
    assert_eq!(
        mutate(rules, object.clone(), None).unwrap(),
        json!({"spec": {"replicas": 4.5}})
    );
    let rules =
        json!([{"cel": {"path": "spec.missing", "expression": "other == null && value == null"}}]);
    assert_eq!(
        mutate(rules, object, None).unwrap(),
        json!({"spec": {"replicas": 3, "missing": true}})
    );
}

#[test]
fn cel_errors_are_classified() {
    let err = mutate(
        json!([{"cel": {"path": "a", "expression": "1 +"}}]),
        json!({}),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidConfig(ref m) if m.contains("rules[0] (cel at \"a\")")),
        "{err}"
    );
    let err = mutate(
        json!([{"cel": {"path": "a", "expression": "self.nope.deeper"}}]),
        json!({}),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidInput(ref m) if m.contains("failed to evaluate CEL")),
        "{err}"
    );
}

// TestDelete

#[test]
fn delete_removes_object_keys() {
    let rules = json!([{"delete": {"path": "spec.secretName"}}]);
    assert_eq!(
        mutate(rules, json!({"spec": {"secretName": "foo"}}), None).unwrap(),
        json!({"spec": {}})
    );
}

#[test]
fn delete_removes_array_items() {
    let rules = json!([{"delete": {"path": "spec.1"}}]);
    assert_eq!(
        mutate(rules, json!({"spec": [1, 2, 3]}), None).unwrap(),
        json!({"spec": [1, 3]})
    );
}

// TestRegex

fn regex(path: &str, pattern: &str, replacement: &str) -> Value {
    json!([{"regex": {"path": path, "pattern": pattern, "replacement": replacement}}])
}

#[test]
fn regex_cases() {
    let secret = || json!({"spec": {"secretName": "foo"}});
    let number = || json!({"spec": {"aNumber": 24}});
    let cases = [
        (
            "replace one existing value",
            secret(),
            regex("spec.secretName", "", "new-value"),
            json!({"spec": {"secretName": "new-value"}}),
        ),
        (
            "rewrite one existing value",
            secret(),
            regex("spec.secretName", "o", "u"),
            json!({"spec": {"secretName": "fuu"}}),
        ),
        (
            "should support grouping",
            secret(),
            regex("spec.secretName", "(f)oo", "oo$1"),
            json!({"spec": {"secretName": "oof"}}),
        ),
        (
            "coalesces to strings",
            number(),
            regex("spec.aNumber", "4", "5"),
            json!({"spec": {"aNumber": "25"}}),
        ),
        (
            "can change types",
            number(),
            regex("spec", "", "new-value"),
            json!({"spec": "new-value"}),
        ),
        (
            "can change types /2",
            number(),
            regex("spec", "(.)", "$1"),
            json!({"spec": "{\"aNumber\":24}"}),
        ),
        (
            "can empty values",
            number(),
            regex("spec", "", ""),
            json!({"spec": ""}),
        ),
        (
            "can empty values /2",
            number(),
            regex("spec", ".+", ""),
            json!({"spec": ""}),
        ),
    ];
    for (name, input, rules, expected) in cases {
        assert_eq!(mutate(rules, input, None).unwrap(), expected, "{name}");
    }
}

#[test]
fn regex_pattern_errors_name_the_rule() {
    let err = mutate(regex("spec.x", "(", ""), json!({}), None).unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidConfig(ref m) if m.starts_with("rules[0] (regex at \"spec.x\"): invalid pattern \"(\"")),
        "{err}"
    );
}

// TestTemplate

#[test]
fn template_empty_returns_empty_value() {
    let rules = json!([{"template": {"path": "spec.cronSpec"}}]);
    assert_eq!(
        mutate(rules, crontab(), None).unwrap(),
        with(crontab(), "spec.cronSpec", json!(""))
    );
}

#[test]
fn template_can_change_value_type() {
    let rules = json!([{"template": {"path": "spec"}}]);
    assert_eq!(
        mutate(rules, crontab(), None).unwrap(),
        with(crontab(), "spec", json!(""))
    );
}

#[test]
fn template_executes_basic_template() {
    let rules =
        json!([{"template": {"path": "spec.image", "template": "{{ upper .Value.String }}"}}]);
    assert_eq!(
        mutate(rules, crontab(), None).unwrap(),
        with(crontab(), "spec.image", json!("UBUNTU:LATEST"))
    );
}

#[test]
fn template_context_escapes_and_trims() {
    let rules = json!([{"template": {"path": "spec.out", "template":
        "  {{ .LocalObject.metadata.name }}/{{ .RemoteObject.metadata.name }}/{{ .Value.Exists }} <&> \n"}}]);
    let out = mutate(rules.clone(), crontab(), None).unwrap();
    // Output of actions is HTML-escaped (html/template), which prints missing values as
    // nothing; literal text is not escaped.
    assert_eq!(out["spec"]["out"], json!("my-crontab//false <&>"));
    let out = mutate(rules, crontab(), Some(json!({"metadata": {"name": "o'k"}}))).unwrap();
    assert_eq!(out["spec"]["out"], json!("my-crontab/o&#39;k/false <&>"));
}

#[test]
fn template_errors_are_classified() {
    let err = mutate(
        json!([{"template": {"path": "a", "template": "{{ .Value"}}]),
        json!({}),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidConfig(ref m) if m.contains("failed to parse template")),
        "{err}"
    );
    let err = mutate(
        json!([{"template": {"path": "a", "template": "{{ .Nope }}"}}]),
        json!({}),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidInput(ref m) if m.contains("failed to execute template")),
        "{err}"
    );
}

// Config handling

#[test]
fn rules_apply_in_order_and_first_mechanism_wins() {
    let rules = json!([
        {"regex": {"path": "spec.a", "replacement": "x"}, "delete": {"path": "spec.b"}},
        {"template": {"path": "spec.c", "template": "{{ .LocalObject.spec.a }}"}}
    ]);
    let out = mutate(rules, json!({"spec": {"a": 1, "b": 2}}), None).unwrap();
    assert_eq!(out, json!({"spec": {"a": 1, "c": "1"}}));
}

#[test]
fn direction_selects_spec_or_status_rules() {
    let config = json!({
        "spec": [{"regex": {"path": "spec.x", "replacement": "down"}}],
        "status": [{"regex": {"path": "status.x", "replacement": "up"}}]
    });
    let mut ctx = Context::fixture();
    let out = testing::mutate::<Mutation>(&ctx, &config, &json!({}), None).unwrap();
    assert_eq!(out, json!({"spec": {"x": "down"}}));
    ctx.direction = Direction::ServiceToKcp;
    let out = testing::mutate::<Mutation>(&ctx, &config, &json!({}), None).unwrap();
    assert_eq!(out, json!({"status": {"x": "up"}}));
}

#[test]
fn data_of_the_wrong_shape_is_invalid_input() {
    let err = mutate(regex("spec.name", "", "x"), json!({"spec": [1]}), None).unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidInput(ref m) if m.contains("cannot use key \"name\" on an array")),
        "{err}"
    );
    let err = mutate(json!([]), json!([1]), None).unwrap_err();
    assert_eq!(
        err,
        PluginError::InvalidInput("the object must be a JSON object, not an array".into())
    );
}

#[test]
fn compiled_rules_are_reused_only_for_the_same_config_and_direction() {
    let config = json!([{"regex": {"path": "a", "pattern": "x", "replacement": "y"}}]);
    let first = compiled_rules(&config, Direction::KcpToService).unwrap();
    let again = compiled_rules(&config, Direction::KcpToService).unwrap();
    assert!(std::rc::Rc::ptr_eq(&first, &again));
    let other_direction = compiled_rules(&config, Direction::ServiceToKcp).unwrap();
    assert!(!std::rc::Rc::ptr_eq(&first, &other_direction));
    let changed = json!([{"regex": {"path": "a", "pattern": "z", "replacement": "y"}}]);
    let out = mutate(changed, json!({"a": "xz"}), None).unwrap();
    assert_eq!(out, json!({"a": "xy"}));
}

#[test]
fn null_config_changes_nothing() {
    assert_eq!(mutate(json!(null), crontab(), None).unwrap(), crontab());
}

#[test]
fn config_errors_name_the_rule() {
    let cases = [
        (json!([{}]), "rules[0]: no mutation mechanism set"),
        (json!([{"delete": {}}]), "missing field `path`"),
        (json!([{"rename": {"path": "a"}}]), "unknown field `rename`"),
        (
            json!({"spec": [{"delete": {"path": "a.*"}}]}),
            "spec[0] (delete at \"a.*\"): path \"a.*\" contains a wildcard",
        ),
        (
            json!({"status": [{"delete": {"path": "a"}}, {}]}),
            "status[1]: no mutation mechanism set",
        ),
        (json!({"other": []}), "unknown field `other`"),
        (json!("rules"), "must be a list of mutation rules"),
    ];
    for (config, expected) in cases {
        let err = Mutation::validate_config(&config).unwrap_err();
        assert!(err.contains(expected), "{config}: {err}");
    }
    assert!(
        Mutation::validate_config(&json!([{"cel": {"path": "a", "expression": "self"}}])).is_ok()
    );
}

#[test]
fn examples_hold() {
    assert_eq!(testing::check_mutator_examples::<Mutation>(), Ok(1));
}

#[test]
fn templates_and_cel_read_context_values_of_earlier_steps() {
    use syncweave_plugin::testing::v2::{self as t, Env};
    let config = json!([
        {"template": {"path": "metadata.labels.tenant", "template": "{{ .Context.tenant }}"}},
        {"cel": {"path": "spec.size", "expression": "context.size * 2"}}
    ]);
    let env = Env::new().value("tenant", "acme").value("size", 21);
    let out = t::mutate::<Mutation>(&env, &config, &json!({"metadata": {"name": "x"}}), None)
        .unwrap();
    assert_eq!(out.output["metadata"]["labels"]["tenant"], "acme");
    assert_eq!(out.output["spec"]["size"], 42);
    // Without values, `.Context.tenant` is empty, as a missing key of a map.
    let out = t::mutate::<Mutation>(&Env::new(), &json!([config[0]]), &json!({}), None);
    assert_eq!(out.unwrap().output["metadata"]["labels"]["tenant"], "");
}

#[test]
fn every_example_holds_under_contract_0_2() {
    use syncweave_plugin::testing::v2::{self as t, Env};
    for ex in <Mutation as syncweave_plugin::v2::Mutator>::info().examples {
        let env = Env::for_example(&ex);
        let out = t::mutate::<Mutation>(&env, &ex.config, &ex.input, None)
            .unwrap_or_else(|e| panic!("{}: {e}", ex.name));
        if let Some(want) = &ex.expected {
            assert_eq!(&out.output, want, "{}", ex.name);
        }
    }
}
