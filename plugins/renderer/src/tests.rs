use syncweave_plugin::testing;

use super::*;

fn render(config: Value, template: &str, values: Value) -> Result<Vec<Value>, PluginError> {
    testing::render::<GoOrHandlebars>(&Context::fixture(), &config, template, &values)
}

fn ok(config: Value, template: &str, values: Value) -> Vec<Value> {
    render(config, template, values).unwrap_or_else(|e| panic!("render failed: {e}"))
}

fn err(config: Value, template: &str, values: Value) -> String {
    match render(config, template, values) {
        Err(PluginError::InvalidInput(m)) => m,
        other => panic!("expected an invalid-input error, got {other:?}"),
    }
}

fn cluster() -> Value {
    json!({"ClusterName": "2x8fkdtr3b1z", "ClusterPath": "root:my-new-workspace"})
}

#[test]
fn examples_render_what_they_promise() {
    // Examples carry their template in the config and render with an empty
    // template argument, as a host self-test would call them.
    let info = GoOrHandlebars::info();
    assert_eq!(info.examples.len(), 4);
    for f in &info.examples {
        GoOrHandlebars::validate_config(&f.config).unwrap();
        let got = ok(f.config.clone(), "", f.input.clone());
        assert_eq!(Some(Value::Array(got)), f.expected, "example {:?}", f.name);
    }
}

#[test]
fn text_output_is_the_trimmed_text_without_decoding() {
    let cfg = json!({"output": "text", "htmlEscape": false});
    assert_eq!(
        ok(cfg.clone(), "  {{ .ClusterName }}: <b>&\n", cluster()),
        vec![json!({"text": "2x8fkdtr3b1z: <b>&"})]
    );
    // Empty output is an empty text, not "no documents".
    assert_eq!(ok(cfg, "{{ \"\" }}", cluster()), vec![json!({"text": ""})]);
    let e = GoOrHandlebars::validate_config(&json!({"output": "yaml"})).unwrap_err();
    assert!(e.contains("output"), "{e}");
}

#[test]
fn upstream_e2e_template_renders_both_objects_in_order() {
    let got = ok(Value::Null, E2E_TEMPLATE, cluster());
    assert_eq!(got.len(), 2);
    assert_eq!(got[0]["data"]["workspace"], "root:my-new-workspace");
    assert_eq!(got[1]["kind"], "Namespace");
}

#[test]
fn go_templates_escape_like_html_template_by_default() {
    let tpl = "kind: ConfigMap\ndata:\n  v: x{{ .ClusterPath | printf \"%s<+>\" }}\n";
    assert_eq!(
        ok(Value::Null, tpl, cluster())[0]["data"]["v"],
        "xroot:my-new-workspace&lt;&#43;&gt;"
    );
    let raw = ok(json!({"htmlEscape": false}), tpl, cluster());
    assert_eq!(raw[0]["data"]["v"], "xroot:my-new-workspace<+>");
}

#[test]
fn sprig_and_syncweave_functions_are_available() {
    let tpl = "kind: ConfigMap\ndata:\n  h: {{ sha3short .ClusterName 8 | quote }}\n  u: {{ .ClusterPath | upper | replace \":\" \"-\" }}\n";
    let got = ok(json!({"htmlEscape": false}), tpl, cluster());
    assert_eq!(got[0]["data"]["u"], "ROOT-MY-NEW-WORKSPACE");
    assert_eq!(got[0]["data"]["h"].as_str().map(str::len), Some(8));
}

#[test]
fn unknown_value_fields_are_errors_like_upstreams_struct() {
    let e = err(Value::Null, "a: {{ .Nope }}", cluster());
    assert_eq!(
        e,
        "failed to execute template: template: template:1:6: executing \"template\" at <.Nope>: can't evaluate field Nope in type values"
    );
}

#[test]
fn the_three_upstream_error_forms() {
    let e = err(Value::Null, "a: {{ .ClusterName", cluster());
    assert!(
        e.starts_with("failed to parse template: template: template:1:"),
        "{e}"
    );
    let e = err(Value::Null, "a: {{ fail \"no\" }}", cluster());
    assert!(e.starts_with("failed to execute template: "), "{e}");
    assert!(e.ends_with("error calling fail: no"), "{e}");
    let e = err(Value::Null, "a: 1\n---\n- b\n", cluster());
    assert!(
        e.starts_with("failed to decode YAML: document 2 is not an object (it is a list)"),
        "{e}"
    );
    let e = err(Value::Null, "a: [1\n", cluster());
    assert!(
        e.starts_with("failed to decode YAML: document 1 (line "),
        "{e}"
    );
}

#[test]
fn time_and_random_functions_fail_clearly() {
    let e = err(Value::Null, "a: {{ now }}", cluster());
    assert!(
        e.contains("function now is not available in plugins (no clock/randomness in the sandbox)"),
        "{e}"
    );
    let e = err(Value::Null, "a: {{ uuidv4 }}", cluster());
    assert!(
        e.contains("function uuidv4 is not available in plugins"),
        "{e}"
    );
}

