//! The Go build path end to end: the Go SDK's fixture plugins in tests/go/
//! (every world of contracts 0.1 and 0.2) are built with `go::build_go` and
//! run in wasmtime 48 through host bindings generated from the WIT files, so
//! every function's arguments and results cross the canonical ABI as the
//! runtime lifts and lowers them. This is what checks the SDK's layouts for
//! 0.2 against wasmtime itself, independently of the runtime's own 0.2
//! support; the instances are reused for many calls, which also exercises
//! the SDK's garbage-collector switch between calls and around reads.
//!
//! Needs Go 1.24 or newer on PATH; without it each test says so on stderr
//! and passes without running (a machine without Go cannot build Go
//! plugins, which `go::find_go`'s own error covers).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use syncweave_wasm_build::go;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod v01 {
    pub mod mutator {
        wasmtime::component::bindgen!({ path: "../../wit", world: "mutator", additional_derives: [PartialEq] });
    }
    pub mod namer {
        wasmtime::component::bindgen!({ path: "../../wit", world: "namer", additional_derives: [PartialEq], with: {
            "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
            "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
        }});
    }
    pub mod projector {
        wasmtime::component::bindgen!({ path: "../../wit", world: "projector", additional_derives: [PartialEq], with: {
            "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
            "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
        }});
    }
    pub mod renderer {
        wasmtime::component::bindgen!({ path: "../../wit", world: "renderer", additional_derives: [PartialEq], with: {
            "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
            "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
        }});
    }
    pub use mutator::syncweave::plugin::{host_log, types};
}

mod v02 {
    pub mod mutator {
        wasmtime::component::bindgen!({ path: "../../wit/v0.2", world: "mutator", additional_derives: [PartialEq] });
    }
    pub mod namer {
        wasmtime::component::bindgen!({ path: "../../wit/v0.2", world: "namer", additional_derives: [PartialEq], with: {
            "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
            "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
            "syncweave:plugin/reads": super::mutator::syncweave::plugin::reads,
        }});
    }
    pub mod projector {
        wasmtime::component::bindgen!({ path: "../../wit/v0.2", world: "projector", additional_derives: [PartialEq], with: {
            "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
            "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
        }});
    }
    pub mod renderer {
        wasmtime::component::bindgen!({ path: "../../wit/v0.2", world: "renderer", additional_derives: [PartialEq], with: {
            "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
            "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
            "syncweave:plugin/reads": super::mutator::syncweave::plugin::reads,
        }});
    }
    pub use mutator::syncweave::plugin::{host_log, reads, types};
}

/// The host side: WASI with nothing granted, host-log recorded, reads
/// answered from a few fixed objects and recorded.
struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    logs: Vec<String>,
    reads: Vec<String>,
}

impl State {
    fn new() -> State {
        State {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            logs: Vec::new(),
            reads: Vec::new(),
        }
    }
}

