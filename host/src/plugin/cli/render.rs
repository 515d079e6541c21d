//! `syncweave render`: what a PublishedResource makes of objects, computed
//! on a laptop by the same plugins under the same limits as the agent (like
//! `crossplane render`): the copy's namespace, name and body after naming
//! and the spec mutation chain, the copies of its related objects
//! (`spec.related`, found among the fixtures by the agent's own resolver),
//! and what the plugins reported (the Events the agent would record).
//! Plugin reads are answered from fixture files through the agent's own
//! read path, so `spec.reads` applies as in a cluster.
//!
//! Exit codes: 0 rendered, 1 a plugin failed on an object, 2 bad input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::apis::PublishedResource;
use crate::controller::store::{KcpCache, KeyParts, ObjectKey};
use crate::plugin::chain::PluginHost;
use crate::sync::caches::{Gvr, RelatedCaches, namespaces_gvr};
use crate::sync::error::RelatedError;
use crate::sync::ports::{Origin, Related, Reports, Templates};
use crate::sync::reads::{ObjectReads, ReadsConfig};
use crate::sync::related::{Originals, Primaries, as_copy, resolve};

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The PublishedResource (YAML or JSON).
    pub published_resource: PathBuf,
    /// kcp objects to render (YAML, several documents per file allowed).
    #[arg(required = true)]
    pub objects: Vec<PathBuf>,
    /// Objects in the consumer's workspace that plugins may read: the
    /// consumer Namespace, related objects (YAML, several documents).
    #[arg(long = "kcp-fixtures", value_name = "FILE")]
    pub kcp_fixtures: Vec<PathBuf>,
    /// Service-cluster objects that plugins may read (YAML, several
    /// documents).
    #[arg(long = "service-fixtures", value_name = "FILE")]
    pub service_fixtures: Vec<PathBuf>,
    /// Copies as the service cluster holds them, with the status its
    /// controllers wrote (YAML, several documents): each is matched to a
    /// rendered copy by namespace and name, and the status the kcp object
    /// would get (after `spec.mutation.status`) is shown as `status`.
    #[arg(long = "observed", value_name = "FILE")]
    pub observed: Vec<PathBuf>,
    /// The consumer's logical cluster name.
    #[arg(long, default_value = "2x8fkdtr3b1z")]
    pub cluster_name: String,
    /// The consumer's workspace path (`.ClusterPath`).
    #[arg(long)]
    pub cluster_path: Option<String>,
    /// The service CRD is cluster-scoped (copies get no namespace).
    #[arg(long)]
    pub cluster_scoped: bool,
}

/// Why rendering stopped before any object was rendered.
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
struct BadInput(anyhow::Error);

fn bad(e: impl Into<anyhow::Error>) -> BadInput {
    BadInput(e.into())
}

/// Every document of a YAML (or JSON) file, as JSON values.
fn documents(path: &Path, what: &str) -> Result<Vec<Value>, BadInput> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {what} file {}", path.display()))
        .map_err(bad)?;
    let mut out = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
        let v = <Value as serde::Deserialize>::deserialize(doc)
            .with_context(|| format!("{what} file {}, document {i}", path.display()))
            .map_err(bad)?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// Every document of every file in `paths`, in order.
fn all_documents(paths: &[PathBuf], what: &str) -> Result<Vec<Value>, BadInput> {
    let mut out = Vec::new();
    for p in paths {
        out.extend(documents(p, what)?);
    }
    Ok(out)
}

/// The plural resource of a kind, by the rules Kubernetes applies to
/// most kinds (`Namespace` → `namespaces`, `Policy` → `policies`).
fn plural(kind: &str) -> String {
    let k = kind.to_ascii_lowercase();
    if k.ends_with('s') || k.ends_with('x') || k.ends_with("ch") || k.ends_with("sh") {
        format!("{k}es")
    } else if let Some(stem) = k.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{k}s")
    }
}

/// A fixture as a cached object, with its kind's group/version/resource.
fn fixture(v: Value, at: &str) -> Result<(Gvr, DynamicObject), BadInput> {
    let api_version = v["apiVersion"].as_str().unwrap_or_default().to_string();
    let kind = v["kind"].as_str().unwrap_or_default().to_string();
    if api_version.is_empty() || kind.is_empty() || v["metadata"]["name"].as_str().is_none() {
        return Err(bad(anyhow::anyhow!(
            "{at}: a fixture needs apiVersion, kind and metadata.name"
        )));
    }
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let obj: DynamicObject = serde_json::from_value(v)
        .with_context(|| format!("{at}: not a Kubernetes object"))
        .map_err(bad)?;
    Ok(((group, version, plural(&kind)), obj))
}

/// One fixture object: on the service side or in kcp, and its kind.
struct Fixture {
    service: bool,
    gvr: Gvr,
    obj: DynamicObject,
}

