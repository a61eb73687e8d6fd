{{- define "tailor.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name, with the chart's name appended unless it already holds it. */}}
{{- define "tailor.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "tailor.serviceAccountName" -}}
{{- default (include "tailor.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{- define "tailor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tailor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "tailor.labels" -}}
{{ include "tailor.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The ServiceAccount as an RBAC subject. */}}
{{- define "tailor.subject" -}}
- kind: ServiceAccount
  name: {{ include "tailor.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/* The node agent's ServiceAccount (agent.enabled). */}}
{{- define "tailor.agentServiceAccountName" -}}
{{- include "tailor.fullname" . }}-agent
{{- end }}

{{- define "tailor.agentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "tailor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "tailor.agentLabels" -}}
{{ include "tailor.agentSelectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
The source the manager reads usage from itself: metricsSource, or with
agent.enabled the agents' fallback (agent.fallback), for nodes with no fresh
report. Its permissions are granted, and its flags passed.
*/}}
{{- define "tailor.readSource" -}}
{{- if .Values.agent.enabled }}
{{- .Values.agent.fallback }}
{{- else }}
{{- .Values.metricsSource }}
{{- end }}
{{- end }}
