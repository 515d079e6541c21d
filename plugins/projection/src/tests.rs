//! The intent of upstream's TestProjectCRD (18 cases), plus the version ordering.
use super::*;
use syncweave_plugin::testing;

fn status() -> Value {
    json!({"status": {}})
}

fn single_version() -> Value {
    json!({
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": status()}]
        }
    })
}

fn multi_versions() -> Value {
    json!({
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
            "versions": [
                {"name": "v1beta1", "served": false, "storage": false, "subresources": status()},
                {"name": "v1", "served": true, "storage": false, "subresources": status()},
                {"name": "v2alpha1", "served": true, "storage": false, "subresources": status()},
                {"name": "v2", "served": true, "storage": true, "subresources": status()},
                {"name": "v3", "served": true, "storage": false}
            ]
        }
    })
}

fn with(mut base: Value, edit: impl FnOnce(&mut Value)) -> Value {
    edit(&mut base);
    base
}

fn run(config: Value, crd: Value) -> Result<Value, PluginError> {
    testing::project::<CrdProjector>(&config, &crd)
}

#[test]
fn no_projection_on_a_single_version_crd() {
    assert_eq!(run(json!({}), single_version()).unwrap(), single_version());
    assert_eq!(
        run(json!(null), single_version()).unwrap(),
        single_version()
    );
}

#[test]
fn no_projection_on_a_multi_version_crd() {
    assert_eq!(run(json!({}), multi_versions()).unwrap(), multi_versions());
}

#[test]
fn select_a_single_version_deprecated() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["versions"] = json!([{"name": "v3", "served": true, "storage": true}]);
    });
    assert_eq!(
        run(json!({"resource": {"version": "v3"}}), multi_versions()).unwrap(),
        expected
    );
}

#[test]
fn select_a_single_version_modern() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["versions"] = json!([{"name": "v3", "served": true, "storage": true}]);
    });
    assert_eq!(
        run(json!({"resource": {"versions": ["v3"]}}), multi_versions()).unwrap(),
        expected
    );
}

#[test]
fn select_a_subset_of_versions_keeps_crd_order() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": false, "subresources": status()},
            {"name": "v3", "served": true, "storage": true}
        ]);
    });
    assert_eq!(
        run(
            json!({"resource": {"versions": ["v3", "v1"]}}),
            multi_versions()
        )
        .unwrap(),
        expected
    );
}

#[test]
fn error_select_a_missing_version_deprecated() {
    let err = run(json!({"resource": {"version": "v4"}}), multi_versions()).unwrap_err();
    assert_eq!(
        err,
        PluginError::InvalidConfig("CRD does not contain version v4".into())
    );
}

#[test]
fn error_select_a_missing_version_modern() {
    let err = run(json!({"resource": {"versions": ["v4"]}}), multi_versions()).unwrap_err();
    assert_eq!(
        err,
        PluginError::InvalidConfig("CRD does not contain any of versions [v4]".into())
    );
}

#[test]
fn error_select_no_served_version() {
    let err = run(
        json!({"resource": {"versions": ["v1beta1"]}}),
        multi_versions(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        PluginError::InvalidConfig("no CRD version selected that is marked as served".into())
    );
}

#[test]
fn auto_determine_storage_version() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": false, "subresources": status()},
            {"name": "v2", "served": true, "storage": true, "subresources": status()}
        ]);
    });
    assert_eq!(
        run(
            json!({"resource": {"versions": ["v2", "v1"]}}),
            multi_versions()
        )
        .unwrap(),
        expected
    );
}

#[test]
fn project_single_version_deprecated() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["versions"] = json!([{"name": "v6", "served": true, "storage": true}]);
    });
    let config = json!({"resource": {"versions": ["v3"]}, "projection": {"version": "v6"}});
    assert_eq!(run(config, multi_versions()).unwrap(), expected);
}

#[test]
fn project_single_version_modern() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["versions"] = json!([{"name": "v6", "served": true, "storage": true}]);
    });
    let config =
        json!({"resource": {"versions": ["v3"]}, "projection": {"versions": {"v3": "v6"}}});
    assert_eq!(run(config, multi_versions()).unwrap(), expected);
}

#[test]
fn error_project_multiple_versions_to_the_same_version() {
    let config = json!({"resource": {"versions": ["v3", "v1"]}, "projection": {"versions": {"v3": "v6", "v1": "v6"}}});
    let err = run(config, multi_versions()).unwrap_err();
    assert_eq!(
        err,
        PluginError::InvalidConfig(
            "CRD contains multiple entries for v6 after applying projection.versions".into()
        )
    );
}

#[test]
fn project_multiple_versions_sorts_them() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["versions"] = json!([
            {"name": "v6", "served": true, "storage": true},
            {"name": "v7", "served": true, "storage": false, "subresources": status()}
        ]);
    });
    let config = json!({"resource": {"versions": ["v3", "v1"]}, "projection": {"versions": {"v3": "v6", "v1": "v7"}}});
    assert_eq!(run(config, multi_versions()).unwrap(), expected);
}