/// Every fixture of the command line, parsed once.
fn fixtures(args: &RenderArgs) -> Result<Vec<Fixture>, BadInput> {
    let mut out = Vec::new();
    for (service, files) in [(false, &args.kcp_fixtures), (true, &args.service_fixtures)] {
        for f in files {
            for (i, v) in documents(f, "fixture")?.into_iter().enumerate() {
                let at = format!("{} document {i}", f.display());
                let (gvr, obj) = fixture(v, &at)?;
                out.push(Fixture { service, gvr, obj });
            }
        }
    }
    Ok(out)
}

/// The caches the agent would read from, filled with the fixtures.
fn caches(
    args: &RenderArgs,
    config: &ReadsConfig,
    fixtures: &[Fixture],
) -> (RelatedCaches, Arc<str>) {
    let caches = RelatedCaches::default();
    let url: Arc<str> = "render://fixtures".into();
    // Every kind the PublishedResource allows is "listed" (maybe empty), as
    // in a cluster where the caches have synced.
    for g in config.kinds(false) {
        caches.kcp_or_new(&g).list_started(&url);
    }
    for g in config.kinds(true) {
        caches.service_or_new(&g).list_started();
    }
    for f in fixtures {
        let mut obj = f.obj.clone();
        if f.service {
            caches.service_or_new(&f.gvr).listed(obj);
        } else {
            // kcp objects are keyed by the workspace they are in.
            obj.metadata.annotations.get_or_insert_default().insert(
                crate::apis::kcp::CLUSTER_ANNOTATION.into(),
                args.cluster_name.clone(),
            );
            let cache: Arc<KcpCache> = caches.kcp_or_new(&f.gvr);
            cache.list_started(&url);
            cache.listed(&url, obj);
        }
    }
    for g in config.kinds(false) {
        caches.kcp_or_new(&g).list_done(&url);
    }
    for g in config.kinds(true) {
        caches.service_or_new(&g).list_done();
    }
    (caches, url)
}

/// The originals of one related resource among the fixtures of its origin
/// side, for the agent's resolver.
struct FixtureOriginals<'a> {
    plural: String,
    objects: Vec<&'a DynamicObject>,
    namespaces: Vec<&'a DynamicObject>,
}

impl<'a> FixtureOriginals<'a> {
    fn new(fixtures: &'a [Fixture], service: bool, gvr: &Gvr) -> Self {
        let of = |g: &Gvr| {
            fixtures
                .iter()
                .filter(|f| f.service == service && f.gvr == *g)
                .map(|f| &f.obj)
                .collect()
        };
        FixtureOriginals {
            plural: gvr.2.clone(),
            objects: of(gvr),
            namespaces: of(&namespaces_gvr()),
        }
    }
}

fn labels_match(sel: &crate::apis::selector::Selector, o: &DynamicObject) -> bool {
    crate::apis::selector::matches_labels(sel, o.metadata.labels.as_ref())
}

impl Originals for FixtureOriginals<'_> {
    fn plural(&self) -> &str {
        &self.plural
    }

    async fn get(&self, ns: &str, name: &str) -> Result<Option<DynamicObject>, kube::Error> {
        Ok(self
            .objects
            .iter()
            .find(|o| {
                o.metadata.namespace.as_deref().unwrap_or_default() == ns
                    && o.metadata.name.as_deref() == Some(name)
            })
            .map(|o| (*o).clone()))
    }

    async fn list(&self, ns: &str, labels: &str) -> Result<Vec<DynamicObject>, kube::Error> {
        // As the API server answers a selector it cannot parse.
        let sel = crate::apis::selector::parse(labels).map_err(|e| {
            let mut s = kube::core::Status::failure(
                &format!("unable to parse requirement: {e}"),
                "BadRequest",
            );
            s.code = 400;
            kube::Error::Api(Box::new(s))
        })?;
        Ok(self
            .objects
            .iter()
            .filter(|o| {
                o.metadata.namespace.as_deref().unwrap_or_default() == ns && labels_match(&sel, o)
            })
            .map(|o| (*o).clone())
            .collect())
    }

    async fn namespaces(&self, field: &str, labels: &str) -> Result<Vec<String>, RelatedError> {
        let sel = crate::apis::selector::parse(labels).map_err(|e| RelatedError::Config {
            field: field.into(),
            message: format!("label selector {labels:?}: {e}"),
        })?;
        Ok(self
            .namespaces
            .iter()
            .filter(|o| labels_match(&sel, o))
            .filter_map(|o| o.metadata.name.clone())
            .collect())
    }
}

