#!/usr/bin/env bash
# Checks charts/syncweave with a helm binary: lint, then render the values
# files here and assert on the manifests. One line per check; exits non-zero
# if any fails.
#   HELM=/path/to/helm tests/chart/check.sh
# Default helm: $SYNCWEAVE_TOOLS_DIR/helm (~/.cache/syncweave/helm), which
# tests/setup.sh builds.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
chart=$repo/charts/syncweave
helm=${HELM:-${SYNCWEAVE_TOOLS_DIR:-$HOME/.cache/syncweave}/helm}
if ! [ -x "$helm" ]; then
  echo "no helm at $helm: run tests/setup.sh, or set HELM=/path/to/helm" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

passed=0 failed=0
ok() { printf 'ok   %s\n' "$1"; passed=$((passed + 1)); }
not_ok() {
  printf 'FAIL %s\n' "$1"
  [ -n "${2:-}" ] && printf '%s\n' "$2" | head -20 | sed 's/^/     /'
  failed=$((failed + 1))
}

# render NAME [helm template args…]: manifests to $work/NAME.yaml, errors to
# $work/NAME.err (without helm's notice about the files/crds link).
render() {
  local name=$1
  shift
  "$helm" template syncweave "$chart" --namespace syncweave "$@" \
    >"$work/$name.yaml" 2>"$work/$name.raw"
  local rc=$?
  grep -v 'found symbolic link in path' "$work/$name.raw" >"$work/$name.err"
  return $rc
}

# doc NAME KIND: the documents of that kind in a rendered file.
doc() {
  awk -v kind="kind: $2" '
    /^---/ { if (keep) printf "%s", buf; buf = ""; keep = 0; next }
    { buf = buf $0 "\n"; if ($0 == kind) keep = 1 }
    END { if (keep) printf "%s", buf }
  ' "$work/$1.yaml"
}

# args NAME: the agent container's arguments, one per line, unquoted.
args() {
  doc "$1" Deployment | awk '
    /^          args:/ { on = 1; next }
    on && /^          [a-zA-Z]/ { on = 0 }
    on { sub(/^ *- /, ""); gsub(/^"|"$/, ""); print }
  '
}

# expect DESCRIPTION TEXT NEEDLE…: every needle (a fixed string) is in TEXT.
expect() {
  local what=$1 text=$2
  shift 2
  local n
  for n in "$@"; do
    if ! grep -qF -- "$n" <<<"$text"; then
      not_ok "$what" "missing: $n"
      return
    fi
  done
  ok "$what"
}

# refuse DESCRIPTION TEXT NEEDLE…: no needle is in TEXT.
refuse() {
  local what=$1 text=$2
  shift 2
  local n
  for n in "$@"; do
    if grep -qF -- "$n" <<<"$text"; then
      not_ok "$what" "unexpected: $(grep -F -- "$n" <<<"$text" | head -3)"
      return
    fi
  done
  ok "$what"
}

# must_fail DESCRIPTION NAME MESSAGE [helm args…]: rendering fails with MESSAGE.
must_fail() {
  local what=$1 name=$2 message=$3
  shift 3
  if render "$name" "$@"; then
    not_ok "$what" "rendered without error"
  elif grep -qF -- "$message" "$work/$name.err"; then
    ok "$what"
  else
    not_ok "$what" "error does not say \"$message\": $(cat "$work/$name.err")"
  fi
}

upstream=(--values "$here/upstream-values.yaml")
init=(--values "$here/init-values.yaml")

# --- lint ---------------------------------------------------------------------
for f in upstream-values.yaml init-values.yaml; do
  if "$helm" lint --strict "$chart" --namespace syncweave --values "$here/$f" >"$work/lint.out" 2>&1; then
    ok "helm lint --strict with $f"
  else
    not_ok "helm lint --strict with $f" "$(grep -v 'found symbolic link' "$work/lint.out")"
  fi
done

# --- role=sync with an upstream values file -------------------------------------
if render upstream "${upstream[@]}"; then
  ok "helm template with upstream-values.yaml (upstream names only)"
else
  not_ok "helm template with upstream-values.yaml (upstream names only)" "$(cat "$work/upstream.err")"
fi
a=$(args upstream)
expect "sync: runs the sync role in the release namespace" "$a" "sync" "--namespace=syncweave"
expect "sync: apiExportEndpointSliceName -> --apiexportendpointslice-ref" "$a" "--apiexportendpointslice-ref=example.com"
expect "sync: agentName -> --agent-name" "$a" "--agent-name=e2e-agent"
expect "sync: publishedResourceSelector -> --published-resource-selector (quoted)" "$a" \
  "--published-resource-selector=app.example.com/tier in (gold, silver)"
