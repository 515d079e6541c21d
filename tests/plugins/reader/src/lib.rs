//! Test mutator for contract 0.2: reads, reports and context values.
//!
//! Default mode: gets the object's namespace in kcp and lists the
//! service-cluster ConfigMaps labelled `app=db` in `config.namespace`
//! (default `db`). It labels the object `syncweave.test/team` with the
//! namespace's `team` label and `syncweave.test/zone` with the context
//! value `test/zone` (when set), annotates it with the number of
//! ConfigMaps, warns `NoDatabases` when there are none, reports condition
//! `NamespaceFound` and sets context value `test/team`.
//!
//! Other modes (`config.mode`): `undeclared` reads Secrets, which it does
//! not declare; `many-reads` makes `config.count` gets; `big-report` warns
//! with a 70 000-byte message; `bad-status` reports status "true";
//! `no-reads` returns the object untouched without reading; `namespace`
//! only gets the object's kcp namespace and copies its `team` label (the
//! benchmark's reading plugin, beside `no-reads`); `logical-cluster` gets
//! the LogicalCluster of the object's workspace and annotates the object
//! `syncweave.test/workspace-path` with its `kcp.io/path` and
//! `syncweave.test/tier` with its `example.com/tier` annotation (when
//! set). A read error
//! is returned as the plugin's internal error `read failed: <kind>: <msg>`.

wit_bindgen::generate!({ path: "../../../wit/v0.2", world: "mutator" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::mutation::{Guest as Mutation, Mutated};
use syncweave::plugin::reads::{self, ReadError};
use syncweave::plugin::types::{
    CallResult, Condition, Context, ContextEntry, Fixture, PluginError, PluginInfo,
    ReadDeclaration, ReadFixture, Report, Resource, Severity, Side,
};

struct Reader;

fn namespaces() -> Resource {
    Resource {
        group: String::new(),
        version: "v1".into(),
        resource: "namespaces".into(),
    }
}

fn logical_clusters() -> Resource {
    Resource {
        group: "core.kcp.io".into(),
        version: "v1alpha1".into(),
        resource: "logicalclusters".into(),
    }
}

fn configmaps() -> Resource {
    Resource {
        group: String::new(),
        version: "v1".into(),
        resource: "configmaps".into(),
    }
}

fn read_failed(e: ReadError) -> PluginError {
    let (kind, msg) = match e {
        ReadError::NotAllowed(m) => ("not-allowed", m),
        ReadError::NotServed(m) => ("not-served", m),
        ReadError::Unavailable(m) => ("unavailable", m),
        ReadError::Invalid(m) => ("invalid", m),
    };
    PluginError::Internal(format!("read failed: {kind}: {msg}"))
}

fn empty_report() -> Report {
    Report {
        results: vec![],
        conditions: vec![],
        set_context: vec![],
    }
}

impl Meta for Reader {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-reader".into(),
            version: "0.2.0".into(),
            description: "reads its namespace and database ConfigMaps".into(),
            config_schema: None,
            examples: vec![Fixture {
                name: "team-and-zone".into(),
                config: r#"{"namespace":"db"}"#.into(),
                input: r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}"#.into(),
                expected: Some(
                    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","labels":{"syncweave.test/team":"a-team","syncweave.test/zone":"eu"},"annotations":{"syncweave.test/databases":"1"}}}"#.into(),
                ),
                reads: vec![
                    ReadFixture {
                        side: Side::Kcp,
                        resource: namespaces(),
                        objects: vec![
                            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns","labels":{"team":"a-team"}}}"#.into(),
                        ],
                    },
                    ReadFixture {
                        side: Side::Service,
                        resource: configmaps(),
                        objects: vec![
                            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pg","namespace":"db","labels":{"app":"db"}}}"#.into(),
                            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"db","labels":{"app":"web"}}}"#.into(),
                            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pg","namespace":"other","labels":{"app":"db"}}}"#.into(),
                        ],
                    },
                ],
                values: vec![ContextEntry {
                    key: "test/zone".into(),
                    value: r#""eu""#.into(),
                }],
            }],
            reads: vec![
                ReadDeclaration {
                    side: Side::Kcp,
                    resource: namespaces(),
                    purpose: "the consumer's team label".into(),
                },
                ReadDeclaration {
                    side: Side::Service,
                    resource: configmaps(),
                    purpose: "database ConfigMaps".into(),
                },
                ReadDeclaration {
                    side: Side::Kcp,
                    resource: logical_clusters(),
                    purpose: "the workspace's path and tier".into(),
                },
            ],
        }
    }

    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }
}

