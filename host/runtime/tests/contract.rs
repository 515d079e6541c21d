//! Contract 0.2 beside 0.1: reads through a ReadHost, checked against the
//! plugin's declarations and the per-call limits; the report and context
//! values; both versions in one runtime; a 0.1 component built before 0.2
//! existed; versions this host does not serve; and a failed 0.2 call's
//! capture replayed from its recorded reads.
mod common;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use syncweave_runtime::{
    CallContext, CallEnv, CallRecord, ContractVersion, Direction, EnvLimits, FailureKind,
    FixtureReads, Plugin, PluginErrorKind, ReadError, ReadFixture, ReadHost, RecordedReads,
    Resource, Runtime, RuntimeConfig, Severity, Side, World,
};

const OBJ: &str =
    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}"#;

fn ctx() -> CallContext {
    CallContext {
        cluster_name: "2x8fkdtr3b1z".into(),
        cluster_path: Some("root:org:team".into()),
        direction: Direction::KcpToService,
        owner: "configmaps".into(),
    }
}

fn runtime() -> Runtime {
    // A debug build on a loaded machine: what these tests check is never
    // the call's time, so the default 100 ms must not decide them.
    let mut config = RuntimeConfig {
        cache_dir: None,
        ..RuntimeConfig::default()
    };
    config.default_limits.timeout = std::time::Duration::from_secs(10);
    Runtime::new(config).unwrap()
}

fn load(rt: &Runtime, name: &str) -> Arc<Plugin> {
    rt.load(name, &common::wasm(name), None)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn namespaces() -> Resource {
    Resource::core("v1", "namespaces")
}

fn configmaps() -> Resource {
    Resource::core("v1", "configmaps")
}

/// The cluster the reader reads: namespace `ns` of team `a-team`, and
/// ConfigMaps in `db` (one labelled app=db) and `other`.
fn cluster() -> FixtureReads {
    FixtureReads::new(&[
        ReadFixture {
            side: Side::Kcp,
            resource: namespaces(),
            objects: vec![
                json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "ns", "labels": {"team": "a-team"}}})
                .to_string(),
            ],
        },
        ReadFixture {
            side: Side::Service,
            resource: configmaps(),
            objects: ["db/pg/db", "db/web/web", "other/pg2/db"]
                .iter()
                .map(|s| {
                    let p: Vec<&str> = s.split('/').collect();
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"namespace": p[0], "name": p[1], "labels": {"app": p[2]}}})
                    .to_string()
                })
                .collect(),
        },
    ])
    .unwrap()
}

/// A ReadHost that answers from `cluster()` and remembers what it was asked.
#[derive(Default)]
struct Watched {
    asked: Mutex<Vec<String>>,
}

impl ReadHost for Watched {
    fn get(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        self.asked
            .lock()
            .unwrap()
            .push(format!("get {side} {resource} {namespace:?} {name}"));
        cluster().get(side, resource, namespace, name)
    }