/// `Info` for `Level::Info`: bindgen's Debug names the enum too.
fn variant(value: impl std::fmt::Debug) -> String {
    let text = format!("{value:?}");
    text.rsplit("::").next().unwrap_or(&text).to_string()
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl v01::host_log::Host for State {
    fn log(&mut self, level: v01::host_log::Level, message: String) {
        self.logs.push(format!("{} {message}", variant(level)));
    }
}
impl v01::types::Host for State {}

impl v02::host_log::Host for State {
    fn log(&mut self, level: v02::host_log::Level, message: String) {
        self.logs.push(format!("{} {message}", variant(level)));
    }
}
impl v02::types::Host for State {}

impl v02::reads::Host for State {
    fn get(
        &mut self,
        side: v02::types::Side,
        resource: v02::types::Resource,
        namespace: Option<String>,
        name: String,
    ) -> Result<Option<String>, v02::reads::ReadError> {
        self.reads.push(format!(
            "get {} {}/{}/{} {namespace:?} {name}",
            variant(side),
            resource.group,
            resource.version,
            resource.resource
        ));
        match (resource.resource.as_str(), name.as_str()) {
            ("namespaces", "shop") => Ok(Some(
                r#"{"metadata":{"name":"shop","labels":{"team":"a","tenant":"acme"}}}"#.into(),
            )),
            ("namespaces", "down") => Err(v02::reads::ReadError::Unavailable(
                "cache not synced".into(),
            )),
            ("configmaps", "settings") => Ok(Some(
                r#"{"metadata":{"name":"settings","namespace":"defaults"},"data":{"size":"L"}}"#
                    .into(),
            )),
            _ => Ok(None),
        }
    }

    fn list(
        &mut self,
        side: v02::types::Side,
        resource: v02::types::Resource,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<Vec<String>, v02::reads::ReadError> {
        self.reads.push(format!(
            "list {} {}/{}/{} {namespace:?} {label_selector:?}",
            variant(side),
            resource.group,
            resource.version,
            resource.resource
        ));
        if resource.resource == "configmaps" {
            // Many results of some size: the host allocates each through the
            // guest's cabi_realloc.
            return Ok((0..100)
                .map(|i| {
                    format!(
                        r#"{{"metadata":{{"name":"cm{i}"}},"data":{{"x":"{}"}}}}"#,
                        "y".repeat(1000)
                    )
                })
                .collect());
        }
        Ok(vec![
            r#"{"metadata":{"name":"api","namespace":"db"}}"#.into(),
            r#"{"metadata":{"name":"web","namespace":"db"}}"#.into(),
        ])
    }
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.wasm_component_model(true);
        // Compiling 3 MB components is most of this test's time.
        config.cranelift_opt_level(wasmtime::OptLevel::None);
        Engine::new(&config).unwrap()
    })
}

/// False, with the reason on stderr, when no usable Go is installed.
fn have_go(test: &str) -> bool {
    match go::find_go() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("{test}: SKIPPED, no usable Go toolchain: {e}");
            false
        }
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/go")
        .join(name)
}

/// Builds tests/go/<name> with the real pipeline and compiles it.
fn component(name: &str) -> Component {
    let project = go::go_project(&fixture(name)).unwrap();
    assert_eq!(project.name, format!("go-{name}"));
    let out = std::env::temp_dir().join(format!("sw-go-test-{}-{name}", std::process::id()));
    let built = go::build_go(&project, &out, false)
        .unwrap_or_else(|e| panic!("building tests/go/{name}: {e}"));
    let bytes = std::fs::read(&built.path).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    Component::from_binary(engine(), &bytes).unwrap()
}

fn linker(v02: bool) -> Linker<State> {
    let mut linker = Linker::new(engine());
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    if v02 {
        v02::host_log::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s).unwrap();
        v02::types::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s).unwrap();
        v02::reads::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s).unwrap();
    } else {
        v01::host_log::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s).unwrap();
        v01::types::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s).unwrap();
    }
    linker
}

fn store() -> Store<State> {
    Store::new(engine(), State::new())
}

fn ctx01() -> v01::types::Context {
    v01::types::Context {
        cluster_name: "2x8fkdtr3b1z".into(),
        cluster_path: Some("root:org:team".into()),
        direction: v01::types::Direction::ServiceToKcp,
        owner: "widgets".into(),
    }
}

