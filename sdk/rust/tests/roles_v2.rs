//! Every 0.2 role macro expands and type-checks against its generated world, and the
//! 0.2 harness serves reads and context values and checks reports like the host.
use syncweave_plugin::testing::v2::{self as t, Env};
use syncweave_plugin::v2::{
    self, Context, Fixture, Mutator, Namer, PluginInfo, Projector, ReadDeclaration, ReadError,
    Renderer, Report, Resource, Severity, Side, Status,
};
use syncweave_plugin::{Object, ObjectName, PluginError, Value, json};

fn namespaces() -> Resource {
    Resource::core("v1", "namespaces")
}

fn configmaps() -> Resource {
    Resource::core("v1", "configmaps")
}

mod mutator {
    use super::*;

    /// Labels the object with its namespace's team, counts database ConfigMaps, and
    /// reports; `config.mode` picks a misbehaviour.
    pub struct Team;

    impl Mutator for Team {
        fn info() -> PluginInfo {
            PluginInfo::new("team", "0.2.0", "labels with the namespace's team")
                .reads(ReadDeclaration::new(Side::Kcp, namespaces(), "the team label"))
                .reads(ReadDeclaration::new(Side::Service, configmaps(), "databases"))
                .example(
                    Fixture::new(
                        "labelled",
                        json!({}),
                        json!({"metadata": {"name": "a", "namespace": "ns"}}),
                    )
                    .objects(
                        Side::Kcp,
                        namespaces(),
                        [json!({"metadata": {"name": "ns", "labels": {"team": "t1"}}})],
                    )
                    .value("zone", "eu")
                    .expect(json!({"metadata": {"name": "a", "namespace": "ns",
                                                "labels": {"team": "t1", "zone": "eu"}}})),
                )
        }

        fn mutate(
            ctx: &Context,
            config: &Value,
            object: &mut Object<'_>,
            _: Option<&Object<'_>>,
            report: &mut Report,
        ) -> Result<(), PluginError> {
            match config["mode"].as_str() {
                Some("secrets") => {
                    v2::reads::get(Side::Service, &Resource::core("v1", "secrets"), Some("x"), "y")?;
                }
                Some("selector") => {
                    v2::reads::list(Side::Service, &configmaps(), None, Some("app in"))?;
                }
                Some("empty-reason") => {
                    report.warning("", "no reason");
                }
                Some("set-zone") => {
                    report.set_context("zone", "us");
                }
                _ => {}
            }
            let ns = object.get_string("metadata.namespace");
            let team = v2::reads::get(Side::Kcp, &namespaces(), None, &ns)?
                .map(|n| n.get_string("metadata.labels.team"));
            let dbs = v2::reads::list(Side::Service, &configmaps(), Some("db"), Some("app=db"))?;
            let set = |o: &mut Object<'_>, p: &str, v: Value| {
                o.set(p, v).map_err(|e| PluginError::Internal(e.to_string()))
            };
            match team {
                Some(team) => {
                    set(object, "metadata.labels.team", team.clone().into())?;
                    report.condition("TeamKnown", true, "Found", format!("team {team}"));
                    report.set_context("team", team);
                }
                None => {
                    report.warning("NoNamespace", format!("namespace {ns} not found"));
                    report.condition("TeamKnown", Status::False, "NotFound", "");
                }
            }
            if !dbs.is_empty() {
                report.normal("Databases", format!("{} database(s)", dbs.len()));
            }
            if let Some(zone) = ctx.value("zone") {
                set(object, "metadata.labels.zone", zone)?;
            }
            Ok(())
        }
    }
    syncweave_plugin::v2::mutator!(Team);
}

mod namer {
    use super::*;
    pub struct Suffixed;
    impl Namer for Suffixed {
        fn info() -> PluginInfo {
            syncweave_plugin::plugin_info!("names with a context suffix").into()
        }
        fn name(
            ctx: &Context,
            _: &Value,
            object: &Value,
            report: &mut Report,
        ) -> Result<ObjectName, PluginError> {
            let suffix: Option<String> = ctx.value_as("suffix")?;
            let name = format!(
                "{}-{}",
                object["metadata"]["name"].as_str().unwrap_or("x"),
                suffix.unwrap_or_default()
            );
            report.normal("Named", name.clone());
            Ok(ObjectName::cluster_scoped(name))
        }
    }
    syncweave_plugin::v2::namer!(Suffixed);
}