    fn list(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, ReadError> {
        self.asked.lock().unwrap().push(format!(
            "list {side} {resource} {namespace:?} {label_selector:?}"
        ));
        cluster().list(side, resource, namespace, label_selector)
    }
}

fn mode(m: &str) -> String {
    json!({ "mode": m }).to_string()
}

#[test]
fn reads_are_served_by_the_read_host_and_the_report_comes_back() {
    let rt = runtime();
    let reader = load(&rt, "test-reader");
    assert_eq!(reader.contract_version(), ContractVersion::V0_2);
    assert_eq!(reader.world(), World::Mutator);
    assert!(
        reader
            .imports()
            .iter()
            .any(|i| i == "syncweave:plugin/reads@0.2.0"),
        "{:?}",
        reader.imports()
    );

    let host = Arc::new(Watched::default());
    let values = vec![("test/zone".to_string(), r#""eu""#.to_string())];
    let env = CallEnv::with_reads(host.clone()).values(&values);
    let out = reader.mutate_with(&ctx(), &env, "{}", OBJ, None).unwrap();
    let obj: Value = serde_json::from_str(&out.object).unwrap();
    assert_eq!(obj["metadata"]["labels"]["syncweave.test/team"], "a-team");
    assert_eq!(obj["metadata"]["labels"]["syncweave.test/zone"], "eu");
    assert_eq!(
        obj["metadata"]["annotations"]["syncweave.test/databases"],
        "1"
    );
    assert_eq!(
        *host.asked.lock().unwrap(),
        [
            "get kcp namespaces (v1) None ns",
            "list service configmaps (v1) Some(\"db\") Some(\"app=db\")"
        ]
    );
    let report = &out.report;
    assert!(report.results.is_empty(), "{report:?}");
    assert_eq!(report.conditions.len(), 1);
    assert_eq!(
        (
            report.conditions[0].type_.as_str(),
            report.conditions[0].status.as_str(),
            report.conditions[0].reason.as_str()
        ),
        ("NamespaceFound", "True", "Found")
    );
    assert_eq!(
        report.set_context,
        [("test/team".to_string(), r#""a-team""#.to_string())]
    );

    // No databases in that namespace: a warning, and the call still succeeds.
    let out = reader
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(host.clone()),
            r#"{"namespace":"empty"}"#,
            OBJ,
            None,
        )
        .unwrap();
    assert_eq!(out.report.results.len(), 1);
    let warning = &out.report.results[0];
    assert_eq!(warning.severity, Severity::Warning);
    assert_eq!(warning.reason, "NoDatabases");
    assert_eq!(
        warning.message,
        "no ConfigMap labelled app=db in namespace empty"
    );

    // describe() carries the declarations and the version.
    let info = reader.describe().unwrap();
    assert_eq!(info.contract_version, ContractVersion::V0_2);
    assert_eq!(
        info.reads
            .iter()
            .map(|d| format!("{} {}: {}", d.side, d.resource, d.purpose))
            .collect::<Vec<_>>(),
        [
            "kcp namespaces (v1): the consumer's team label",
            "service configmaps (v1): database ConfigMaps",
            "kcp logicalclusters (core.kcp.io/v1alpha1): the workspace's path and tier"
        ]
    );
    assert_eq!(info.examples[0].reads.len(), 2);
    assert_eq!(
        info.examples[0].values,
        [("test/zone".to_string(), r#""eu""#.to_string())]
    );
}

#[test]
fn an_undeclared_read_is_refused_naming_the_declarations() {
    let rt = runtime();
    let reader = load(&rt, "test-reader");
    let host = Arc::new(Watched::default());
    let e = reader
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(host.clone()),
            &mode("undeclared"),
            OBJ,
            None,
        )
        .unwrap_err();
    assert_eq!(
        e.kind,
        FailureKind::PluginError(PluginErrorKind::Internal),
        "{e}"
    );
    assert_eq!(
        e.message,
        "read failed: not-allowed: the plugin may not get service secrets (v1) ns/token: \
         describe() declares reads of kcp namespaces (v1), service configmaps (v1), kcp \
         logicalclusters (core.kcp.io/v1alpha1); add \
         service secrets (v1) to plugin-info.reads to read it (the operator must allow it too)"
    );
    assert!(
        host.asked.lock().unwrap().is_empty(),
        "the ReadHost never sees it"
    );
}

#[test]
fn without_a_read_host_reads_are_unavailable() {
    let rt = runtime();
    let reader = load(&rt, "test-reader");
    // The older method passes no environment.
    let e = reader.mutate(&ctx(), "{}", OBJ, None).unwrap_err();
    assert_eq!(
        e.message,
        "read failed: unavailable: reads are not configured for this call: the host gave the \
         runtime no ReadHost (CallEnv::reads), so nothing can be read"
    );
    // A 0.2 plugin that does not read works through it unchanged.
    assert_eq!(
        reader.mutate(&ctx(), &mode("no-reads"), OBJ, None).unwrap(),
        OBJ
    );
}

#[test]
fn reads_over_the_limits_fail_with_the_limit_named() {
    let rt = runtime();
    let reader = load(&rt, "test-reader");
    let host = Arc::new(Watched::default());
    let e = reader
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(host.clone()),
            r#"{"mode":"many-reads","count":100}"#,
            OBJ,
            None,
        )
        .unwrap_err();
    assert_eq!(
        e.message,
        "read failed: not-allowed: this call has already made 64 reads, the limit per call \
         (EnvLimits::max_reads); read less, e.g. one list with a label selector instead of \
         many gets"
    );
    assert_eq!(host.asked.lock().unwrap().len(), 64);
    // Within a lower limit of the caller's.
    let few = EnvLimits {
        max_reads: 3,
        ..EnvLimits::default()
    };
    reader
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(host.clone()).limits(few),
            r#"{"mode":"many-reads","count":3}"#,
            OBJ,
            None,
        )
        .unwrap();
    let e = reader
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(host.clone()).limits(few),
            r#"{"mode":"many-reads","count":4}"#,
            OBJ,
            None,
        )
        .unwrap_err();
    assert!(e.message.contains("already made 3 reads"), "{e}");

    // Bytes: the namespace fits, the list on top of it does not.
    let ns_len = cluster()
        .get(Side::Kcp, &namespaces(), None, "ns")
        .unwrap()
        .unwrap()
        .len();
    let tight = EnvLimits {
        max_read_bytes: ns_len + 10,
        ..EnvLimits::default()
    };
    let e = reader
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(Arc::new(cluster())).limits(tight),
            "{}",
            OBJ,
            None,
        )
        .unwrap_err();
    assert!(
        e.message
            .starts_with("read failed: not-allowed: this read returns "),
        "{e}"
    );
    assert!(
        e.message.contains(&format!(
            "with the {ns_len} bytes this call has already read that is over the limit of {} \
             bytes per call (EnvLimits::max_read_bytes)",
            ns_len + 10
        )),
        "{e}"
    );
}

#[test]
fn reports_are_checked() {
    let rt = runtime();
    let reader = load(&rt, "test-reader");
    let env = CallEnv::with_reads(Arc::new(cluster()));
    let e = reader
        .mutate_with(&ctx(), &env, &mode("big-report"), OBJ, None)
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::BadOutput, "{e}");
    assert!(
        e.message.starts_with(
            "the report is 70007 bytes, over the limit of 65536 bytes; return shorter messages"
        ),
        "{e}"
    );
    let e = reader
        .mutate_with(&ctx(), &env, &mode("bad-status"), OBJ, None)
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::BadOutput, "{e}");
    assert_eq!(
        e.message,
        "report.conditions[0].status is \"true\"; it must be \"True\", \"False\" or \"Unknown\" \
         (capitalised, as in Kubernetes conditions)"
    );
}