/// The copies of the related objects of one primary (`obj` in kcp, `copy`
/// its service copy), and what their mutations reported.
async fn render_related(
    related: &[Related],
    templates: &dyn Templates,
    fixtures: &[Fixture],
    args: &RenderArgs,
    origin: &Origin<'_>,
    (obj, copy): (&Value, &Value),
    reports: &mut Reports,
) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for r in related {
        let field = r.field();
        let service = r.is_service();
        let (origin_obj, dest_obj) = if service { (copy, obj) } else { (obj, copy) };
        let prim = Primaries {
            origin: origin_obj,
            dest: dest_obj,
            origin_side: r.spec.origin,
            cluster: &args.cluster_name,
            path: args.cluster_path.as_deref(),
        };
        let originals = FixtureOriginals::new(fixtures, service, &r.spec.origin_gvr());
        let resolved = resolve(&field, &r.spec, &prim, templates, &originals)
            .await
            .map_err(|e| e.to_string())?;
        let (group, version, _) = r.spec.dest_gvr();
        let api_version = if group.is_empty() {
            version
        } else {
            format!("{group}/{version}")
        };
        for res in resolved {
            let kind = res
                .original
                .types
                .as_ref()
                .map(|t| t.kind.clone())
                .unwrap_or_default();
            let from = format!(
                "{}/{}",
                res.original
                    .metadata
                    .namespace
                    .as_deref()
                    .unwrap_or_default(),
                res.original.metadata.name.as_deref().unwrap_or_default()
            );
            let mut source = serde_json::to_value(&res.original)
                .map_err(|e| format!("{field}: the original {from} is not JSON: {e}"))?;
            crate::sync::strip::strip_metadata(&mut source);
            let shape =
                |v: Value| as_copy(v, &api_version, &kind, &res.dest_namespace, &res.dest_name);
            if let Some(m) = &r.mutator {
                // No copy exists yet: the mutation sees the projected
                // original as the other side, as the agent's first pass does.
                let projected = shape(source.clone());
                reports.extend(
                    m.mutate_spec(origin, &mut source, Some(&projected))
                        .await
                        .map_err(|e| format!("{field}: mutation: {e}"))?,
                );
            }
            out.push(json!({
                "identifier": r.spec.identifier,
                "origin": if service { "service" } else { "kcp" },
                "from": from,
                "copy": {
                    "namespace": Some(res.dest_namespace.clone()).filter(|n| !n.is_empty()),
                    "name": res.dest_name,
                    "body": shape(source),
                },
            }));
        }
    }
    Ok(out)
}

/// The observed copy (`--observed`) at `namespace`/`name`, if any.
fn observed_copy<'a>(
    observed: &'a [Value],
    namespace: Option<&str>,
    name: &str,
) -> Option<&'a Value> {
    observed.iter().find(|o| {
        o["metadata"]["name"].as_str() == Some(name)
            && o["metadata"]["namespace"]
                .as_str()
                .filter(|n| !n.is_empty())
                == namespace
    })
}

/// The Events of one object's plugin reports, as the agent records them.
fn events(reports: &Reports) -> Vec<Value> {
    crate::sync::plugin_reports::said(reports)
        .into_iter()
        .map(|s| {
            json!({"type": if s.warning { "Warning" } else { "Normal" },
                   "reason": s.reason, "message": s.message})
        })
        .collect()
}

