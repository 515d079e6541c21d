{{/* The image this chart ships; used in place of upstream's Go images. */}}
{{- define "syncweave.defaultRepository" -}}ghcr.io/syncweave/syncweave{{- end -}}

{{- define "syncweave.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-<name>, or the release name alone when it contains <name>. */}}
{{- define "syncweave.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "syncweave.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "syncweave.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "syncweave.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "syncweave.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "syncweave.agentName" -}}
{{- default .Release.Name .Values.agentName -}}
{{- end -}}

{{/* The APIExportEndpointSlice to serve: kcp names the default slice of an APIExport after it. */}}
{{- define "syncweave.endpointSlice" -}}
{{- default .Values.apiExportName .Values.apiExportEndpointSliceName -}}
{{- end -}}

{{/* Whether the chart grants RBAC on this cluster (role=sync, in-cluster service access). */}}
{{- define "syncweave.clusterRBAC" -}}
{{- if and (eq .Values.role "sync") .Values.rbac.create (not .Values.kubeconfig) -}}true{{- end -}}
{{- end -}}

{{/*
The agent image. A values file written for upstream's chart may name
upstream's Go image (its default); this chart runs syncweave instead, at the
chart's version, because the arguments it passes are syncweave's.
*/}}
{{- define "syncweave.upstreamImage" -}}
{{- if has (.Values.image.repository | toString) (list "ghcr.io/kcp-dev/api-syncagent" "ghcr.io/kcp-dev/init-agent") -}}true{{- end -}}
{{- end -}}

{{- define "syncweave.image" -}}
{{- if include "syncweave.upstreamImage" . -}}
{{- printf "%s:%s" (include "syncweave.defaultRepository" .) .Chart.AppVersion -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{- define "syncweave.selectorLabels" -}}
app.kubernetes.io/name: {{ include "syncweave.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.role }}
{{- end -}}

{{- define "syncweave.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "syncweave.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Pull secrets given as names or as {name: …} objects, as upstream accepts them. */}}
{{- define "syncweave.imagePullSecrets" -}}
{{- range .Values.global.imagePullSecrets }}
{{- if kindIs "map" . }}
- {{ toYaml . | trim }}
{{- else }}
- name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Refuse values that would deploy a broken agent, naming the value and the fix.
*/}}
{{- define "syncweave.validate" -}}
{{- if not (has .Values.role (list "sync" "init")) -}}
{{- fail (printf "role must be \"sync\" (the api-syncagent role) or \"init\" (the init-agent role), not %q" (toString .Values.role)) -}}
{{- end -}}
{{- with .Values.sync -}}
{{- fail "the sync.* values were renamed to the upstream api-syncagent chart's names: sync.apiExportEndpointSliceRef -> apiExportEndpointSliceName, sync.agentName -> agentName, sync.publishedResourceSelector -> publishedResourceSelector, sync.disabledControllers -> disabledControllers, sync.kubeconfigHostOverride -> kubeconfigHostOverride, sync.kubeconfigCAFileOverride -> kubeconfigCAFileOverride (see docs/helm.md)" -}}
{{- end -}}
{{- with .Values.kcp -}}
{{- fail "kcp.kubeconfigSecret.name was renamed to kcpKubeconfig (upstream's name): the name of a Secret whose \"kubeconfig\" key holds the kcp kubeconfig (see docs/helm.md)" -}}
{{- end -}}
{{- if kindIs "bool" .Values.leaderElection -}}
{{- fail "leaderElection was renamed to enableLeaderElection (upstream's name)" -}}
{{- end -}}
{{- if not .Values.kcpKubeconfig -}}
{{- fail (printf "kcpKubeconfig is required: the name of a Secret in namespace %s whose \"kubeconfig\" key holds the kubeconfig for kcp (kubectl create secret generic kcp-kubeconfig --from-file=kubeconfig=kcp.kubeconfig, then --set kcpKubeconfig=kcp-kubeconfig)" (include "syncweave.namespace" .)) -}}
{{- end -}}
{{- if eq .Values.role "sync" -}}
{{- if not (include "syncweave.endpointSlice" .) -}}
{{- fail "apiExportEndpointSliceName is required for role=sync: the name of the APIExportEndpointSlice in kcp that this agent serves, in the workspace kcpKubeconfig points at (kcp creates one named after each APIExport, so apiExportName=<export> works too)" -}}
{{- end -}}
{{- $agent := include "syncweave.agentName" . -}}
{{- if or (gt (len $agent) 63) (not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $agent)) -}}
{{- fail (printf "agentName %q (default: the release name) must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter, at most 63 characters; set agentName" $agent) -}}
{{- end -}}
{{- range .Values.disabledControllers -}}
{{- if not (has . (list "apiexport" "apiresourceschema" "sync")) -}}
{{- fail (printf "disabledControllers: unknown controller %q (known: apiexport, apiresourceschema, sync)" (toString .)) -}}
{{- end -}}
{{- end -}}
{{- range $i, $r := .Values.rbac.publishedResources -}}
{{- if or (not (kindIs "map" $r)) (not $r.apiGroups) (not $r.resources) -}}
{{- fail (printf "rbac.publishedResources[%d] needs apiGroups and resources, e.g. {apiGroups: [example.com], resources: [crontabs]}" $i) -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- if not .Values.init.configWorkspace -}}
{{- fail "init.configWorkspace is required for role=init: the kcp workspace (path or logical-cluster name, or a URL path starting with /) holding the InitTargets and InitTemplates" -}}
{{- end -}}
{{- if and .Values.enableLeaderElection (not .Values.init.leaderElectionNamespace) -}}
{{- fail "init.leaderElectionNamespace is required for role=init with enableLeaderElection: the namespace in the config workspace that holds the Lease init-agent.kcp.io (e.g. default)" -}}
{{- end -}}
{{- if .Values.kubeconfig -}}
{{- fail "kubeconfig (a service-cluster kubeconfig) is a role=sync value: the init agent talks only to kcp, through kcpKubeconfig; unset kubeconfig" -}}
{{- end -}}
{{- end -}}
{{- end -}}