expect "sync: enableLeaderElection -> --enable-leader-election=true" "$a" "--enable-leader-election=true"
expect "sync: kubeconfigHostOverride and kubeconfigCAFileOverride passed on" "$a" \
  "--kubeconfig-host-override=https://kcp.example.com:6443/clusters/root:provider" \
  "--kubeconfig-ca-file-override=/etc/api-syncagent/kcp/ca.crt"
expect "sync: kcp kubeconfig read from the mounted Secret" "$a" "--kcp-kubeconfig=/etc/api-syncagent/kcp/kubeconfig"
expect "sync: leaderElect -> --leader-elect-* timings" "$a" \
  "--leader-elect-lease-duration=15s" "--leader-elect-renew-deadline=10s" "--leader-elect-retry-period=2s"
expect "sync: rateLimits -> client-side QPS/burst flags for both servers" "$a" \
  "--kcp-qps=0" "--kcp-burst=200" "--service-qps=0" "--service-burst=200"
refuse "sync: in-cluster service access (no --kubeconfig without the kubeconfig value)" "$a" "--kubeconfig="
if [ "$(tail -1 <<<"$a")" = "--log-format=Console" ] &&
  [ "$(grep -n -- '--log-format=JSON' <<<"$a" | cut -d: -f1)" -lt "$(grep -n -- '--log-format=Console' <<<"$a" | cut -d: -f1)" ]; then
  ok "sync: extraFlags appended after the chart's flags (so they win)"
else
  not_ok "sync: extraFlags appended after the chart's flags (so they win)" "$a"
fi
d=$(doc upstream Deployment)
expect "sync: kcpKubeconfig Secret mounted at /etc/api-syncagent/kcp" "$d" \
  "secretName: \"kcp-kubeconfig\"" "mountPath: /etc/api-syncagent/kcp"
expect "sync: upstream image replaced by syncweave's" "$d" 'image: "ghcr.io/syncweave/syncweave:'
refuse "sync: upstream image not used" "$d" "kcp-dev/api-syncagent"
expect "sync: replicas, resources, pull secrets, hostAliases" "$d" "replicas: 2" "memory: 768Mi" \
  "- name: regcred" "- name: mirror-pull-secret" "ip: 10.0.0.10" "- kcp.example.com"
expect "sync: nodeSelector, tolerations, affinity" "$d" "kubernetes.io/os: linux" "value: platform" \
  "topologyKey: kubernetes.io/hostname"
expect "sync: extraVolumes and extraVolumeMounts" "$d" "name: corporate-ca" "mountPath: /etc/ssl/corporate"
expect "sync: extraLabels, extraAnnotations and annotations" "$d" "example.com/team: platform" \
  'example.com/scrape: "true"' "example.com/deployment-note: managed by helm"
expect "sync: securityContext.pod from values, read-only root fs kept" "$d" "runAsUser: 65534" \
  "runAsNonRoot: true" "readOnlyRootFilesystem: true" "allowPrivilegeEscalation: false"
expect "sync: plugin cache is an emptyDir" "$d" "name: plugin-cache" "emptyDir:" \
  "mountPath: /var/cache/syncweave" "value: /var/cache/syncweave"
expect "sync: /healthz and /readyz probes on --health-address" "$d" "path: /healthz" "path: /readyz" \
  "--health-address=0.0.0.0:8081"
sa=$(doc upstream ServiceAccount)
expect "sync: ServiceAccount 'syncweave' with serviceAccount.annotations" "$sa" "name: syncweave" \
  "example.com/owner: platform-team" "automountServiceAccountToken: true"
expect "sync: crds.enabled installs the PublishedResource and WasmPlugin CRDs" "$(doc upstream CustomResourceDefinition)" \
  "name: publishedresources.syncagent.kcp.io" "name: wasmplugins.syncweave.dev"
rbac=$(doc upstream ClusterRole; doc upstream Role)
expect "sync: RBAC for PublishedResources, WasmPlugins, CRDs, namespaces" "$rbac" \
  '["publishedresources"]' '["publishedresources/status"]' '["wasmplugins"]' '["wasmplugins/status"]' \
  '["customresourcedefinitions"]' '["namespaces"]'
expect "sync: state Secrets and Leases in the agent namespace, Events in default" "$rbac" \
  '["secrets"]' '["get", "list", "watch", "create", "update"]' '["leases"]' 'namespace: default' '["events.k8s.io"]'
