//! Publishing: turns PublishedResources on the service cluster into
//! APIResourceSchemas in the APIExport, and runs one sync controller per
//! published resource once kcp serves it.
//!
//! The three upstream controllers (apiresourceschema, apiexport, sync) are
//! three steps of one pass here, run whenever a PublishedResource or CRD
//! changes and periodically; each can be disabled with
//! `--disabled-controllers`.

pub mod apiexport;
pub mod builtin;
pub mod schema;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::Resource;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::{reflector, watcher};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::apis::PublishedResource;
use crate::apis::kcp as kcpapi;
use crate::backoff::Backoff;
use crate::health::Health;
use crate::kcp::KcpContext;
use crate::plugin_chain::PluginHost;
use crate::selector::Selector;
use crate::sync::events::Failures;
use crate::sync::state::StateStore;
use crate::sync::syncer::{PluginSet, SyncContext};

/// The shortest time between two publishing passes woken by events.
const PACE: Duration = Duration::from_secs(1);
/// While a shard's virtual workspace does not serve a published resource
/// yet, the longest wait before looking again: kcp gets there within
/// seconds of a binding, which no event the agent watches tells. (A slice
/// without URLs is not polled: its watch tells when a workspace binds.)
const SERVE_POLL_MAX: Duration = Duration::from_secs(5);

pub struct PublishConfig {
    pub agent_name: String,
    pub namespace: String,
    pub selector: String,
    pub disabled: Vec<String>,
    /// How often synced objects are checked again (`--resync-period`).
    pub resync: Duration,
}

struct Running {
    /// What the running sync was built from (PR, generation, schema).
    fingerprint: String,
    /// The WasmPlugin digests its plugin set was built from.
    plugin_versions: String,
    cancel: CancellationToken,
    ctx: Arc<SyncContext>,
}

pub struct Publisher {
    cfg: PublishConfig,
    kcp: KcpContext,
    service: Client,
    plugins: PluginHost,
    running: HashMap<String, Running>,
    events: Recorder,
    health: Arc<Health>,
    /// Wakes the publishing loop (watch events, object failures).
    wake: Arc<Notify>,
    /// The PublishedResources, as the watch last saw them.
    prs: Option<reflector::Store<PublishedResource>>,
    /// Which CRDs the service cluster has.
    crds: Arc<schema::CrdIndex>,
    /// The inputs of the last pass that left nothing pending: a pass over
    /// the same inputs would do nothing, so it is skipped (and sends nothing).
    settled_inputs: Option<u64>,
    /// The state Secrets, one cache for every sync of this agent.
    state: StateStore,
    /// Consumers' Events in kcp, one recorder for every sync of this agent
    /// (its repeat window and backlog bound the agent, not each resource).
    kcp_events: Arc<crate::sync::events::Recorder>,
    /// Per PublishedResource, what its schema step last resolved and
    /// published, with the inputs it came from ([`Publisher::schema_inputs`]):
    /// a pass woken by another resource's change (a CRD, a PR, a plugin)
    /// reuses it, with no CRD read, projection plugin call or schema GET.
    resolved: HashMap<String, (String, Arc<schema::Resolved>)>,
    /// The last pass found a resource that kcp does not serve yet.
    waiting_for_kcp: bool,
}

impl Publisher {
    pub fn new(
        cfg: PublishConfig,
        kcp: KcpContext,
        service: Client,
        plugins: PluginHost,
        health: Arc<Health>,
        events: Recorder,
    ) -> Self {
        let state = StateStore::new(service.clone(), &cfg.namespace);
        Publisher {
            health,
            wake: Arc::new(Notify::new()),
            events,
            cfg,
            kcp,
            service,
            plugins,
            running: HashMap::new(),
            prs: None,
            crds: Default::default(),
            settled_inputs: None,
            state,
            kcp_events: Default::default(),
            resolved: HashMap::new(),
            waiting_for_kcp: false,
        }
    }

    fn enabled(&self, controller: &str) -> bool {
        !self.cfg.disabled.iter().any(|d| d == controller)
    }