fn ctx02(values: &[(&str, &str)]) -> v02::types::Context {
    v02::types::Context {
        cluster_name: "2x8fkdtr3b1z".into(),
        cluster_path: Some("root:org:team".into()),
        direction: v02::types::Direction::KcpToService,
        owner: "widgets".into(),
        values: values
            .iter()
            .map(|(k, v)| v02::types::ContextEntry {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect(),
    }
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn go_components_of_contract_01_run_in_wasmtime() {
    if !have_go("go_components_of_contract_01_run_in_wasmtime") {
        return;
    }
    use v01::types::PluginError;

    // mutator: describe, validate-config, mutate (options set and unset),
    // typed errors, panics, and many calls on one instance.
    let c = component("mutator01");
    let mut s = store();
    let m = v01::mutator::Mutator::instantiate(&mut s, &c, &linker(false)).unwrap();
    let info = m.syncweave_plugin_meta().call_describe(&mut s).unwrap();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("go-mutator01", "0.1.0")
    );
    assert_eq!(info.config_schema.as_deref(), Some(r#"{"type":"object"}"#));
    assert_eq!(info.examples.len(), 1);
    assert_eq!(info.examples[0].config, r#"{"labels":{"a":"b"}}"#);
    assert!(info.examples[0].expected.is_some());
    let meta = m.syncweave_plugin_meta();
    assert_eq!(meta.call_validate_config(&mut s, "{}").unwrap(), Ok(()));
    let err = meta
        .call_validate_config(&mut s, r#"{"labels":{"a":1}}"#)
        .unwrap()
        .unwrap_err();
    assert_eq!(err, "config.labels: expected string, got number");

    let mu = m.syncweave_plugin_mutation();
    let out = mu
        .call_mutate(
            &mut s,
            &ctx01(),
            r#"{"labels":{"team":"platform"}}"#,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"<v>"}}"#,
            Some(r#"{"metadata":{"name":"theirs"}}"#),
        )
        .unwrap()
        .unwrap();
    let out = json(&out);
    assert_eq!(
        out["metadata"]["labels"],
        json(
            r#"{"team":"platform","cluster":"2x8fkdtr3b1z","path":"root:org:team",
                "direction":"service-to-kcp","owner":"widgets","other":"theirs"}"#
        )
    );
    assert_eq!(
        out["data"]["k"], "<v>",
        "untouched fields are kept as they were"
    );
    assert_eq!(s.data().logs, ["Info mutated cfg"]);

    let mut ctx = ctx01();
    ctx.cluster_path = None;
    let out = mu
        .call_mutate(&mut s, &ctx, "null", r#"{"metadata":{"name":"a"}}"#, None)
        .unwrap()
        .unwrap();
    assert_eq!(json(&out)["metadata"]["labels"]["path"], "");
    assert_eq!(
        mu.call_mutate(
            &mut s,
            &ctx,
            r#"{"mode":"reject"}"#,
            r#"{"metadata":{"name":"a"}}"#,
            None
        )
        .unwrap(),
        Err(PluginError::Rejected("rejected a".into()))
    );
    match mu
        .call_mutate(&mut s, &ctx, r#"{"mode":"panic"}"#, "{}", None)
        .unwrap()
    {
        Err(PluginError::Internal(m)) => assert!(
            m.starts_with("panic: assignment to entry in nil map (at "),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        mu.call_mutate(&mut s, &ctx, "null", "[1]", None).unwrap(),
        Err(PluginError::InvalidInput(_))
    ));
    // The same instance keeps working across calls that collect garbage and
    // large inputs the host lowers through cabi_realloc.
    let big = format!(
        r#"{{"metadata":{{"name":"big"}},"data":{{"blob":"{}"}}}}"#,
        "x".repeat(1 << 20)
    );
    for i in 0..20 {
        let (config, object) = if i % 2 == 0 {
            (r#"{"mode":"churn"}"#, r#"{"metadata":{"name":"c"}}"#)
        } else {
            ("null", big.as_str())
        };
        mu.call_mutate(&mut s, &ctx, config, object, None)
            .unwrap()
            .unwrap();
        meta.call_describe(&mut s).unwrap();
    }

    // namer: namespace present and absent (cluster-scoped), typed error.
    let c = component("namer01");
    let mut s = store();
    let n = v01::namer::Namer::instantiate(&mut s, &c, &linker(false)).unwrap();
    let nm = n.syncweave_plugin_naming();
    let name = nm
        .call_name(
            &mut s,
            &ctx01(),
            r#"{"Prefix":"p-"}"#,
            r#"{"metadata":{"name":"w","namespace":"default"}}"#,
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        (name.name.as_str(), name.namespace.as_deref()),
        ("p-w", Some("2x8fkdtr3b1z"))
    );
    let name = nm
        .call_name(&mut s, &ctx01(), "{}", r#"{"metadata":{"name":"w"}}"#)
        .unwrap()
        .unwrap();
    assert_eq!(name.namespace, None);
    assert_eq!(
        nm.call_name(&mut s, &ctx01(), "{}", "{}").unwrap(),
        Err(PluginError::InvalidInput("metadata.name: missing".into()))
    );

    // projector: Validate on the config type, the CRD edited.
    let c = component("projector01");
    let mut s = store();
    let p = v01::projector::Projector::instantiate(&mut s, &c, &linker(false)).unwrap();
    let pr = p.syncweave_plugin_projection();
    let crd = pr
        .call_project(
            &mut s,
            r#"{"group":"example.org"}"#,
            r#"{"spec":{"group":"internal"}}"#,
        )
        .unwrap()
        .unwrap();
    assert_eq!(json(&crd)["spec"]["group"], "example.org");
    assert_eq!(
        pr.call_project(&mut s, "{}", "{}").unwrap(),
        Err(PluginError::InvalidConfig("group: must be set".into()))
    );
    assert_eq!(
        p.syncweave_plugin_meta()
            .call_validate_config(&mut s, "{}")
            .unwrap(),
        Err("group: must be set".into())
    );

    // renderer: a list of documents.
    let c = component("renderer01");
    let mut s = store();
    let r = v01::renderer::Renderer::instantiate(&mut s, &c, &linker(false)).unwrap();
    let docs = r
        .syncweave_plugin_rendering()
        .call_render(&mut s, &ctx01(), "null", "tpl", r#"{"ClusterName":"c1"}"#)
        .unwrap()
        .unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(json(&docs[0])["metadata"]["name"], "c1");
    assert_eq!(
        json(&docs[1])["data"],
        json(r#"{"template":"tpl","owner":"widgets"}"#)
    );
}

#[test]
fn go_components_of_contract_02_run_in_wasmtime() {
    if !have_go("go_components_of_contract_02_run_in_wasmtime") {
        return;
    }
    use v02::types::{PluginError, Severity, Side};

    let c = component("mutator02");
    let mut s = store();
    let m = v02::mutator::Mutator::instantiate(&mut s, &c, &linker(true)).unwrap();
    let info = m.syncweave_plugin_meta().call_describe(&mut s).unwrap();
    assert_eq!(info.name, "go-mutator02");
    assert_eq!(info.reads.len(), 2);
    assert_eq!(info.reads[0].side, Side::Kcp);
    assert_eq!(
        (
            info.reads[1].resource.group.as_str(),
            info.reads[1].resource.version.as_str(),
            info.reads[1].resource.resource.as_str(),
            info.reads[1].purpose.as_str()
        ),
        ("apps", "v1", "deployments", "counts them")
    );
    let ex = &info.examples[0];
    assert_eq!(ex.reads.len(), 1);
    assert_eq!(ex.reads[0].resource.resource, "namespaces");
    assert_eq!(
        ex.reads[0].objects,
        [r#"{"metadata":{"name":"shop","labels":{"team":"a"}}}"#]
    );
    assert_eq!(
        (ex.values[0].key.as_str(), ex.values[0].value.as_str()),
        ("zone", r#""eu""#)
    );

    // mutate's parameters (17 flat values) go by pointer.
    let mu = m.syncweave_plugin_mutation();
    let out = mu
        .call_mutate(
            &mut s,
            &ctx02(&[("zone", r#""eu""#), ("n", "1")]),
            r#"{"prefix":"ns/"}"#,
            r#"{"metadata":{"name":"w","namespace":"shop"}}"#,
            Some(r#"{"metadata":{"name":"theirs"}}"#),
        )
        .unwrap()
        .unwrap();
    let obj = json(&out.object);
    assert_eq!(
        obj["metadata"]["labels"],
        json(r#"{"ns/team":"a","ns/tenant":"acme","deployments":"api.web"}"#)
    );
    assert_eq!(
        obj["metadata"]["annotations"],
        json(r#"{"values":"zone=\"eu\",n=1","other":"theirs","path":"root:org:team"}"#)
    );
    assert_eq!(
        s.data().reads,
        [
            "get Kcp /v1/namespaces None shop",
            r#"list Service apps/v1/deployments Some("db") Some("tier in (a,b)")"#
        ]
    );
    let report = &out.report;
    assert_eq!(report.results.len(), 1);
    assert_eq!(report.results[0].severity, Severity::Normal);
    assert_eq!(report.results[0].reason, "LabelsCopied");
    assert_eq!(
        (
            report.conditions[0].type_.as_str(),
            report.conditions[0].status.as_str(),
            report.conditions[0].reason.as_str(),
            report.conditions[0].message.as_str()
        ),
        ("LabelsCopied", "True", "Copied", "all of them")
    );
    assert_eq!(
        (
            report.set_context[0].key.as_str(),
            report.set_context[0].value.as_str()
        ),
        ("example.com/count", "2")
    );
    assert_eq!(s.data().logs, ["Debug mutated w"]);

    // A missing namespace is a warning; an unavailable read fails the call
    // as internal, naming the read error; typed errors keep their kind.
    let out = mu
        .call_mutate(
            &mut s,
            &ctx02(&[]),
            "null",
            r#"{"metadata":{"name":"w","namespace":"gone"}}"#,
            None,
        )
        .unwrap()
        .unwrap();
    assert_eq!(out.report.results[0].severity, Severity::Warning);
    assert_eq!(out.report.results[0].reason, "NamespaceMissing");
    assert_eq!(
        mu.call_mutate(
            &mut s,
            &ctx02(&[]),
            "null",
            r#"{"metadata":{"name":"w","namespace":"down"}}"#,
            None
        )
        .unwrap(),
        Err(PluginError::Internal(
            "read unavailable: cache not synced".into()
        ))
    );
    assert_eq!(
        mu.call_mutate(&mut s, &ctx02(&[]), r#"{"mode":"fail"}"#, "{}", None)
            .unwrap(),
        Err(PluginError::Rejected("no".into()))
    );
    // Reads while the garbage collector runs: the host allocates the
    // results through cabi_realloc, where a collection must not start.
    for _ in 0..5 {
        let out = mu
            .call_mutate(
                &mut s,
                &ctx02(&[]),
                r#"{"mode":"list-churn"}"#,
                r#"{"metadata":{"name":"w"}}"#,
                None,
            )
            .unwrap()
            .unwrap();
        assert_eq!(json(&out.object)["metadata"]["labels"]["listed"], "3000");
    }

    // namer: reads, context values and a report beside the name.
    let c = component("namer02");
    let mut s = store();
    let n = v02::namer::Namer::instantiate(&mut s, &c, &linker(true)).unwrap();
    let named = n
        .syncweave_plugin_naming()
        .call_name(
            &mut s,
            &ctx02(&[("zone", r#""eu""#)]),
            "null",
            r#"{"metadata":{"name":"w","namespace":"shop"}}"#,
        )
        .unwrap()
        .unwrap();
    assert_eq!(named.name.name, "acme-w-eu");
    assert_eq!(named.name.namespace.as_deref(), Some("2x8fkdtr3b1z"));
    assert_eq!(named.report.set_context[0].key, "tenant");
    assert_eq!(named.report.set_context[0].value, r#""acme""#);

    // projector: the 0.1 interface at 0.2 (no reads imported).
    let c = component("projector02");
    assert!(
        !c.component_type()
            .imports(engine())
            .any(|(name, _)| name.starts_with("syncweave:plugin/reads")),
        "a projector does not import reads"
    );
    let mut s = store();
    let p = v02::projector::Projector::instantiate(&mut s, &c, &linker(true)).unwrap();
    let info = p.syncweave_plugin_meta().call_describe(&mut s).unwrap();
    assert!(info.reads.is_empty() && info.examples[0].reads.is_empty());
    let crd = p
        .syncweave_plugin_projection()
        .call_project(&mut s, r#"{"Group":"b"}"#, r#"{"spec":{"group":"a"}}"#)
        .unwrap()
        .unwrap();
    assert_eq!(json(&crd)["spec"]["group"], "b");

    // renderer: 16 flat parameters, documents and a report.
    let c = component("renderer02");
    let mut s = store();
    let r = v02::renderer::Renderer::instantiate(&mut s, &c, &linker(true)).unwrap();
    let rendered = r
        .syncweave_plugin_rendering()
        .call_render(
            &mut s,
            &ctx02(&[("a", "1")]),
            "null",
            "tpl",
            r#"{"ClusterName":"c1"}"#,
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        json(&rendered.documents[0])["data"],
        json(r#"{"size":"L","cluster":"c1"}"#)
    );
    assert_eq!(rendered.report.results[0].severity, Severity::Warning);
    assert_eq!(rendered.report.results[0].message, "tpl");
    assert_eq!(
        s.data().reads,
        [r#"get Service /v1/configmaps Some("defaults") settings"#]
    );
}

/// A throwaway Go module next to the fixtures (so its replace reaches the SDK).
struct Module(PathBuf);

impl Module {
    fn new(name: &str, main_go: &str) -> Module {
        let dir = fixture("").join(format!(".tmp-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("go.mod"),
            format!(
                "module {name}\n\ngo 1.24\n\nrequire syncweave.dev/sdk/go v0.0.0\n\nreplace syncweave.dev/sdk/go => ../../../../../sdk/go\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("main.go"), main_go).unwrap();
        Module(dir)
    }

    fn build_error(&self) -> String {
        let project = go::go_project(&self.0).unwrap();
        go::build_go(&project, &self.0.join("out"), false)
            .unwrap_err()
            .to_string()
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn go_build_errors_name_the_fix() {
    if !have_go("go_build_errors_name_the_fix") {
        return;
    }
    let err = Module::new(
        "norole",
        "package main\n\nimport _ \"syncweave.dev/sdk/go/plugin\"\n\nfunc main() {}\n",
    )
    .build_error();
    assert!(
        err.contains("imports none of the Go SDK's role packages")
            && err.contains("syncweave.dev/sdk/go/mutator"),
        "{err}"
    );
    let err = Module::new(
        "tworoles",
        "package main\n\nimport (\n\t_ \"syncweave.dev/sdk/go/namer\"\n\t_ \"syncweave.dev/sdk/go/v02/namer\"\n)\n\nfunc main() {}\n",
    )
    .build_error();
    assert!(err.contains("more than one role package"), "{err}");
    let err = Module::new(
        "library",
        "package labels\n\nimport _ \"syncweave.dev/sdk/go/mutator\"\n",
    )
    .build_error();
    assert!(
        err.contains("`package labels`") && err.contains("main package"),
        "{err}"
    );
    let err = Module::new(
        "broken",
        "package main\n\nimport _ \"syncweave.dev/sdk/go/mutator\"\n\nfunc main() { undefinedThing() }\n",
    )
    .build_error();
    assert!(
        err.contains("go build failed") && err.contains("undefined: undefinedThing"),
        "{err}"
    );
    let m = Module::new(
        "nosdk",
        "package main\n\nimport _ \"syncweave.dev/sdk/go/mutator\"\n\nfunc main() {}\n",
    );
    std::fs::write(m.0.join("go.mod"), "module nosdk\n\ngo 1.24\n").unwrap();
    let err = m.build_error();
    assert!(
        err.contains("go.mod does not reach the Go SDK")
            && err.contains("replace syncweave.dev/sdk/go =>"),
        "{err}"
    );
    let err = go::go_project(&fixture("")).unwrap_err().to_string();
    assert!(
        err.contains("go.mod") && err.contains("plugin new"),
        "{err}"
    );
}