impl Mutation for Reader {
    fn mutate(
        ctx: Context,
        config: String,
        object: String,
        _other: Option<String>,
    ) -> Result<Mutated, PluginError> {
        let cfg: serde_json::Value =
            serde_json::from_str(&config).map_err(|e| PluginError::InvalidConfig(e.to_string()))?;
        let mut obj: serde_json::Value =
            serde_json::from_str(&object).map_err(|e| PluginError::InvalidInput(e.to_string()))?;
        let mut report = empty_report();
        match cfg["mode"].as_str().unwrap_or("") {
            "" => {}
            "no-reads" => {
                return Ok(Mutated { object, report });
            }
            "namespace" => {
                let ns_name = obj["metadata"]["namespace"]
                    .as_str()
                    .ok_or_else(|| PluginError::InvalidInput("metadata.namespace missing".into()))?
                    .to_string();
                let namespace = reads::get(Side::Kcp, &namespaces(), None, &ns_name)
                    .map_err(read_failed)?;
                let team = match namespace {
                    Some(text) => serde_json::from_str::<serde_json::Value>(&text)
                        .map_err(|e| PluginError::Internal(format!("namespace is not JSON: {e}")))?
                        ["metadata"]["labels"]["team"]
                        .as_str()
                        .map(str::to_string),
                    None => None,
                };
                if let Some(team) = team {
                    obj["metadata"]["labels"]["syncweave.test/team"] = team.into();
                }
                return Ok(Mutated {
                    object: obj.to_string(),
                    report,
                });
            }
            "logical-cluster" => {
                let lc = reads::get(Side::Kcp, &logical_clusters(), None, "cluster")
                    .map_err(read_failed)?
                    .ok_or_else(|| {
                        PluginError::Internal("the workspace has no LogicalCluster".into())
                    })?;
                let lc: serde_json::Value = serde_json::from_str(&lc).map_err(|e| {
                    PluginError::Internal(format!("LogicalCluster is not JSON: {e}"))
                })?;
                let annotations = &lc["metadata"]["annotations"];
                for (from, to) in [
                    ("kcp.io/path", "syncweave.test/workspace-path"),
                    ("example.com/tier", "syncweave.test/tier"),
                ] {
                    if let Some(v) = annotations[from].as_str() {
                        obj["metadata"]["annotations"][to] = v.into();
                    }
                }
                return Ok(Mutated {
                    object: obj.to_string(),
                    report,
                });
            }
            "undeclared" => {
                let secrets = Resource {
                    group: String::new(),
                    version: "v1".into(),
                    resource: "secrets".into(),
                };
                reads::get(Side::Service, &secrets, Some("ns"), "token").map_err(read_failed)?;
                return Ok(Mutated { object, report });
            }
            "many-reads" => {
                let n = cfg["count"].as_u64().unwrap_or(100);
                for i in 0..n {
                    reads::get(Side::Kcp, &namespaces(), None, &format!("ns-{i}"))
                        .map_err(read_failed)?;
                }
                return Ok(Mutated { object, report });
            }
            "big-report" => {
                report.results.push(CallResult {
                    severity: Severity::Warning,
                    reason: "TooLong".into(),
                    message: "x".repeat(70_000),
                });
                return Ok(Mutated { object, report });
            }
            "bad-status" => {
                report.conditions.push(Condition {
                    type_: "NamespaceFound".into(),
                    status: "true".into(),
                    reason: "Found".into(),
                    message: String::new(),
                });
                return Ok(Mutated { object, report });
            }
            other => return Err(PluginError::InvalidConfig(format!("unknown mode {other:?}"))),
        }

        let ns_name = obj["metadata"]["namespace"]
            .as_str()
            .ok_or_else(|| PluginError::InvalidInput("metadata.namespace missing".into()))?
            .to_string();
        let namespace = reads::get(Side::Kcp, &namespaces(), None, &ns_name).map_err(read_failed)?;
        let team = match &namespace {
            Some(text) => {
                let ns: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| PluginError::Internal(format!("namespace is not JSON: {e}")))?;
                ns["metadata"]["labels"]["team"].as_str().map(str::to_string)
            }
            None => None,
        };
        let db_ns = cfg["namespace"].as_str().unwrap_or("db");
        let dbs = reads::list(Side::Service, &configmaps(), Some(db_ns), Some("app=db"))
            .map_err(read_failed)?;

        let meta = obj["metadata"].as_object_mut().expect("checked above");
        let labels = meta
            .entry("labels")
            .or_insert_with(|| serde_json::json!({}))
            .as_object_mut()
            .ok_or_else(|| PluginError::InvalidInput("labels is not a map".into()))?;
        if let Some(team) = &team {
            labels.insert("syncweave.test/team".into(), team.as_str().into());
        }
        if let Some(zone) = ctx.values.iter().find(|e| e.key == "test/zone") {
            let zone: serde_json::Value = serde_json::from_str(&zone.value)
                .map_err(|e| PluginError::InvalidInput(format!("test/zone: {e}")))?;
            labels.insert("syncweave.test/zone".into(), zone);
        }
        meta.entry("annotations")
            .or_insert_with(|| serde_json::json!({}))
            .as_object_mut()
            .ok_or_else(|| PluginError::InvalidInput("annotations is not a map".into()))?
            .insert("syncweave.test/databases".into(), dbs.len().to_string().into());

        if dbs.is_empty() {
            report.results.push(CallResult {
                severity: Severity::Warning,
                reason: "NoDatabases".into(),
                message: format!("no ConfigMap labelled app=db in namespace {db_ns}"),
            });
        }
        report.conditions.push(Condition {
            type_: "NamespaceFound".into(),
            status: if namespace.is_some() { "True" } else { "False" }.into(),
            reason: if namespace.is_some() { "Found" } else { "NotFound" }.into(),
            message: format!("namespace {ns_name}"),
        });
        report.set_context.push(ContextEntry {
            key: "test/team".into(),
            value: serde_json::Value::from(team.unwrap_or_default()).to_string(),
        });
        Ok(Mutated {
            object: obj.to_string(),
            report,
        })
    }
}

export!(Reader);