    /// Run until cancelled.
    pub async fn run(mut self, cancel: CancellationToken) {
        let wake = self.wake.clone();
        let mut watches = tokio::task::JoinSet::new();
        let prs: Api<PublishedResource> = Api::all(self.service.clone());
        let pr_cfg = watcher::Config::default().labels(&self.cfg.selector);
        let (pr_store, pr_writer) = reflector::store();
        watches.spawn(wake_on_events(
            reflector::reflector(pr_writer, watcher(prs, pr_cfg)).boxed(),
            wake.clone(),
        ));
        self.prs = Some(pr_store.clone());
        let crds: Api<DynamicObject> = Api::all_with(self.service.clone(), &kcpapi::crd());
        // The caches are supervised (restarted on a panic or an end). The
        // reflectors here own their stores' writers, which cannot be made
        // twice: they run once, for the life of the publisher.
        {
            let (index, wake) = (self.crds.clone(), wake.clone());
            watches.spawn(crate::supervise::supervised(
                "crd-watch",
                String::new(),
                cancel.clone(),
                move || feed_crd_index(crds.clone(), index.clone(), wake.clone()),
            ));
        }
        // The recorder owns its queue's receiver: it runs once, for the life
        // of the publisher (it has no fallible step to supervise).
        watches.spawn(self.kcp_events.clone().run());
        {
            let state = self.state.clone();
            watches.spawn(crate::supervise::supervised(
                "state-watch",
                String::new(),
                cancel.clone(),
                move || feed_state_cache(state.clone()),
            ));
        }
        // The slice gains its URLs when the first workspace binds the export:
        // react at once rather than on the next (backed-off) retry. The
        // agent's one watch of the slice (KcpContext::watch_endpoints)
        // publishes them.
        let mut endpoints = self.kcp.endpoints();
        let endpoints_wake = wake.clone();
        watches.spawn(async move {
            while endpoints.changed().await.is_ok() {
                endpoints_wake.notify_one();
            }
        });
        // A WasmPlugin that turns Ready or moves to a new digest: running
        // syncs that use it are restarted with the new code (see fingerprint).
        let mut plugin_changes = self.plugins.registry().subscribe();
        let plugin_wake = wake.clone();
        watches.spawn(async move {
            while plugin_changes.changed().await.is_ok() {
                plugin_wake.notify_one();
            }
        });

        // Something still waiting (kcp not serving a resource yet, a plugin
        // that fails to load) is retried soon, then less and less often:
        // the same failure must not be retried and logged every second.
        let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(60));
        tokio::select! {
            _ = cancel.cancelled() => return,
            r = pr_store.wait_until_ready() => if r.is_err() { return },
        }
        loop {
            let inputs = self.inputs();
            let pending = if self.settled_inputs == Some(inputs) {
                false
            } else {
                self.settled_inputs = None;
                match self.pass().await {
                    Ok(p) => {
                        self.health.ok(crate::health::CHECK_SYNC);
                        if !p {
                            self.settled_inputs = Some(inputs);
                        }
                        p
                    }
                    Err(e) => {
                        let retry_in = backoff.peek();
                        warn!(error = %e, ?retry_in, "publishing pass failed; retrying");
                        self.health
                            .fail(crate::health::CHECK_SYNC, format!("publishing: {e}"));
                        true
                    }
                }
            };
            let idle = if pending && self.waiting_for_kcp {
                backoff.next_delay().min(SERVE_POLL_MAX)
            } else if pending {
                backoff.next_delay()
            } else {
                backoff.reset();
                // Changes wake the loop at once (PublishedResources, CRDs,
                // the slice, WasmPlugins, failing objects); this only heals
                // a missed event, so it can be rare.
                Duration::from_secs(300)
            };
            let passed = tokio::time::Instant::now();
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = wake.notified() => {
                    // Events come in bursts (many objects failing one after
                    // another change the condition's count each time): at
                    // most one pass per PACE, so conditions follow within
                    // a second without a status write per failure.
                    tokio::select! {
                        _ = cancel.cancelled() => break,
                        _ = tokio::time::sleep_until(passed + PACE) => {}
                    }
                }
                _ = tokio::time::sleep(idle) => {}
            }
        }
        for (_, r) in self.running.drain() {
            r.cancel.cancel();
        }
        watches.abort_all();
    }

    /// The PublishedResources, from the watch's store once it has listed.
    async fn published_resources(&self) -> anyhow::Result<Vec<Arc<PublishedResource>>> {
        if let Some(store) = &self.prs {
            let mut prs = store.state();
            // Oldest first: of two resources that publish the same
            // resource, the one that was there first keeps it.
            prs.sort_by(|a, b| {
                (&a.metadata.creation_timestamp, &a.metadata.name)
                    .cmp(&(&b.metadata.creation_timestamp, &b.metadata.name))
            });
            return Ok(prs);
        }
        let api: Api<PublishedResource> = Api::all(self.service.clone());
        let list = api
            .list(&ListParams::default().labels(&self.cfg.selector))
            .await?;
        Ok(list.items.into_iter().map(Arc::new).collect())
    }

    /// Everything a pass reads, hashed: the PublishedResources (any change,
    /// status included), the CRDs, the endpoint slice's URLs, the WasmPlugin
    /// digests in use (and new digests they hold back) and the failing
    /// objects of each running sync.
    fn inputs(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut prs = self.prs.as_ref().map(|s| s.state()).unwrap_or_default();
        prs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for pr in &prs {
            (
                &pr.metadata.name,
                &pr.metadata.uid,
                &pr.metadata.resource_version,
            )
                .hash(&mut h);
            self.wasm_plugins_in_use(pr).1.hash(&mut h);
            self.plugins_held_back(pr).hash(&mut h);
        }
        self.crds.versions().hash(&mut h);
        self.kcp.endpoints().borrow().hash(&mut h);
        let mut running: Vec<_> = self.running.iter().collect();
        running.sort_by_key(|(n, _)| n.as_str());
        for (name, r) in running {
            (name, r.ctx.failures.summary()).hash(&mut h);
        }
        h.finish()
    }

    /// One pass over all PublishedResources. Returns whether something is
    /// still waiting (so the next pass should come soon).
    async fn pass(&mut self) -> anyhow::Result<bool> {
        let api: Api<PublishedResource> = Api::all(self.service.clone());
        let prs = self.published_resources().await?;
        crate::metrics::METRICS
            .published_resources
            .set(prs.len() as i64);
        let mut pending = false;
        self.waiting_for_kcp = false;
        let mut schemas = BTreeMap::new();
        let mut ready = Vec::new();
        // Which PublishedResource publishes each group/resource in kcp.
        let mut owners: HashMap<String, String> = HashMap::new();

        for pr in prs
            .iter()
            .map(|p| &**p)
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        {
            let name = pr.metadata.name.clone().unwrap_or_default();
            let inputs = self.schema_inputs(pr);
            if let Some((seen, resolved)) = self.resolved.get(&name)
                && inputs.as_ref() == Some(seen)
                && pr
                    .status
                    .as_ref()
                    .and_then(|s| s.resource_schema_name.as_deref())
                    == Some(resolved.schema_name.as_str())
            {
                let resolved = resolved.clone();
                if self
                    .claim(&api, &mut owners, &name, &resolved.schema_name)
                    .await
                {
                    if let Some(gr) = schema::group_resource_of(&resolved.schema_name) {
                        schemas.insert(gr.to_string(), resolved.schema_name.clone());
                    }
                    ready.push((pr, resolved));
                }
                continue;
            }
            self.resolved.remove(&name);
            let resolved = match self.resolve(pr).await {
                Ok(r) => r,
                Err(e) => {
                    warn!(published_resource = %name, error = %e, "cannot publish resource");
                    self.set_condition(&api, &name, "False", "InvalidResource", &e.to_string())
                        .await;
                    pending = true;
                    continue;
                }
            };
            if !self
                .claim(&api, &mut owners, &name, &resolved.schema_name)
                .await
            {
                continue;
            }
            if self.enabled("apiresourceschema") {
                match schema::ensure_schema(&self.kcp.export_client, &resolved).await {
                    Ok(true) => {
                        info!(published_resource = %name, schema = %resolved.schema_name, "created APIResourceSchema");
                    }
                    Ok(false) => {}
                    Err(e) => {
                        warn!(published_resource = %name, error = %e, "cannot publish the APIResourceSchema");
                        self.set_condition(
                            &api,
                            &name,
                            "False",
                            "SchemaNotPublished",
                            &e.to_string(),
                        )
                        .await;
                        pending = true;
                        continue;
                    }
                }
                if pr
                    .status
                    .as_ref()
                    .and_then(|s| s.resource_schema_name.as_deref())
                    != Some(resolved.schema_name.as_str())
                {
                    let p = json!({"status": {"resourceSchemaName": resolved.schema_name}});
                    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&p))
                        .await?;
                }
            }
            if let Some(gr) = schema::group_resource_of(&resolved.schema_name) {
                schemas.insert(gr.to_string(), resolved.schema_name.clone());
            }
            let resolved = Arc::new(resolved);
            if let Some(inputs) = inputs
                && self.enabled("apiresourceschema")
            {
                self.resolved.insert(name, (inputs, resolved.clone()));
            }
            ready.push((pr, resolved));
        }
        self.resolved.retain(|name, _| {
            prs.iter()
                .any(|p| p.metadata.name.as_deref() == Some(name.as_str()))
        });

        if self.enabled("apiexport") {
            let prs: Vec<&PublishedResource> = ready.iter().map(|(pr, _)| *pr).collect();
            let claims = permission_claims(&prs, &schemas);
            apiexport::reconcile(
                &self.kcp.export_client,
                &self.kcp.export_name,
                &self.cfg.agent_name,
                &schemas,
                &claims,
            )
            .await?;
        }

        if self.enabled("sync") {
            pending |= self.manage_sync(&api, ready).await;
        }
        Ok(pending)
    }

    /// Record that `name` publishes the group/resource of `schema_name`,
    /// unless an older PublishedResource already does: then `name` is
    /// refused (its condition says which resource holds it) and nothing of
    /// it is published or synced. Two syncs of one resource would fight over
    /// every object, and the APIExport can list it only once.
    async fn claim(
        &self,
        api: &Api<PublishedResource>,
        owners: &mut HashMap<String, String>,
        name: &str,
        schema_name: &str,
    ) -> bool {
        let Some(gr) = schema::group_resource_of(schema_name) else {
            return true;
        };
        match owners.get(gr) {
            Some(owner) if owner != name => {
                let message = format!(
                    "PublishedResource {name}: spec.projection: {gr} is already published by \
                     PublishedResource {owner}, which is older; give this one another \
                     spec.projection.group or spec.projection.resource, or delete one of them"
                );
                warn!(published_resource = %name, %owner, resource = %gr, "two PublishedResources publish the same resource; the newer is refused");
                self.set_condition(api, name, "False", "ResourceConflict", &message)
                    .await;
                false
            }
            _ => {
                owners.insert(gr.to_string(), name.to_string());
                true
            }
        }
    }

    /// What the schema step of `pr` depends on: its spec (uid and
    /// generation), its labels and annotations, the resourceVersion of its
    /// CRD and the WasmPlugin code it uses. `None` while that cannot be told
    /// (the CRD index has not listed). Labels and annotations are in it so
    /// that touching the PublishedResource makes its schema step run again
    /// (repairing an APIResourceSchema someone edited), as upstream's
    /// controller does on every event of the resource; its status is not, so
    /// the agent's own condition writes do not.
    /// A built-in kind (no CRD) is described from the cluster's OpenAPI once
    /// per spec: it changes only when the cluster is upgraded, which
    /// restarts the agent's connections (and a restarted agent resolves
    /// again).
    fn schema_inputs(&self, pr: &PublishedResource) -> Option<String> {
        if !self.crds.listed() {
            return None;
        }
        let r = &pr.spec.resource;
        let crd = self
            .crds
            .version_of(&r.api_group, &r.kind)
            .unwrap_or_else(|| "built-in".into());
        let metadata = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (&pr.metadata.labels, &pr.metadata.annotations).hash(&mut h);
            h.finish()
        };
        Some(format!(
            "{}/{}/{metadata:x}/{crd}/{}",
            pr.metadata.uid.as_deref().unwrap_or_default(),
            pr.metadata.generation.unwrap_or_default(),
            self.wasm_plugins_in_use(pr).1
        ))
    }

    async fn resolve(&self, pr: &PublishedResource) -> anyhow::Result<schema::Resolved> {
        let name = pr.metadata.name.as_deref().unwrap_or_default();
        // The CRD refuses these, but a CRD installed before that validation
        // existed lets them through: never publish a resource whose settings
        // would be silently ignored.
        let unsupported = crate::apis::unsupported_fields(&pr.spec);
        anyhow::ensure!(
            unsupported.is_empty(),
            "PublishedResource {name}: {}",
            unsupported.join("; ")
        );
        let crd = schema::find_crd(&self.service, &self.crds, pr).await?;
        // Version selection and projection both run in the projector plugin;
        // the service side keeps the CRD's own storage version.
        let projected = self.plugins.project(pr, &crd).await?;
        let resolved = schema::to_schema(&crd, &projected, &self.cfg.agent_name);
        let (group, plural) = (&resolved.remote.ar.group, &resolved.remote.ar.plural);
        anyhow::ensure!(
            !schema::served_by_kcp(group, plural),
            "PublishedResource {name}: spec.projection.group: kcp serves {} {plural} in every \
             workspace itself; published as they are, the agent would take hold of the consumers' \
             own {plural}. Set spec.projection.group to an API group of your own (e.g. \
             `{}.example.com`), or spec.projection.resource to another name",
            if group.is_empty() {
                "core/v1".to_string()
            } else {
                group.clone()
            },
            resolved.remote.ar.kind.to_lowercase()
        );
        let unsupported = crate::apis::unsupported_for_scope(&pr.spec, resolved.remote.namespaced);
        anyhow::ensure!(
            unsupported.is_empty(),
            "PublishedResource {name}: {}",
            unsupported.join("; ")
        );
        Ok(resolved)
    }

    /// Start, restart or stop sync controllers to match the ready resources.
    async fn manage_sync(
        &mut self,
        api: &Api<PublishedResource>,
        ready: Vec<(&PublishedResource, Arc<schema::Resolved>)>,
    ) -> bool {
        let mut pending = false;
        let mut wanted = HashMap::new();
        for (pr, resolved) in ready {
            let name = pr.metadata.name.clone().unwrap_or_default();
            if !pr.spec.sync_enabled() {
                continue;
            }
            // A WasmPlugin moved to new code is swapped into the running
            // sync (see below), so every object runs the new digest from
            // then on, with no restart of the sync or the agent.
            let (plugins_in_use, plugin_versions) = self.wasm_plugins_in_use(pr);
            let fingerprint = format!(
                "{}/{}/{}",
                pr.metadata.uid.as_deref().unwrap_or(""),
                pr.metadata.generation.unwrap_or(0),
                resolved.schema_name
            );
            let syncing_message = if plugins_in_use.is_empty() {
                "objects are being synchronized".to_string()
            } else {
                format!("objects are being synchronized (WasmPlugins in use: {plugins_in_use})")
            };
            wanted.insert(name.clone(), fingerprint.clone());
            if let Some(r) = self.running.get(&name)
                && r.fingerprint == fingerprint
                && r.plugin_versions != plugin_versions
            {
                match self.plugin_set(pr, &resolved).await {
                    Ok(set) => {
                        info!(published_resource = %name, plugins = %plugins_in_use, "swapping in new plugin code");
                        r.ctx.swap_plugins(set);
                        if let Some(r) = self.running.get_mut(&name) {
                            r.plugin_versions = plugin_versions.clone();
                        }
                    }
                    Err(e) => {
                        // The old code keeps running; say why the new is not used.
                        warn!(published_resource = %name, error = %e, "cannot use the new plugin code");
                        self.set_condition(api, &name, "False", "SyncNotStarted", &e.to_string())
                            .await;
                        pending = true;
                        continue;
                    }
                }
            }
            if let Some(r) = self.running.get(&name)
                && r.fingerprint == fingerprint
            {
                // Never Ready while objects keep failing, or while a plugin
                // holds back new code.
                let (status, reason, msg) =
                    self.sync_condition(pr, r.ctx.failures.summary(), &syncing_message);
                self.set_condition(api, &name, status, reason, &msg).await;
                continue;
            }
            match self.start_sync(pr, &resolved).await {
                Ok(Some((cancel, ctx))) => {
                    if let Some(old) = self.running.insert(
                        name.clone(),
                        Running {
                            fingerprint,
                            plugin_versions,
                            cancel,
                            ctx,
                        },
                    ) {
                        old.cancel.cancel();
                    }
                    let (status, reason, msg) = self.sync_condition(pr, None, &syncing_message);
                    self.set_condition(api, &name, status, reason, &msg).await;
                }
                // No workspace has bound the export yet: the slice's watch
                // wakes the loop when one does (the URLs are part of the
                // inputs), so nothing is polled meanwhile.
                Ok(None) if self.kcp.endpoints().borrow().is_empty() => {}
                // A shard's virtual workspace does not serve the resource
                // yet: no event says when it does, so look again soon.
                Ok(None) => {
                    pending = true;
                    self.waiting_for_kcp = true;
                }
                Err(e) => {
                    warn!(published_resource = %name, error = %e, "cannot start syncing");
                    self.set_condition(api, &name, "False", "SyncNotStarted", &e.to_string())
                        .await;
                    pending = true;
                }
            }
        }
        self.running.retain(|name, r| {
            if wanted.contains_key(name) {
                return true;
            }
            info!(published_resource = %name, "stopping sync controller");
            r.cancel.cancel();
            crate::metrics::METRICS.forget_published_resource(name);
            false
        });
        pending
    }

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
    fn wasm_plugins_in_use(&self, pr: &PublishedResource) -> (String, String) {
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

    /// The Ready condition of a running sync: False while objects fail, or
    /// while a WasmPlugin it uses holds back a new digest that failed its
    /// checks (objects keep syncing with the previous one); True otherwise.
    fn sync_condition(
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
    async fn start_sync(
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
        let ctx = SyncContext {
            agent_name: self.cfg.agent_name.clone(),
            published_resource: name.clone(),
            remote: resolved.remote.clone(),
            local: resolved.local.clone(),
            kcp: self.kcp.clone(),
            cache: crate::sync::cache::KcpCache::new(),
            copies: crate::sync::cache::Store::new(|o: &DynamicObject| {
                crate::sync::controller::local_key(o).map(|k| k.to_string())
            }),
            namespaces: Default::default(),
            service: self.service.clone(),
            state: self.state.clone(),
            plugins: std::sync::RwLock::new(Arc::new(self.plugin_set(pr, resolved).await?)),
            resync_all: Default::default(),
            resource_filter,
            namespace_filter,
            workspace_paths: pr.spec.enable_workspace_paths == Some(true),
            paths: Default::default(),
            failures: Failures::new(self.wake.clone()),
            related_kinds: Default::default(),
            related_caches: Default::default(),
            convergence: Default::default(),
            recorder: self.kcp_events.clone(),
            resync: self.cfg.resync,
            in_sync: Default::default(),
        };
        let ctx = Arc::new(ctx);
        let cancel = CancellationToken::new();
        // Owned by `cancel` (kept in `Running`): the controller ends when
        // its PublishedResource stops or changes; until then it is
        // restarted if it ever panics.
        tokio::spawn({
            let (ctx, cancel) = (ctx.clone(), cancel.clone());
            crate::supervise::supervised(
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
    async fn plugin_set(
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
                        as Arc<dyn crate::sync::related::Templates>,
                ),
                false => None,
            },
        })
    }

    /// The type of the condition this agent writes on PublishedResources:
    /// `Ready`, as upstream; with a partitioned endpoint slice
    /// `<slice>/Ready`, one per agent, since each sees only its partition's
    /// objects (sharing one condition, agents would overwrite each other's
    /// failures on every pass).
    fn condition_type(&self) -> String {
        match &self.kcp.partition {
            Some(_) => format!("{}/Ready", self.kcp.slice_name),
            None => "Ready".into(),
        }
    }

    async fn set_condition(
        &self,
        api: &Api<PublishedResource>,
        name: &str,
        status: &str,
        reason: &str,
        message: &str,
    ) {
        // The watch's copy: the condition is compared without a request.
        let cached = self
            .prs
            .as_ref()
            .and_then(|s| s.get(&reflector::ObjectRef::new(name)));
        let pr = match cached {
            Some(pr) => pr,
            None => match api.get_status(name).await {
                Ok(pr) => Arc::new(pr),
                Err(_) => return,
            },
        };
        let current = pr
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let type_ = self.condition_type();
        if current.iter().any(|c| {
            c.type_ == type_ && c.status == status && c.reason == reason && c.message == message
        }) {
            return;
        }
        if status == "False" {
            // Events say the same as the condition, where `kubectl describe` shows them.
            let ev = Event {
                type_: EventType::Warning,
                reason: reason.to_string(),
                note: Some(crate::recorder::note(message)),
                action: "Reconcile".into(),
                secondary: None,
            };
            if let Err(e) = self.events.publish(&ev, &pr.object_ref(&())).await {
                warn!(published_resource = %name, error = %e, "cannot record event");
            }
        }
        let now = k8s_openapi::jiff::Timestamp::now();
        let ours = json!({
            "type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": now.to_string(),
        });
        let p = if self.kcp.partition.is_some() {
            // The agents of the other partitions keep their conditions: the
            // list is written whole (a merge patch replaces arrays), so only
            // over the version it was read from (a conflict is retried by
            // the pass its watch event wakes).
            let mut conditions: Vec<serde_json::Value> = current
                .iter()
                .filter(|c| c.type_ != type_)
                .filter_map(|c| serde_json::to_value(c).ok())
                .collect();
            conditions.push(ours);
            json!({
                "metadata": {"resourceVersion": pr.metadata.resource_version},
                "status": {"conditions": conditions},
            })
        } else {
            json!({"status": {"conditions": [ours]}})
        };
        if let Err(e) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&p))
            .await
        {
            warn!(published_resource = %name, error = %e, "cannot update status condition");
        }
    }
}