refuse "sync: no wildcard RBAC by default" "$rbac" '"*"'
expect "sync: namespaces may be patched (managedNamespaceMetadata), not deleted by default" "$rbac" \
  'verbs: ["get", "list", "watch", "create", "patch"]'
render nsdelete "${upstream[@]}" --set rbac.deleteNamespaces=true &&
  expect "sync: rbac.deleteNamespaces adds delete on namespaces" "$(doc nsdelete ClusterRole)" \
    'verbs: ["get", "list", "watch", "create", "patch", "delete"]' ||
  not_ok "sync: rbac.deleteNamespaces adds delete on namespaces" "$(cat "$work/nsdelete.err")"
expect "sync: RBAC bound to the ServiceAccount" "$(doc upstream ClusterRoleBinding; doc upstream RoleBinding)" \
  "name: syncweave" "namespace: syncweave"

refuse "sync: no debug endpoint by default (debugPort 0)" "$a" "--debug-address"

# --- variations --------------------------------------------------------------------
render debug "${upstream[@]}" --set debugPort=8086 &&
  expect "sync: debugPort -> --debug-address on loopback only" "$(args debug)" \
    "--debug-address=127.0.0.1:8086" ||
  not_ok "sync: debugPort -> --debug-address on loopback only" "$(cat "$work/debug.err")"

render e2e "${upstream[@]}" --values "$here/e2e-values.yaml" &&
  expect "sync: rbac.publishedResources grants the published objects" "$(doc e2e ClusterRole)" \
    'apiGroups: ["example.com"]' 'resources: ["crontabs"]' \
    'verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]' ||
  not_ok "sync: rbac.publishedResources grants the published objects" "$(cat "$work/e2e.err")"

render reads "${upstream[@]}" --set 'rbac.pluginReads[0].apiGroups[0]=' \
    --set 'rbac.pluginReads[0].resources[0]=configmaps' &&
  expect "sync: rbac.pluginReads grants read-only access for plugin reads" "$(doc reads ClusterRole)" \
    '# Service-cluster kinds plugins read (spec.reads.service): read-only.' \
    'apiGroups: [""]' 'resources: ["configmaps"]' 'verbs: ["get", "list", "watch"]' ||
  not_ok "sync: rbac.pluginReads grants read-only access for plugin reads" "$(cat "$work/reads.err")"

render export --set kcpKubeconfig=kcp-kubeconfig --set apiExportName=my-export &&
  expect "sync: apiExportName (older upstream name) -> the slice kcp names after the export" "$(args export)" \
    "--apiexportendpointslice-ref=my-export" "--agent-name=syncweave" ||
  not_ok "sync: apiExportName (older upstream name) -> the slice kcp names after the export" "$(cat "$work/export.err")"

render both --set kcpKubeconfig=k --set apiExportName=my-export --set apiExportEndpointSliceName=my-slice &&
  expect "sync: apiExportEndpointSliceName wins over apiExportName" "$(args both)" \
    "--apiexportendpointslice-ref=my-slice" ||
  not_ok "sync: apiExportEndpointSliceName wins over apiExportName" "$(cat "$work/both.err")"

render nocrds "${upstream[@]}" --set crds.enabled=false &&
  refuse "sync: crds.enabled=false installs no CRD" "$(cat "$work/nocrds.yaml")" "kind: CustomResourceDefinition" ||
  not_ok "sync: crds.enabled=false installs no CRD" "$(cat "$work/nocrds.err")"

render pvc "${upstream[@]}" --set pluginCache.existingClaim=compiled-plugins &&
  expect "sync: pluginCache.existingClaim mounts that PVC instead of an emptyDir" "$(doc pvc Deployment)" \
    "claimName: \"compiled-plugins\"" "mountPath: /var/cache/syncweave" &&
  refuse "sync: no emptyDir cache when a claim is named" "$(doc pvc Deployment)" "sizeLimit: 1Gi" ||
  not_ok "sync: pluginCache.existingClaim mounts that PVC instead of an emptyDir" "$(cat "$work/pvc.err")"
render cachesize "${upstream[@]}" --set pluginCache.sizeLimit=300Mi &&
  expect "sync: the agent keeps its plugin cache within the volume's sizeLimit" "$(doc cachesize Deployment)" \
    "name: SYNCWEAVE_CACHE_MAX_SIZE" 'value: "300Mi"' "sizeLimit: 300Mi" ||
  not_ok "sync: the agent keeps its plugin cache within the volume's sizeLimit" "$(cat "$work/cachesize.err")"