/// Each context key has one owner: a step that sets a key an earlier step
/// of the chain set fails, naming the key.
#[test]
fn a_context_key_set_again_later_in_a_chain_is_refused() {
    let rt = runtime();
    let reader = load(&rt, "test-reader");
    let env = CallEnv::with_reads(Arc::new(cluster()));
    let first = reader.mutate_with(&ctx(), &env, "{}", OBJ, None).unwrap();
    // The chain hands the values on; the same plugin as a later step sets
    // test/team again.
    let mut values: Vec<(String, String)> = Vec::new();
    values.extend(first.report.set_context);
    let e = reader
        .mutate_with(
            &ctx(),
            &env.clone().values(&values),
            "{}",
            &first.object,
            None,
        )
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::BadOutput, "{e}");
    assert_eq!(
        e.message,
        "report.set-context[0].key \"test/team\" was already set by an earlier step of this \
         chain; each context key has one owner: read it from the context's values instead, or \
         set a key of your own"
    );
}

#[test]
fn v0_1_and_v0_2_components_side_by_side() {
    let rt = runtime();
    let echo = load(&rt, "test-echo");
    let reader = load(&rt, "test-reader");
    let namer = load(&rt, "test-namer-v2");
    let namer_v1 = load(&rt, "test-namer");
    assert_eq!(echo.contract_version(), ContractVersion::V0_1);
    assert_eq!(namer_v1.contract_version(), ContractVersion::V0_1);
    assert_eq!(namer.contract_version(), ContractVersion::V0_2);
    assert_eq!(
        echo.describe().unwrap().contract_version,
        ContractVersion::V0_1
    );
    // A 0.2 guest that never reads does not import `reads`: told apart by
    // its exports.
    assert!(
        namer.imports().iter().all(|i| !i.contains("/reads@")),
        "{:?}",
        namer.imports()
    );

    let values = vec![("test/suffix".to_string(), r#""x""#.to_string())];
    let env = CallEnv::with_reads(Arc::new(cluster())).values(&values);
    // 0.1: the values are not passed, the report is empty.
    let out = echo
        .mutate_with(&ctx(), &env, r#"{"label":"l"}"#, OBJ, None)
        .unwrap();
    assert!(out.report.is_empty());
    assert!(out.object.contains(r#""syncweave.test/echo":"l""#));
    let n = namer_v1.name_object_with(&ctx(), &env, "{}", OBJ).unwrap();
    assert_eq!(n.name.name, "2x8fkdtr3b1z-a");
    assert!(n.report.is_empty());
    // 0.2 in the same runtime: values in, report out.
    let n = namer.name_object_with(&ctx(), &env, "{}", OBJ).unwrap();
    assert_eq!(n.name.name, "2x8fkdtr3b1z-a-x");
    assert_eq!(n.name.namespace.as_deref(), Some("ns"));
    assert_eq!(n.report.results[0].severity, Severity::Normal);
    assert_eq!(n.report.results[0].message, "named 2x8fkdtr3b1z-a-x");
    // The older method still works for a 0.2 namer (no values, no report).
    assert_eq!(
        namer.name_object(&ctx(), "{}", OBJ).unwrap().name,
        "2x8fkdtr3b1z-a"
    );
    let out = reader.mutate_with(&ctx(), &env, "{}", OBJ, None).unwrap();
    assert_eq!(out.report.conditions.len(), 1);
    // Interleaved calls keep working.
    assert_eq!(echo.mutate(&ctx(), "{}", OBJ, None).unwrap(), OBJ);
}

#[test]
fn the_self_test_serves_fixture_reads_and_values() {
    let rt = runtime();
    for name in ["test-reader", "test-namer-v2"] {
        let p = load(&rt, name);
        let outcomes = p.run_examples().unwrap();
        assert!(!outcomes.is_empty());
        for o in outcomes {
            assert!(o.verdict.passed(), "{name}: {}: {:?}", o.name, o.verdict);
        }
    }
}

/// A mutator built with the Rust SDK before contract 0.2 existed, committed
/// as bytes (tests/fixtures/README.md): it keeps loading and working
/// whatever the SDK becomes.
#[test]
fn a_committed_v0_1_component_keeps_working() {
    let wasm = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v0_1-mutator.wasm"),
    )
    .unwrap();
    let rt = runtime();
    let p = rt.load("v0_1-mutator", &wasm, None).unwrap();
    assert_eq!(p.contract_version(), ContractVersion::V0_1);
    assert_eq!(p.world(), World::Mutator);
    assert!(
        p.exports()
            .iter()
            .any(|e| e == "syncweave:plugin/mutation@0.1.0")
    );
    let config = json!({"label": {"key": "team", "value": "platform"},
                        "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}});
    let input = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "cfg", "namespace": "default",
                                    "annotations": {"example.com/owner": "alice"}}});
    let out = p
        .mutate(&ctx(), &config.to_string(), &input.to_string(), None)
        .unwrap();
    let out: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        out,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cfg", "namespace": "default",
                            "labels": {"team": "platform"},
                            "annotations": {"example.com/owner": "alice",
                                            "example.com/previous-owner": "alice"}}})
    );
    let env = CallEnv::with_reads(Arc::new(cluster()));
    let m = p
        .mutate_with(&ctx(), &env, &config.to_string(), &input.to_string(), None)
        .unwrap();
    assert!(m.report.is_empty());
    for o in p.run_examples().unwrap() {
        assert!(o.verdict.passed(), "{}: {:?}", o.name, o.verdict);
    }
    let e = p.validate_config(r#"{"label":{"key":""}}"#).unwrap_err();
    assert_eq!(
        e.kind,
        FailureKind::PluginError(PluginErrorKind::InvalidConfig)
    );
}