/// The APIExport's permission claims, as upstream: events always;
/// namespaces as soon as one resource filters on them or has related
/// resources; LogicalClusters with workspace paths; and every related
/// resource's kcp-side type that the export does not own (`schemas`, by
/// group/resource), with its identity hash.
fn permission_claims(
    prs: &[&PublishedResource],
    schemas: &BTreeMap<String, String>,
) -> Vec<apiexport::Claim> {
    let mut claims = vec![apiexport::Claim::new("", "events")];
    let namespaces = apiexport::Claim::new("", "namespaces");
    let related: Vec<_> = prs
        .iter()
        .flat_map(|pr| pr.spec.related.iter().flatten())
        .collect();
    let namespace_filter = prs.iter().any(|pr| {
        pr.spec
            .filter
            .as_ref()
            .is_some_and(|f| f.namespace.is_some())
    });
    if namespace_filter || !related.is_empty() {
        claims.push(namespaces);
    }
    if prs
        .iter()
        .any(|pr| pr.spec.enable_workspace_paths == Some(true))
    {
        claims.push(apiexport::Claim::new("core.kcp.io", "logicalclusters"));
    }
    for r in related {
        let (group, _, resource) = r.kcp_gvr();
        // Schema names spell the core group `core`.
        let key_group = if group.is_empty() {
            "core"
        } else {
            group.as_str()
        };
        let owned = schemas.contains_key(&format!("{resource}.{key_group}"));
        let claim = apiexport::Claim {
            group,
            resource,
            identity_hash: r.identity_hash.clone().unwrap_or_default(),
        };
        if !owned && !claims.contains(&claim) {
            claims.push(claim);
        }
    }
    claims
}

