{{- define "syncweave.name" -}}
{{- printf "%s-%s" .Release.Name .Values.role | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "syncweave.labels" -}}
app.kubernetes.io/name: syncweave
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.role }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}
