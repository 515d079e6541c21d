//! Starting a PublishedResource's sync controller: the plugins it runs,
//! the check that kcp serves the resource, and the context its workers
//! share.

use std::sync::Arc;

use kube::api::{Api, DynamicObject, ListParams};
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::{Publisher, schema};
use crate::apis::PublishedResource;
use crate::apis::selector::Selector;
use crate::sync::context::SyncContext;
use crate::sync::events::Failures;
use crate::sync::ports::PluginSet;

impl Publisher {
    /// The WasmPlugins the resource uses by name, sorted.
    fn wasm_plugin_names(pr: &PublishedResource) -> Vec<&str> {
        let spec = &pr.spec;
        let mut uses: Vec<&crate::apis::WasmUse> = Vec::new();
        uses.extend(spec.projection.as_ref().and_then(|p| p.wasm.as_ref()));
        uses.extend(spec.naming.as_ref().and_then(|n| n.wasm.as_ref()));
        let related = spec
            .related
            .iter()
            .flatten()
            .filter_map(|r| r.mutation.as_ref());
        for m in spec.mutation.iter().chain(related) {
            for rules in [&m.spec, &m.status].into_iter().flatten() {
                uses.extend(rules.iter().filter_map(|r| r.wasm.as_ref()));
            }
        }
        let mut names: Vec<&str> = uses.iter().filter_map(|u| u.plugin.as_deref()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// `name=digest` of every WasmPlugin the resource uses by name, sorted
    /// (`name=not-ready` for one without a Ready digest; during a staged
    /// rollout with its canary digest and whom it serves), and the same
    /// with each digest's WasmPlugin generation (its default config is part
    /// of what runs) and the canary's rule: a change of the second swaps
    /// new plugin code into the running sync.
    pub(super) fn wasm_plugins_in_use(&self, pr: &PublishedResource) -> (String, String) {
        let (mut shown, mut exact) = (Vec::new(), Vec::new());
        for n in Self::wasm_plugin_names(pr) {
            match self.plugins.registry().serving(n) {
                Ok(s) => {
                    let p = &s.stable;
                    let (mut show, mut version) = (
                        format!("{n}={}", p.digest()),
                        format!("{n}={}@{:?}", p.digest(), p.generation),
                    );
                    if let Some(c) = &s.canary {
                        show.push_str(&format!(
                            " (canary {} for {})",
                            c.plugin.digest(),
                            c.rule.describe()
                        ));
                        version.push_str(&format!(
                            "+canary={}@{:?}/{}",
                            c.plugin.digest(),
                            c.plugin.generation,
                            c.rule.key()
                        ));
                    }
                    shown.push(show);
                    exact.push(version);
                }
                Err(_) => {
                    shown.push(format!("{n}=not-ready"));
                    exact.push(format!("{n}=not-ready"));
                }
            }
        }
        (shown.join(","), exact.join(","))
    }

    /// Why WasmPlugins the resource uses serve an older digest than their
    /// spec.source names (a new digest that failed its checks), one message
    /// per plugin.
    fn plugins_held_back(&self, pr: &PublishedResource) -> Vec<String> {
        Self::wasm_plugin_names(pr)
            .into_iter()
            .filter_map(|n| {
                let s = self.plugins.registry().serving(n).ok()?;
                Some(format!("WasmPlugin {n:?}: {}", s.held_back?))
            })
            .collect()
    }

    /// Whether a WasmPlugin the resource uses has no digest that may run
    /// (not Ready with nothing held back: a signature that does not verify,
    /// a deleted or never-ready WasmPlugin).
    pub(super) fn plugin_not_serving(&self, pr: &PublishedResource) -> bool {
        Self::wasm_plugin_names(pr)
            .into_iter()
            .any(|n| self.plugins.registry().serving(n).is_err())
    }

    /// The Ready condition of a running sync: False while objects fail, or
    /// while a WasmPlugin it uses holds back a new digest that failed its
    /// checks (objects keep syncing with the previous one); True otherwise.
    pub(super) fn sync_condition(
        &self,
        pr: &PublishedResource,
        failing: Option<String>,
        syncing_message: &str,
    ) -> (&'static str, &'static str, String) {
        if let Some(msg) = failing {
            return ("False", "ObjectsFailing", msg);
        }
        let held_back = self.plugins_held_back(pr);
        if !held_back.is_empty() {
            return (
                "False",
                "WasmPluginNotUpdated",
                format!(
                    "objects keep syncing with the previous digest of a WasmPlugin whose new \
                     digest is not used: {}",
                    held_back.join("; ")
                ),
            );
        }
        ("True", "Syncing", syncing_message.to_string())
    }

    /// Start syncing once kcp serves the projected resource in the virtual
    /// workspace; `None` while it does not yet.
    pub(super) async fn start_sync(
        &self,
        pr: &PublishedResource,
        resolved: &schema::Resolved,
    ) -> anyhow::Result<Option<(CancellationToken, Arc<SyncContext>)>> {
        let name = pr.metadata.name.clone().unwrap_or_default();
        let urls = self.kcp.endpoints().borrow().clone();
        if urls.is_empty() {
            info!(published_resource = %name, "waiting for the APIExportEndpointSlice to list an endpoint (no workspace has bound the export yet)");
            return Ok(None);
        }
        // As upstream: every shard's virtual workspace must serve the
        // resource before syncing starts. Shards that join later are
        // watched (with retries) by the running controller.
        for vw_url in &urls {
            let probe: Api<DynamicObject> =
                Api::all_with(self.kcp.vw_client(vw_url, "*")?, &resolved.remote.ar);
            if let Err(e) = probe.list(&ListParams::default().limit(1)).await {
                info!(published_resource = %name, url = %vw_url, error = %e, "waiting for kcp to serve the resource in the virtual workspace");
                return Ok(None);
            }
        }
        let resource_filter = match pr.spec.filter.as_ref().and_then(|f| f.resource.as_ref()) {
            Some(sel) => Some(label_selector(sel).map_err(|e| {
                anyhow::anyhow!("PublishedResource {name}: spec.filter.resource: {e}")
            })?),
            None => None,
        };
        let namespace_filter = match pr.spec.filter.as_ref().and_then(|f| f.namespace.as_ref()) {
            Some(sel) => Some(label_selector(sel).map_err(|e| {
                anyhow::anyhow!("PublishedResource {name}: spec.filter.namespace: {e}")
            })?),
            None => None,
        };
        let finalizer_wait = pr
            .spec
            .lifecycle
            .as_ref()
            .and_then(|l| l.wait_for_other_finalizers.as_ref())
            .map(|w| w.timeout().unwrap_or(crate::apis::FINALIZER_WAIT_DEFAULT));
        // What the PublishedResource's conditions show changed: paced, so
        // a burst of changes is one reconcile (and at most one status
        // write) a second.
        let wake_paced = {
            let (queue, key) = (self.queue.clone(), super::Key::Resource(name.clone()));
            move || queue.add_after(key.clone(), super::PACE)
        };
        let ctx = SyncContext {
            agent_name: self.cfg.agent_name.clone(),
            published_resource: name.clone(),
            remote: resolved.remote.clone(),
            local: resolved.local.clone(),
            kcp: self.kcp.clone(),
            cache: crate::controller::store::KcpCache::new(),
            copies: crate::controller::store::Store::new(|o: &DynamicObject| {
                crate::sync::labels::local_key(o).map(|k| k.to_string())
            }),
            namespaces: Default::default(),
            service: self.service.clone(),
            state: self.state.clone(),
            plugins: std::sync::RwLock::new(Arc::new(self.plugin_set(pr, resolved).await?)),
            resync_all: Default::default(),
            resource_filter,
            namespace_filter,
            related_finalizer: crate::sync::labels::related_finalizer(
                pr.spec.related_finalizer(),
                &self.cfg.agent_name,
            ),
            former_related_finalizer: crate::sync::labels::former_related_finalizer(
                pr.spec.related_finalizer(),
                &self.cfg.agent_name,
            ),
            // Validated before the sync starts (unsupported_fields).
            finalizer_wait,
            finalizer_waits: finalizer_wait.map(|timeout| {
                crate::sync::finalizer_wait::FinalizerWaits::new(timeout, wake_paced.clone())
            }),
            workspace_deletion: pr
                .spec
                .lifecycle
                .as_ref()
                .and_then(|l| l.workspace_deletion),
            namespace_metadata: pr.spec.managed_namespace_metadata.clone().map(|m| {
                crate::sync::namespace_meta::NamespaceMetadata::new(m, &self.cfg.agent_name, &name)
            }),
            workspace_paths: pr.spec.enable_workspace_paths == Some(true),
            paths: Default::default(),
            failures: Failures::new(wake_paced.clone()),
            related_kinds: Default::default(),
            related_caches: Default::default(),
            reads: Arc::new(crate::sync::reads::ReadsConfig::of(pr)),
            read_deps: Default::default(),
            plugin_reports: crate::sync::plugin_reports::PluginReports::new(wake_paced),
            convergence: Default::default(),
            recorder: self.kcp_events.clone(),
            resync: self.cfg.resync,
            workers: self.cfg.workers,
            priority: self.cfg.priority,
            in_sync: Default::default(),
        };
        let ctx = Arc::new(ctx);
        let cancel = CancellationToken::new();
        // Owned by `cancel` (kept in `Running`): the controller ends when
        // its PublishedResource stops or changes; until then it is
        // restarted if it ever panics.
        tokio::spawn({
            let (ctx, cancel) = (ctx.clone(), cancel.clone());
            crate::controller::supervise::supervised(
                "sync-controller",
                ctx.published_resource.clone(),
                cancel.clone(),
                move || crate::sync::controller::run(ctx.clone(), cancel.clone()),
            )
        });
        Ok(Some((cancel, ctx)))
    }

    /// Everything of a sync that runs plugin code, built from the plugins'
    /// current versions.
    pub(super) async fn plugin_set(
        &self,
        pr: &PublishedResource,
        resolved: &schema::Resolved,
    ) -> anyhow::Result<PluginSet> {
        Ok(PluginSet {
            namer: self.plugins.namer(pr, resolved.local.namespaced).await?,
            mutator: self.plugins.mutator(pr).await?,
            related: self.plugins.related(pr).await?,
            templates: match pr.spec.related.as_ref().is_some_and(|r| !r.is_empty()) {
                true => Some(
                    self.plugins.text_templates(pr).await?
                        as Arc<dyn crate::sync::ports::Templates>,
                ),
                false => None,
            },
        })
    }
}

/// Convert a metav1.LabelSelector into a selector.
fn label_selector(
    sel: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) -> Result<Selector, String> {
    crate::apis::selector::from_label_selector(sel).map_err(|e| e.to_string())
}