#[test]
fn handlebars_engine() {
    let cfg = json!({"engine": "handlebars"});
    let got = ok(
        cfg.clone(),
        "kind: Namespace\nmetadata:\n  name: \"{{ClusterName}}-<x>\"\n",
        cluster(),
    );
    assert_eq!(got[0]["metadata"]["name"], "2x8fkdtr3b1z-<x>");
    let got = ok(
        json!({"engine": "handlebars", "htmlEscape": true}),
        "v: \"{{ClusterPath}}<>\"\nw: \"{{v}}\"\n",
        json!({"ClusterPath": "a", "v": "<"}),
    );
    assert_eq!(got[0]["w"], "&lt;");
    let e = err(cfg, "a: {{#if}}", cluster());
    assert!(e.starts_with("failed to parse template: "), "{e}");
}

#[test]
fn json_output_is_a_stream_of_objects() {
    let tpl = "{{ toJson (dict \"kind\" \"A\") }}\n{{ toJson (dict \"kind\" \"B\") }}";
    let got = ok(json!({"htmlEscape": false}), tpl, cluster());
    assert_eq!(got, vec![json!({"kind": "A"}), json!({"kind": "B"})]);
}

#[test]
fn empty_output_renders_no_objects() {
    assert!(
        ok(
            Value::Null,
            "{{/* nothing */}}\n---\n# just a comment\n",
            cluster()
        )
        .is_empty()
    );
}

#[test]
fn values_must_be_an_object() {
    let e = err(Value::Null, "a: 1", json!(["x"]));
    assert!(e.starts_with("the values must be a JSON object"), "{e}");
    assert_eq!(ok(Value::Null, "a: 1", Value::Null), vec![json!({"a": 1})]);
}

#[test]
fn config_errors_name_the_field() {
    let e = GoOrHandlebars::validate_config(&json!({"engine": "jinja"})).unwrap_err();
    assert!(e.contains("unknown variant `jinja`"), "{e}");
    let e = GoOrHandlebars::validate_config(&json!({"htmlescape": true})).unwrap_err();
    assert!(e.contains("unknown field `htmlescape`"), "{e}");
    let e = GoOrHandlebars::validate_config(&json!({"template": "{{ nope }}"})).unwrap_err();
    assert!(e.starts_with("template: failed to parse template:"), "{e}");
    match render(json!({"engine": 3}), "a: 1", cluster()) {
        Err(PluginError::InvalidConfig(m)) => assert!(m.contains("engine"), "{m}"),
        other => panic!("expected invalid config, got {other:?}"),
    }
}

/// Numbers compare as float64: upstream decodes every number into a Go
/// float64, so integers beyond 2^53 lose precision there (not here).
fn canonical(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), canonical(v))).collect())
        }
        other => other.clone(),
    }
}

/// testdata/documents.golden.json is what upstream's decoding (apimachinery's
/// YAMLOrJSONDecoder, via testdata/oracle) makes of each text in
/// testdata/documents.json.
#[test]
fn documents_decode_like_upstream() {
    let golden: Vec<Value> =
        serde_json::from_str(include_str!("../testdata/documents.golden.json"))
            .expect("golden file is JSON");
    // go-yaml rejects a tab on an otherwise blank line; we accept it.
    const LENIENT: &[&str] = &["whitespace"];
    let mut failures = Vec::new();
    for case in &golden {
        let name = case["name"].as_str().unwrap_or_default();
        if LENIENT.contains(&name) {
            continue;
        }
        let text = case["text"].as_str().unwrap_or_default();
        let got = documents::decode(text);
        match (case.get("error"), got) {
            (Some(_), Err(_)) => {}
            (Some(want), Ok(objs)) => failures.push(format!(
                "{name}: upstream fails with {want}, we decoded {objs:?}"
            )),
            (None, Err(e)) => failures.push(format!(
                "{name}: upstream decodes {}, we fail with {e}",
                case["objects"]
            )),
            (None, Ok(objs)) => {
                let want = match case.get("objects") {
                    Some(Value::Array(a)) => Value::Array(a.clone()),
                    _ => json!([]),
                };
                let got = Value::Array(objs.into_iter().map(Value::Object).collect());
                if canonical(&got) != canonical(&want) {
                    failures.push(format!("{name}: want {want}, got {got}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} documents decode differently:\n{}",
        failures.len(),
        golden.len(),
        failures.join("\n")
    );
}

#[test]
fn html_escaped_quotes_fail_like_upstream_instead_of_becoming_anchors() {
    // With html/template escaping, `quote` output starts with `&#34;`, which
    // go-yaml rejects as an anchor name.
    let e = err(Value::Null, "a: {{ .ClusterName | quote }}\n", cluster());
    assert!(e.starts_with("failed to decode YAML: document 1 (line 1 of the rendered output): line 1, column 4: while scanning an anchor"), "{e}");
}

#[test]
fn separator_errors_use_upstreams_words() {
    let e = err(Value::Null, "a: 1\n--- b\n", cluster());
    assert!(
        e.starts_with("failed to decode YAML: invalid Yaml document separator: b"),
        "{e}"
    );
}