/// Keep the agent's one cache of state Secrets current (every sync reads
/// it; a sync in steady state reads no Secret from the API).
async fn feed_state_cache(state: StateStore) {
    use crate::sync::cache::Change;
    use crate::sync::labels::OBJECT_STATE_LABEL;
    // Also the service cluster's heartbeat: re-opened every few seconds, so
    // a server that hangs shows on /readyz (crate::client::heartbeat).
    let cfg = watcher::Config::default()
        .labels(&format!("{OBJECT_STATE_LABEL}=true"))
        .timeout(crate::client::heartbeat("service"));
    let cache = state.cache();
    crate::watch::drive(
        watcher(state.api(), cfg),
        |ev| {
            cache.feed(Change::from(ev), |_, _| vec![]);
        },
        |e, retry, report| {
            if report {
                warn!(error = %e, ?retry, "watching state Secrets failed; reading them one by one meanwhile (docs/rbac.md: list and watch Secrets in the agent's namespace)")
            } else {
                debug!(error = %e, ?retry, "watching state Secrets failed again")
            }
        },
    )
    .await;
}

/// Keep `index` current from a watch of the CRDs, waking the publisher on
/// every change.
async fn feed_crd_index(api: Api<DynamicObject>, index: Arc<schema::CrdIndex>, wake: Arc<Notify>) {
    use crate::sync::cache::Change;
    crate::watch::drive(
        watcher(api, watcher::Config::default()),
        |ev| {
            index.feed(Change::from(ev));
            wake.notify_one();
        },
        |e, retry, report| {
            if report {
                warn!(error = %e, ?retry, "watching CustomResourceDefinitions failed")
            } else {
                debug!(error = %e, ?retry, "watching CustomResourceDefinitions failed again")
            }
        },
    )
    .await;
}