/// A component of empty instances: imports `imports`, exports `exports`.
/// Enough for the runtime to read its shape and refuse it.
fn hollow_component(imports: &[&str], exports: &[&str]) -> Vec<u8> {
    use wasm_encoder::{
        Component, ComponentExportKind, ComponentExportSection, ComponentImportSection,
        ComponentInstanceSection, ComponentTypeRef, ComponentTypeSection, InstanceType,
    };
    let mut c = Component::new();
    if !imports.is_empty() {
        let mut types = ComponentTypeSection::new();
        types.instance(&InstanceType::new());
        c.section(&types);
        let mut section = ComponentImportSection::new();
        for name in imports {
            section.import(*name, ComponentTypeRef::Instance(0));
        }
        c.section(&section);
    }
    let mut instances = ComponentInstanceSection::new();
    for _ in exports {
        instances.export_items(Vec::<(&str, ComponentExportKind, u32)>::new());
    }
    c.section(&instances);
    let mut section = ComponentExportSection::new();
    for (i, name) in exports.iter().enumerate() {
        section.export(
            *name,
            ComponentExportKind::Instance,
            (imports.len() + i) as u32,
            None,
        );
    }
    c.section(&section);
    c.finish()
}

#[test]
fn unserved_versions_and_unknown_imports_are_refused_at_load() {
    let rt = runtime();
    let future = hollow_component(
        &[],
        &[
            "syncweave:plugin/meta@0.3.0",
            "syncweave:plugin/mutation@0.3.0",
        ],
    );
    let e = rt.load("future", &future, None).unwrap_err();
    assert_eq!(e.kind, FailureKind::WrongWorld, "{e}");
    assert_eq!(
        e.message,
        "this component was built against syncweave:plugin@0.3.0 (it exports \
         syncweave:plugin/meta@0.3.0, syncweave:plugin/mutation@0.3.0), but this host serves \
         syncweave:plugin@0.1.x and syncweave:plugin@0.2.x; rebuild it against one of those \
         (wit/plugin.wit or wit/v0.2/plugin.wit), or run it on a host that serves \
         syncweave:plugin@0.3.0"
    );

    let neither = hollow_component(&[], &["wasi:cli/run@0.2.0"]);
    let e = rt.load("neither", &neither, None).unwrap_err();
    assert_eq!(e.kind, FailureKind::WrongWorld, "{e}");
    assert!(
        e.message.starts_with(
            "this component exports wasi:cli/run@0.2.0, expected one of the worlds of \
             syncweave:plugin@0.1.x and syncweave:plugin@0.2.x: mutator (meta + mutation)"
        ),
        "{e}"
    );

    // A 0.1 component may not import 0.2's reads, nor anything of its own.
    let greedy = hollow_component(
        &["syncweave:plugin/reads@0.2.0", "acme:secrets/vault@1.0.0"],
        &[
            "syncweave:plugin/meta@0.1.0",
            "syncweave:plugin/mutation@0.1.0",
        ],
    );
    let e = rt.load("greedy", &greedy, None).unwrap_err();
    assert_eq!(e.kind, FailureKind::Load, "{e}");
    assert_eq!(
        e.message,
        "this component imports syncweave:plugin/reads@0.2.0, acme:secrets/vault@1.0.0, which \
         this host does not provide; a syncweave:plugin@0.1.x plugin may import only \
         syncweave:plugin/types, syncweave:plugin/host-log of its own version and WASI 0.2 \
         (granted nothing). This host serves syncweave:plugin@0.1.x and syncweave:plugin@0.2.x"
    );
}