render remote "${upstream[@]}" --set kubeconfig=service-kubeconfig --set 'disabledControllers={apiexport,apiresourceschema}' &&
  expect "sync: kubeconfig Secret mounted and passed as --kubeconfig" "$(args remote; doc remote Deployment)" \
    "--kubeconfig=/etc/api-syncagent/cluster/kubeconfig" 'secretName: "service-kubeconfig"' \
    "mountPath: /etc/api-syncagent/cluster" "--disabled-controllers=apiexport,apiresourceschema" &&
  refuse "sync: no RBAC on this cluster when the service cluster is elsewhere" "$(cat "$work/remote.yaml")" \
    "kind: ClusterRole" "kind: Role" ||
  not_ok "sync: kubeconfig Secret mounted and passed as --kubeconfig" "$(cat "$work/remote.err")"

render custom --set kcpKubeconfig=k --set apiExportEndpointSliceName=s --set image.repository=registry.local/syncweave \
  --set image.tag=dev --set 'rbac.pluginConfigMapNamespaces={plugins}' --set enableLeaderElection=false &&
  expect "sync: own image, configmap:// namespaces, no Lease rule without leader election" \
    "$(doc custom Deployment; doc custom Role)" 'image: "registry.local/syncweave:dev"' \
    "--enable-leader-election=false" "namespace: plugins" '["configmaps"]' \
    "    verbs: [\"get\", \"list\", \"watch\"]" &&
  refuse "sync: no Lease rule without leader election" "$(doc custom Role)" '["leases"]' ||
  not_ok "sync: own image, configmap:// namespaces, no Lease rule without leader election" "$(cat "$work/custom.err")"

render trust "${upstream[@]}" --set 'rbac.pluginSecretNamespaces={plugins}' \
  --set 'rbac.pluginConfigMapNamespaces={plugins}' --set pluginRegistryCA.configMap=registry-ca &&
  expect "sync: pull-Secret namespaces get Secrets (get only), the registry CA is mounted" \
    "$(doc trust Role; doc trust Deployment)" 'name: "syncweave:syncweave:plugin-secrets"' \
    '["secrets"]' '    verbs: ["get"]' "name: SYNCWEAVE_PLUGIN_CA_FILE" \
    "value: /etc/syncweave/plugin-registry-ca/ca.crt" 'name: "registry-ca"' &&
  refuse "sync: no registry CA unless named" "$(doc plain Deployment 2>/dev/null; doc custom Deployment)" \
    "SYNCWEAVE_PLUGIN_CA_FILE" ||
  not_ok "sync: pull-Secret namespaces get Secrets (get only), the registry CA is mounted" "$(cat "$work/trust.err")"

# --- role=init -----------------------------------------------------------------------
if render init "${init[@]}"; then
  ok "helm template with init-values.yaml"
else
  not_ok "helm template with init-values.yaml" "$(cat "$work/init.err")"
fi
a=$(args init)
expect "init: runs the init role against kcp" "$a" "init" "--kubeconfig=/etc/init-agent/kcp/kubeconfig" \
  "--config-workspace=root:init-config" "--init-target-selector=team=platform" \
  "--enable-leader-election=false"
[ "$(tail -1 <<<"$a")" = "--log-debug" ] && ok "init: extraFlags appended" || not_ok "init: extraFlags appended" "$a"
refuse "init: no sync flags" "$a" "--apiexportendpointslice-ref" "--kcp-kubeconfig" "--namespace=" "--service-qps"
expect "init: the kcp rate limit" "$a" "--kcp-qps=0" "--kcp-burst=200"
expect "init: kcp kubeconfig Secret mounted, plugin cache, probes" "$(doc init Deployment)" \
  'secretName: "kcp-init-kubeconfig"' "mountPath: /etc/init-agent/kcp" "name: plugin-cache" \
  "path: /readyz" "app.kubernetes.io/component: init"
refuse "init: no RBAC or CRDs on the hosting cluster (the init agent uses only kcp)" "$(cat "$work/init.yaml")" \
  "kind: ClusterRole" "kind: Role" "kind: CustomResourceDefinition"
expect "init: its own ServiceAccount" "$(doc init ServiceAccount)" "name: syncweave"
refuse "init: no Lease namespace without leader election" "$a" "--leader-election-namespace"
if render init-le "${init[@]}" --set enableLeaderElection=true --set replicas=2; then
  expect "init: leader election names the Lease's namespace (upstream's --leader-election-namespace)" \
    "$(args init-le)" "--enable-leader-election=true" "--leader-election-namespace=default"