async fn wake_on_events<S, T>(stream: S, wake: Arc<Notify>)
where
    S: futures::Stream<Item = Result<watcher::Event<T>, watcher::Error>>,
{
    crate::watch::drive(
        stream,
        |_| wake.notify_one(),
        |e, retry, report| {
            if report {
                warn!(error = %e, ?retry, "watch failed")
            } else {
                debug!(error = %e, ?retry, "watch failed again")
            }
        },
    )
    .await;
}

/// Convert a metav1.LabelSelector into a selector.
fn label_selector(
    sel: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) -> Result<Selector, String> {
    crate::selector::from_label_selector(sel).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(yaml: &str) -> PublishedResource {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn names(claims: &[apiexport::Claim]) -> Vec<String> {
        let mut v: Vec<String> = claims
            .iter()
            .map(|c| format!("{}/{}/{}", c.group, c.resource, c.identity_hash))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn claims_follow_related_resources() {
        let plain =
            pr("{metadata: {name: a}, spec: {resource: {apiGroup: example.com, kind: CronTab}}}");
        let schemas = BTreeMap::from([(
            "crontabs.example.com".to_string(),
            "v1.crontabs.example.com".to_string(),
        )]);
        assert_eq!(names(&permission_claims(&[&plain], &schemas)), ["/events/"]);
        let related = pr(r#"
metadata: {name: b}
spec:
  resource: {apiGroup: example.com, kind: CronTab}
  related:
    - {identifier: s, origin: service, kind: Secret, object: {reference: {path: a}}}
    - {identifier: c, origin: kcp, kind: ConfigMap, object: {reference: {path: a}}}
    - {identifier: o, origin: service, group: example.com, version: v1, resource: crontabs, object: {reference: {path: a}}}
    - {identifier: f, origin: kcp, group: other.io, version: v1, resource: things, identityHash: abc, object: {reference: {path: a}}}
    - {identifier: p, origin: service, kind: Secret, projection: {resource: configmaps}, object: {reference: {path: a}}}
"#);
        assert_eq!(
            names(&permission_claims(&[&plain, &related], &schemas)),
            [
                "/configmaps/",
                "/events/",
                "/namespaces/",
                "/secrets/",
                "other.io/things/abc"
            ]
        );
        // A core type the export itself serves (pods published by another
        // PublishedResource) is owned, not claimed.
        let pods = pr(r#"
metadata: {name: c}
spec:
  resource: {apiGroup: apps, kind: Deployment}
  related:
    - {identifier: pods, origin: service, version: v1, resource: pods, object: {reference: {path: a}}}
"#);
        let owned = BTreeMap::from([("pods.core".to_string(), "v1.pods.core".to_string())]);
        assert_eq!(
            names(&permission_claims(&[&pods], &owned)),
            ["/events/", "/namespaces/"]
        );
    }
}