mod projector {
    use super::*;
    pub struct Rename;
    impl Projector for Rename {
        fn info() -> PluginInfo {
            PluginInfo::new("rename", "0", "renames the group")
        }
        fn project(config: &Value, mut crd: Value) -> Result<Value, PluginError> {
            crd["spec"]["group"] = config["group"].clone();
            Ok(crd)
        }
    }
    syncweave_plugin::v2::projector!(Rename);
}

mod renderer {
    use super::*;
    pub struct Listed;
    impl Renderer for Listed {
        fn info() -> PluginInfo {
            PluginInfo::new("listed", "0", "one document per ConfigMap")
                .reads(ReadDeclaration::new(Side::Service, configmaps(), "the list"))
        }
        fn render(
            _: &Context,
            _: &Value,
            template: &str,
            _: &Value,
            report: &mut Report,
        ) -> Result<Vec<Value>, PluginError> {
            let cms = v2::reads::list(Side::Service, &configmaps(), Some("db"), Some(template))?;
            report.normal("Rendered", format!("{} documents", cms.len()));
            Ok(cms
                .iter()
                .map(|c| json!({"kind": "Copy", "metadata": {"name": c.get_string("metadata.name")}}))
                .collect())
        }
    }
    syncweave_plugin::v2::renderer!(Listed);
}

fn cluster() -> Env {
    Env::new()
        .objects(
            Side::Kcp,
            namespaces(),
            [json!({"metadata": {"name": "ns", "labels": {"team": "t1"}}})],
        )
        .objects(
            Side::Service,
            configmaps(),
            [
                json!({"metadata": {"name": "pg", "namespace": "db", "labels": {"app": "db"}}}),
                json!({"metadata": {"name": "web", "namespace": "db", "labels": {"app": "web"}}}),
            ],
        )
}

const OBJ: fn() -> Value = || json!({"metadata": {"name": "a", "namespace": "ns"}});

#[test]
fn reads_values_and_report_in_a_native_test() {
    let env = cluster().value("zone", "eu");
    let out = t::mutate::<mutator::Team>(&env, &json!({}), &OBJ(), None).unwrap();
    assert_eq!(out.output["metadata"]["labels"], json!({"team": "t1", "zone": "eu"}));
    assert_eq!(
        out.reads,
        [
            "get kcp namespaces (v1) ns",
            "list service configmaps (v1) in db matching \"app=db\""
        ]
    );
    let r = &out.report;
    assert_eq!(r.conditions()[0].type_, "TeamKnown");
    assert_eq!(r.conditions()[0].status, Status::True);
    assert_eq!(r.results()[0].severity, Severity::Normal);
    assert_eq!(r.results()[0].message, "1 database(s)");
    assert_eq!(r.context(), [("team".to_string(), json!("t1"))]);

    // No such namespace: a warning and a False condition.
    let out = t::mutate::<mutator::Team>(
        &cluster(),
        &json!({}),
        &json!({"metadata": {"name": "a", "namespace": "gone"}}),
        None,
    )
    .unwrap();
    assert_eq!(out.report.results()[0].severity, Severity::Warning);
    assert_eq!(out.report.results()[0].reason, "NoNamespace");
    assert_eq!(out.report.conditions()[0].status, Status::False);

    assert_eq!(t::check_mutator_examples::<mutator::Team>(), Ok(1));
}

