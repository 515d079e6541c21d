//! Upstream's TestGenerateLocalObjectName cases, plus templates, placeholders and
//! scope handling.
use super::*;
use syncweave_plugin::testing;

fn object(name: &str, namespace: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": name, "namespace": namespace}})
}

fn ctx(cluster: &str, path: Option<&str>) -> Context {
    Context {
        cluster_name: cluster.into(),
        cluster_path: path.map(Into::into),
        ..Context::fixture()
    }
}

fn name(config: Value, object: &Value) -> Result<ObjectName, PluginError> {
    testing::name::<NamingPlugin>(&ctx("testcluster", Some("root:org:team")), &config, object)
}

const DEFAULT_NAME: &str = "2928c2aa0e510f017f07-73d08a1ba188f1340dae";

#[test]
fn generate_local_object_name_cases() {
    let obj = object("objname", "objnamespace");
    let cases = [
        (
            "follow default naming rules",
            json!(null),
            "testcluster",
            DEFAULT_NAME.to_string(),
        ),
        (
            "custom static namespace pattern",
            json!({"namespace": "foobar"}),
            "foobar",
            DEFAULT_NAME.to_string(),
        ),
        (
            "custom dynamic namespace pattern",
            json!({"namespace": "foobar-$remoteClusterName"}),
            "foobar-testcluster",
            DEFAULT_NAME.to_string(),
        ),
        (
            "plain, unhashed values should be available in patterns",
            json!({"namespace": "$remoteNamespace"}),
            "objnamespace",
            DEFAULT_NAME.to_string(),
        ),
        (
            "configured but empty patterns",
            json!({"namespace": "", "name": ""}),
            "testcluster",
            DEFAULT_NAME.to_string(),
        ),
        (
            "custom dynamic name pattern",
            json!({"name": "foobar-$remoteName"}),
            "testcluster",
            "foobar-objname".to_string(),
        ),
        (
            "template with cluster path",
            json!({"namespace": "{{ .ClusterPath | replace \":\" \"-\" }}", "name": "{{ .Object.metadata.name }}"}),
            "root-org-team",
            "objname".to_string(),
        ),
    ];
    for (case, config, namespace, expected_name) in cases {
        let got = name(config, &obj).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(
            got,
            ObjectName::namespaced(namespace, expected_name),
            "{case}"
        );
    }
}

#[test]
fn default_template_equivalent_matches_native_default() {
    let obj = object("objname", "objnamespace");
    let config = json!({
        "namespace": "{{ .ClusterName }}",
        "name": "{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}"
    });
    assert_eq!(
        name(config, &obj).unwrap(),
        ObjectName::namespaced("testcluster", DEFAULT_NAME)
    );
}

#[test]
fn legacy_placeholders_prefer_hash_variants() {
    let obj = object("objname", "objnamespace");
    let got = name(
        json!({"name": "$remoteNameHash.$remoteName.$remoteNamespaceHash.$remoteNamespace"}),
        &obj,
    )
    .unwrap();
    assert_eq!(
        got.name,
        format!(
            "{}.objname.{}.objnamespace",
            short_hash("objname"),
            short_hash("objnamespace")
        )
    );
    // Replacement text is not scanned again.
    let obj = object("$remoteName", "ns");
    assert_eq!(
        name(json!({"name": "x-$remoteName"}), &obj).unwrap().name,
        "x-$remoteName"
    );
}

#[test]
fn templates_get_sprig_hash_functions_and_trimmed_output() {
    let obj = object("objname", "objnamespace");
    let config = json!({"name": "  {{ sha3short .Object.metadata.name 8 }}-{{ shortHash .ClusterName }}-{{ .Object.metadata.name | upper }}\n"});
    let got = name(config, &obj).unwrap();
    assert_eq!(
        got.name,
        format!("73d08a1b-{}-OBJNAME", short_hash("testcluster"))
    );
    // join is Go's strings.Join in upstream naming templates.
    let config = json!({"name": "{{ join (list \"a\" \"b\") \"-\" }}"});
    assert_eq!(name(config, &obj).unwrap().name, "a-b");
}

#[test]
fn cluster_scoped_drops_the_namespace() {
    let obj = object("objname", "objnamespace");
    let got = name(
        json!({"clusterScoped": true, "namespace": "{{ fail \"never rendered\" }}"}),
        &obj,
    )
    .unwrap();
    assert_eq!(got, ObjectName::cluster_scoped(DEFAULT_NAME));
}

#[test]
fn cluster_scoped_kcp_object_gets_a_default_name() {
    let obj = json!({"metadata": {"name": "objname"}});
    let got = name(json!(null), &obj).unwrap();
    assert_eq!(got.name, format!("{}-73d08a1ba188f1340dae", sha3short("")));
}

#[test]
fn errors_name_the_pattern() {
    let obj = object("objname", "objnamespace");
    let err = name(json!({"name": "{{ .Object.metadata.name"}), &obj).unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidConfig(ref m) if m.starts_with("invalid name naming: failed to parse")),
        "{err}"
    );
    let err = name(json!({"namespace": "{{ .Nope }}"}), &obj).unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidInput(ref m) if m.starts_with("invalid namespace naming: failed to evaluate")),
        "{err}"
    );
    let err = name(json!({"name": "{{ \" \" }}"}), &obj).unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidInput(ref m) if m.contains("empty name")),
        "{err}"
    );
    let err = NamingPlugin::validate_config(&json!({"names": "x"})).unwrap_err();
    assert!(err.contains("unknown field `names`"), "{err}");
    assert!(NamingPlugin::validate_config(&json!({"name": "{{"})).is_err());
}

#[test]
fn examples_hold() {
    assert_eq!(testing::check_namer_examples::<NamingPlugin>(), Ok(3));
}