#[test]
fn project_api_group() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["group"] = json!("new.example.com");
        c["metadata"]["name"] = json!("things.new.example.com");
    });
    assert_eq!(
        run(
            json!({"projection": {"group": "new.example.com"}}),
            multi_versions()
        )
        .unwrap(),
        expected
    );
}

#[test]
fn project_kind_auto_pluralizes() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["names"] = json!({"kind": "NewThing", "listKind": "NewThingList", "singular": "newthing", "plural": "newthings"});
        c["metadata"]["name"] = json!("newthings.example.com");
    });
    assert_eq!(
        run(
            json!({"projection": {"kind": "NewThing"}}),
            multi_versions()
        )
        .unwrap(),
        expected
    );
}

#[test]
fn project_kind_with_explicit_plural() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["names"] =
            json!({"kind": "Foot", "listKind": "FootList", "singular": "foot", "plural": "feet"});
        c["metadata"]["name"] = json!("feet.example.com");
    });
    assert_eq!(
        run(
            json!({"projection": {"kind": "Foot", "plural": "feet"}}),
            multi_versions()
        )
        .unwrap(),
        expected
    );
}

#[test]
fn project_crd_properties() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["scope"] = json!("Namespaced");
        c["spec"]["names"]["shortNames"] = json!(["shorty"]);
        c["spec"]["names"]["categories"] = json!(["e2e"]);
    });
    let config = json!({"projection": {"scope": "Namespaced", "shortNames": ["shorty"], "categories": ["e2e"]}});
    assert_eq!(run(config, multi_versions()).unwrap(), expected);
}

#[test]
fn new_name_uses_new_group_and_new_plural() {
    let expected = with(multi_versions(), |c| {
        c["spec"]["group"] = json!("new.example.com");
        c["spec"]["names"]["plural"] = json!("feet");
        c["metadata"]["name"] = json!("feet.new.example.com");
    });
    let config = json!({"projection": {"group": "new.example.com", "plural": "feet"}});
    assert_eq!(run(config, multi_versions()).unwrap(), expected);
}

#[test]
fn empty_lists_clear_and_null_keeps() {
    let crd = with(single_version(), |c| {
        c["spec"]["names"]["shortNames"] = json!(["t"]);
        c["spec"]["names"]["categories"] = json!(["all"]);
    });
    let out = run(
        json!({"projection": {"shortNames": [], "categories": null}}),
        crd,
    )
    .unwrap();
    assert_eq!(out["spec"]["names"].get("shortNames"), None);
    assert_eq!(out["spec"]["names"]["categories"], json!(["all"]));
}

#[test]
fn config_errors_name_the_field() {
    let cases = [
        (
            json!({"resource": {"version": "v1", "versions": ["v1"]}}),
            "resource.version and resource.versions",
        ),
        (
            json!({"projection": {"version": "v1", "versions": {"v1": "v2"}}}),
            "projection.version and projection.versions",
        ),
        (
            json!({"projection": {"scope": "Global"}}),
            "projection.scope",
        ),
        (
            json!({"projection": {"kinds": "X"}}),
            "unknown field `kinds`",
        ),
        (json!({"resource": {"versions": "v1"}}), "invalid type"),
    ];
    for (config, expected) in cases {
        let err = CrdProjector::validate_config(&config).unwrap_err();
        assert!(err.contains(expected), "{config}: {err}");
        assert!(matches!(
            run(config, single_version()),
            Err(PluginError::InvalidConfig(_))
        ));
    }
    let err = run(json!({"projection": {"version": "v9"}}), multi_versions()).unwrap_err();
    assert!(
        matches!(err, PluginError::InvalidConfig(ref m) if m.contains("contains 5 versions")),
        "{err}"
    );
}

#[test]
fn malformed_crds_are_invalid_input() {
    for crd in [
        json!({}),
        json!({"spec": {}}),
        json!({"spec": {"versions": [{"served": true}]}}),
        json!({"spec": {"versions": []}}),
    ] {
        assert!(
            matches!(
                run(json!({}), crd.clone()),
                Err(PluginError::InvalidInput(_))
            ),
            "{crd}"
        );
    }
}

#[test]
fn kube_version_order() {
    let mut versions = vec![
        "v1",
        "v10",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "foo1",
        "foo10",
        "v2",
        "v1beta1",
    ];
    versions.sort_by(|a, b| compare_kube_versions(a, b));
    assert_eq!(
        versions,
        vec![
            "foo10",
            "foo1",
            "v11alpha2",
            "v12alpha1",
            "v1beta1",
            "v3beta1",
            "v10beta3",
            "v11beta2",
            "v1",
            "v2",
            "v10"
        ]
    );
}

#[test]
fn examples_hold() {
    assert_eq!(testing::check_projector_examples::<CrdProjector>(), Ok(1));
}