pub async fn run(args: RenderArgs) -> ExitCode {
    match render(&args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Render every object; `Ok(false)` when a plugin failed on one.
async fn render(args: &RenderArgs) -> Result<bool, BadInput> {
    let text = super::read_document(&args.published_resource, "PublishedResource").map_err(bad)?;
    let pr: PublishedResource = serde_json::from_str(&text)
        .with_context(|| {
            format!(
                "{} is not a PublishedResource",
                args.published_resource.display()
            )
        })
        .map_err(bad)?;
    let problems = crate::apis::unsupported_fields(&pr.spec);
    if !problems.is_empty() {
        return Err(bad(anyhow::anyhow!(
            "PublishedResource {}: {}",
            pr.metadata.name.as_deref().unwrap_or_default(),
            problems.join("; ")
        )));
    }
    let objects = all_documents(&args.objects, "object")?;
    let observed = all_documents(&args.observed, "observed copy")?;

    let runtime = syncweave_runtime::Runtime::new(syncweave_runtime::RuntimeConfig::default())
        .context("starting the Wasm runtime")
        .map_err(bad)?;
    let fetch = crate::plugin::fetch::FetchContext::new(
        crate::plugin::fetch::FetchOptions::for_runtime(&runtime, None),
    )
    .context("setting up plugin fetching")
    .map_err(bad)?;
    // No cluster: WasmPlugins (`plugin:` uses) are not known here.
    let resolver = crate::plugin::resolve::PluginResolver::new(
        runtime.clone(),
        crate::plugin::wasmplugin::WasmPluginRegistry::new(),
        fetch,
    );
    let host = PluginHost::new(runtime, resolver);
    let setup = |e: crate::plugin::chain::PluginSetupError| {
        bad(anyhow::anyhow!(
            "{e} (render resolves `source:` references; a `plugin:` use names a WasmPlugin \
             in a cluster, which render cannot see: use its source instead)"
        ))
    };
    let namer = host.namer(&pr, !args.cluster_scoped).await.map_err(setup)?;
    let mutator = host.mutator(&pr).await.map_err(setup)?;
    let related = host.related(&pr).await.map_err(setup)?;
    let templates = match related.is_empty() {
        true => None,
        false => Some(host.text_templates(&pr).await.map_err(setup)?),
    };
    let config = Arc::new(ReadsConfig::of(&pr));
    let fixtures = fixtures(args)?;
    let (caches, url) = caches(args, &config, &fixtures);

    let mut all_ok = true;
    let mut out = Vec::new();
    for obj in objects {
        let key = ObjectKey::new(KeyParts {
            cluster: args.cluster_name.clone(),
            namespace: obj["metadata"]["namespace"].as_str().map(str::to_string),
            name: obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        });
        let dynamic: DynamicObject = serde_json::from_value(obj.clone())
            .with_context(|| format!("object {key} is not a Kubernetes object"))
            .map_err(bad)?;
        let reads = Arc::new(ObjectReads::new(
            config.clone(),
            &key,
            &caches,
            Some(url.clone()),
        ));
        let host_reads = Some(reads.clone() as Arc<dyn syncweave_runtime::ReadHost>);
        let origin = Origin::of(&key, args.cluster_path.as_deref(), &dynamic)
            .with_reads(host_reads.as_ref());
        let mut reports = Reports::default();
        let result: Result<(Value, Vec<Value>, Option<Value>), String> = async {
            let (name, r) = namer.name(&origin, &obj).await?;
            reports.extend(r);
            let mut body = obj.clone();
            if let Some(m) = &mutator {
                reports.extend(m.mutate_spec(&origin, &mut body, None).await?);
            }
            crate::sync::strip::strip_metadata(&mut body);
            if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("name".into(), json!(name.name));
                match &name.namespace {
                    Some(ns) => meta.insert("namespace".into(), json!(ns)),
                    None => meta.remove("namespace"),
                };
            }
            let related = match &templates {
                Some(t) => {
                    render_related(
                        &related,
                        t.as_ref(),
                        &fixtures,
                        args,
                        &origin,
                        (&obj, &body),
                        &mut reports,
                    )
                    .await?
                }
                None => vec![],
            };
            // Status up: the observed copy of this one, through the status
            // mutations (with the kcp object beside it), as the agent runs them.
            let status = match observed_copy(&observed, name.namespace.as_deref(), &name.name) {
                Some(found) => {
                    let mut copy = found.clone();
                    if let Some(m) = &mutator {
                        reports.extend(m.mutate_status(&origin, &mut copy, Some(&obj)).await?);
                    }
                    Some(copy.get("status").cloned().unwrap_or(Value::Null))
                }
                None => None,
            };
            Ok((
                json!({"namespace": name.namespace, "name": name.name, "body": body}),
                related,
                status,
            ))
        }
        .await;
        let reads: Vec<String> = reads
            .targets()
            .into_iter()
            .map(|t| {
                let side = if t.service { "service" } else { "kcp" };
                let at = match (&t.namespace, &t.name) {
                    (Some(ns), Some(n)) => format!("{ns}/{n}"),
                    (None, Some(n)) => n.clone(),
                    (Some(ns), None) => format!("{ns}/*"),
                    (None, None) => "*".into(),
                };
                format!("{side} {} {at}", t.gvr.2)
            })
            .collect();
        let mut doc =
            json!({"object": key.to_string(), "events": events(&reports), "reads": reads});
        match result {
            Ok((copy, related, status)) => {
                doc["copy"] = copy;
                if !related.is_empty() {
                    doc["related"] = json!(related);
                }
                if let Some(status) = status {
                    doc["status"] = status;
                }
            }
            Err(e) => {
                all_ok = false;
                doc["error"] = json!(e);
            }
        }
        out.push(doc);
    }
    let mut stdout = std::io::stdout().lock();
    for doc in &out {
        let text = format!(
            "---\n{}",
            serde_yaml_ng::to_string(&doc).unwrap_or_default()
        );
        // A reader that went away (`| head`) is not an error of ours.
        if std::io::Write::write_all(&mut stdout, text.as_bytes()).is_err() {
            break;
        }
    }
    Ok(all_ok)
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn plurals_follow_kubernetes_for_common_kinds() {
        for (kind, want) in [
            ("Namespace", "namespaces"),
            ("ConfigMap", "configmaps"),
            ("NetworkPolicy", "networkpolicies"),
            ("Ingress", "ingresses"),
            ("Gateway", "gateways"),
        ] {
            assert_eq!(plural(kind), want);
        }
    }
}