else
  not_ok "init: leader election names the Lease's namespace" "$(cat "$work/init-le.err")"
fi
if render init-le-none "${init[@]}" --set enableLeaderElection=true --set init.leaderElectionNamespace=; then
  not_ok "init: leader election without a namespace is refused" "$(args init-le-none)"
else
  expect "init: leader election without a namespace is refused" "$(cat "$work/init-le-none.err")" \
    "init.leaderElectionNamespace is required"
fi

# --- monitoring ----------------------------------------------------------------------
render plain "${upstream[@]}" || not_ok "monitoring: render with defaults" "$(cat "$work/plain.err")"
refuse "monitoring: off by default" "$(cat "$work/plain.yaml")" "kind: ServiceMonitor" "kind: PrometheusRule" \
  "grafana_dashboard"
if render monitoring "${upstream[@]}" --set monitoring.serviceMonitor.enabled=true \
  --set monitoring.prometheusRule.enabled=true --set monitoring.dashboard.enabled=true \
  --set 'monitoring.serviceMonitor.labels.release=prom'; then
  expect "monitoring: a Service for /metrics and a ServiceMonitor scraping it" \
    "$(doc monitoring Service; doc monitoring ServiceMonitor)" "name: syncweave-metrics" "targetPort: metrics" \
    "port: 8085" "- port: metrics" "path: /metrics" "release: prom" "app.kubernetes.io/component: sync"
  expect "monitoring: a PrometheusRule with the alerts of files/alerts.yaml" "$(doc monitoring PrometheusRule)" \
    "alert: SyncweaveObjectsFailing" "alert: SyncweaveQueueGrowing" "alert: SyncweavePluginFailures" \
    "alert: SyncweaveLeaderFlapping" "alert: SyncweaveNoLeader" "alert: SyncweaveWatchRestarts" \
    "alert: SyncweaveTaskRestarts"
  expect "monitoring: the dashboard in a ConfigMap for Grafana's sidecar" "$(doc monitoring ConfigMap)" \
    'grafana_dashboard: "1"' '"uid": "syncweave-agent"'
else
  not_ok "monitoring: render with everything on" "$(cat "$work/monitoring.err")"
fi
must_fail "bad values: a ServiceMonitor without metrics" nometrics \
  "monitoring.serviceMonitor.enabled needs metricsPort" "${upstream[@]}" \
  --set monitoring.serviceMonitor.enabled=true --set metricsPort=0
promtool=${PROMTOOL:-${SYNCWEAVE_TOOLS_DIR:-$HOME/.cache/syncweave}/promtool}
if ! [ -x "$promtool" ]; then
  not_ok "monitoring: promtool checks the alerting rules" "no promtool at $promtool: run tests/setup.sh"
elif out=$("$promtool" check rules "$chart/files/alerts.yaml" 2>&1); then
  ok "monitoring: promtool checks the alerting rules ($(grep -o 'SUCCESS: [0-9]* rules found' <<<"$out"))"
else
  not_ok "monitoring: promtool checks the alerting rules" "$out"
fi
# The queries' metric names against what the agent exports: unit test
# metrics::tests::the_chart_names_only_exported_metrics (host/src/metrics.rs).

# --- refused values ----------------------------------------------------------------
must_fail "bad values: missing-slice-values.yaml fails naming apiExportEndpointSliceName" missing \
  "apiExportEndpointSliceName is required for role=sync" --values "$here/missing-slice-values.yaml"
must_fail "bad values: no kcpKubeconfig fails naming it" nokcp "kcpKubeconfig is required" \
  --set apiExportEndpointSliceName=s
must_fail "bad values: role=init without init.configWorkspace" noconfig "init.configWorkspace is required" \
  --set role=init --set kcpKubeconfig=k
must_fail "bad values: unknown role" badrole 'role must be "sync"' --set role=proxy --set kcpKubeconfig=k
must_fail "bad values: agentName that is no DNS-1035 label" badname "must be a DNS-1035 label" \
  "${upstream[@]}" --set agentName=Bad_Name
must_fail "bad values: unknown disabled controller" badctl "unknown controller \"bogus\"" \
  "${upstream[@]}" --set 'disabledControllers={bogus}'
must_fail "bad values: former syncweave name sync.apiExportEndpointSliceRef says its new name" legacy \
  "sync.apiExportEndpointSliceRef -> apiExportEndpointSliceName" \
  --set kcpKubeconfig=k --set sync.apiExportEndpointSliceRef=s

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