/// A failed 0.2 call reaches the failure hook with its reads and values;
/// replayed on another runtime from that record alone (no cluster), it
/// fails the same way, and the recorded answers give the same output.
#[test]
fn a_failed_call_carries_its_reads_and_replays_from_them() {
    let rt = runtime();
    let seen: Arc<Mutex<Vec<(String, String, CallRecord)>>> = Arc::default();
    let sink = seen.clone();
    assert!(rt.on_call_failure(Box::new(move |c| {
        let object = match c.args {
            syncweave_runtime::CallArgs::Mutate { object, .. } => object.to_string(),
            _ => String::new(),
        };
        sink.lock().unwrap().push((
            object,
            c.failure.headline().to_string(),
            c.env.expect("the runtime records every call").clone(),
        ));
    })));
    let reader = load(&rt, "test-reader");
    let cluster = Arc::new(cluster());
    let values = vec![
        ("test/zone".to_string(), r#""eu""#.to_string()),
        ("test/team".to_string(), r#""taken""#.to_string()),
    ];
    let env = CallEnv::with_reads(cluster.clone()).values(&values);
    let e = reader
        .mutate_with(&ctx(), &env, "{}", OBJ, None)
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::BadOutput);

    let (object, headline, record) = seen.lock().unwrap().pop().unwrap();
    assert_eq!(object, OBJ);
    assert_eq!(headline, e.headline());
    assert_eq!(record.contract, ContractVersion::V0_2);
    assert_eq!(record.values, values);
    assert_eq!(record.limits, EnvLimits::default());
    assert_eq!(
        record
            .reads
            .iter()
            .map(|r| r.request.to_string())
            .collect::<Vec<_>>(),
        [
            "get kcp namespaces (v1) ns",
            "list service configmaps (v1) in db matching \"app=db\""
        ]
    );
    assert!(record.reads.iter().all(|r| r.from_host && r.answer.is_ok()));

    // The capture as the host would store it, and back.
    let stored = serde_json::to_string(&record).unwrap();
    let record: CallRecord = serde_json::from_str(&stored).unwrap();

    let replay_rt = runtime();
    let replayed = load(&replay_rt, "test-reader");
    let again = replayed
        .mutate_with(&ctx(), &record.replay_env(), "{}", OBJ, None)
        .unwrap_err();
    assert_eq!((again.kind, again.headline()), (e.kind, e.headline()));

    // The recorded answers are the cluster's: without the conflicting
    // value, the replayed reads give the output the cluster gives.
    let zone_only = &values[..1];
    let live = reader
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(cluster.clone()).values(zone_only),
            "{}",
            OBJ,
            None,
        )
        .unwrap();
    let recorded = Arc::new(RecordedReads::from_record(&record));
    let from_recording = replayed
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(recorded.clone()).values(zone_only),
            "{}",
            OBJ,
            None,
        )
        .unwrap();
    assert_eq!(from_recording, live);
    assert!(recorded.unserved().is_empty());

    // A read the recording lacks is refused, saying so.
    let e = replayed
        .mutate_with(
            &ctx(),
            &CallEnv::with_reads(recorded),
            r#"{"namespace":"other"}"#,
            OBJ,
            None,
        )
        .unwrap_err();
    assert_eq!(
        e.message,
        "read failed: unavailable: the replay asked to list service configmaps (v1) in other \
         matching \"app=db\", which the recorded call did not read; the plugin's reads differ \
         from the recording (another plugin version or another input?)"
    );
}