#[test]
fn the_harness_refuses_what_the_host_refuses() {
    let e = t::mutate::<mutator::Team>(&cluster(), &json!({"mode": "secrets"}), &OBJ(), None)
        .unwrap_err();
    assert_eq!(
        e,
        PluginError::InvalidConfig(
            "read not allowed: the plugin may not get service secrets (v1) x/y: describe() \
             declares reads of kcp namespaces (v1), service configmaps (v1); add service \
             secrets (v1) to plugin-info.reads to read it (the operator must allow it too)"
                .into()
        )
    );
    let e = t::mutate::<mutator::Team>(&cluster(), &json!({"mode": "selector"}), &OBJ(), None)
        .unwrap_err();
    assert!(
        matches!(&e, PluginError::Internal(m) if m.starts_with("invalid read: label selector requirement \"app in\"")),
        "{e}"
    );
    let e = t::mutate::<mutator::Team>(&cluster(), &json!({"mode": "empty-reason"}), &OBJ(), None)
        .unwrap_err();
    assert!(
        matches!(&e, PluginError::Internal(m) if m.starts_with("bad output: the host would refuse this report: report.results[0].reason is empty")),
        "{e}"
    );
    // A later step may not set what an earlier one set.
    let e = t::mutate::<mutator::Team>(
        &cluster().value("team", "t0"),
        &json!({}),
        &OBJ(),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(&e, PluginError::Internal(m) if m.contains("report.set-context[0].key \"team\" was already set by an earlier step")),
        "{e}"
    );
    let out = t::mutate::<mutator::Team>(&cluster(), &json!({"mode": "set-zone"}), &OBJ(), None)
        .unwrap();
    assert_eq!(out.report.context().len(), 2);
    let e = t::mutate::<mutator::Team>(
        &cluster().value("zone", "eu"),
        &json!({"mode": "set-zone"}),
        &OBJ(),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(&e, PluginError::Internal(m) if m.contains("report.set-context[0].key \"zone\" was already set")),
        "{e}"
    );
}

#[test]
fn reads_outside_the_harness_are_unavailable() {
    let e = v2::reads::get(Side::Kcp, &namespaces(), None, "ns").unwrap_err();
    assert!(
        matches!(&e, ReadError::Unavailable(m) if m.contains("syncweave_plugin::testing::v2")),
        "{e}"
    );
}

#[test]
fn each_v2_role_round_trips() {
    let out = t::name::<namer::Suffixed>(
        &Env::new().value("suffix", "x"),
        &json!(null),
        &json!({"metadata": {"name": "a"}}),
    )
    .unwrap();
    assert_eq!(out.output, ObjectName::cluster_scoped("a-x"));
    assert_eq!(out.report.results()[0].reason, "Named");
    assert!(out.reads.is_empty());
    let e = t::name::<namer::Suffixed>(&Env::new().value("suffix", 3), &json!(null), &json!({}))
        .unwrap_err();
    assert!(matches!(e, PluginError::InvalidInput(ref m) if m.starts_with("context value \"suffix\"")), "{e}");

    assert_eq!(
        t::project::<projector::Rename>(&json!({"group": "g"}), &json!({"spec": {}})).unwrap(),
        json!({"spec": {"group": "g"}})
    );

    let out = t::render::<renderer::Listed>(&cluster(), &json!(null), "app", &json!({})).unwrap();
    assert_eq!(
        out.output,
        [
            json!({"kind": "Copy", "metadata": {"name": "pg"}}),
            json!({"kind": "Copy", "metadata": {"name": "web"}})
        ]
    );
    assert_eq!(out.report.results()[0].message, "2 documents");
}

#[test]
fn describe_serialises_reads_fixtures_and_values() {
    let raw = syncweave_plugin::__private::v2::RawInfo::from(mutator::Team::info());
    assert_eq!(raw.reads.len(), 2);
    assert_eq!(raw.reads[0].2, "the team label");
    let ex = &raw.examples[0];
    assert_eq!(ex.values, [("zone".to_string(), "\"eu\"".to_string())]);
    assert_eq!(ex.reads[0].0, Side::Kcp);
    assert_eq!(
        ex.reads[0].2,
        [r#"{"metadata":{"labels":{"team":"t1"},"name":"ns"}}"#]
    );
}

#[test]
fn the_v2_contract_is_embedded() {
    assert!(v2::WIT.contains("package syncweave:plugin@0.2.0;"));
    assert!(syncweave_plugin::WIT.contains("package syncweave:plugin@0.1.0;"));
}