/// A renderer written with the Rust SDK's `v2` API is a 0.2 component: it
/// reads, sees context values and reports through `render_with`, and its
/// worked example passes the self-test.
#[test]
fn an_sdk_v2_renderer_reads_and_reports() {
    let rt = runtime();
    let p = load(&rt, "test-sdk-renderer-v2");
    assert_eq!(p.contract_version(), ContractVersion::V0_2);
    assert_eq!(p.world(), World::Renderer);
    let values = vec![("test/prefix".to_string(), r#""copy-""#.to_string())];
    let env = CallEnv::with_reads(Arc::new(cluster())).values(&values);
    let out = p
        .render_with(
            &ctx(),
            &env,
            r#"{"namespace":"db","selector":"app in (db,web)"}"#,
            "",
            "{}",
        )
        .unwrap();
    let names: Vec<String> = out
        .documents
        .iter()
        .map(|d| {
            let v: Value = serde_json::from_str(d).unwrap();
            v["metadata"]["name"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(names, ["copy-pg", "copy-web"]);
    assert_eq!(out.report.results[0].reason, "Rendered");
    assert_eq!(
        out.report.set_context,
        [("test/rendered".to_string(), "2".to_string())]
    );
    for o in p.run_examples().unwrap() {
        assert!(o.verdict.passed(), "{}: {:?}", o.name, o.verdict);
    }
    let e = p
        .render_with(
            &ctx(),
            &env,
            r#"{"namespace":"db","selector":"app in"}"#,
            "",
            "{}",
        )
        .unwrap_err();
    assert_eq!(
        e.kind,
        FailureKind::PluginError(PluginErrorKind::Internal),
        "{e}"
    );
    assert!(
        e.message
            .starts_with("invalid read: label selector requirement \"app in\""),
        "{e}"
    );
}

/// Rebuilds tests/fixtures/v0_1-mutator.wasm from examples/rust-mutator of a
/// syncweave checkout from before contract 0.2 (the SDK as it was), named
/// by SYNCWEAVE_V0_1_CHECKOUT. See tests/fixtures/README.md.
#[test]
#[ignore = "regenerates a committed fixture; needs SYNCWEAVE_V0_1_CHECKOUT"]
fn regenerate_the_v0_1_fixture() {
    use syncweave_runtime::build::{BuildOptions, build_crate};
    let checkout = std::path::PathBuf::from(
        std::env::var_os("SYNCWEAVE_V0_1_CHECKOUT")
            .expect("SYNCWEAVE_V0_1_CHECKOUT names a checkout from before contract 0.2"),
    );
    let out = common::tempdir("v0_1-fixture");
    let mut opts = BuildOptions::new(out.clone());
    opts.packages = vec!["rust-mutator".to_string()];
    opts.target_dir = Some(common::repo().join("target/wasm"));
    let built = build_crate(&checkout.join("plugins"), &opts).unwrap();
    let dest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::copy(&built[0].path, dest.join("v0_1-mutator.wasm")).unwrap();
}
