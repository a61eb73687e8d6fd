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
app.kubernetes.io/part-of: tailor
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

{{/* Where the node agent runs: agent.namespace, else the release's. */}}
{{- define "tailor.agentNamespace" -}}
{{- .Values.agent.namespace | default .Release.Namespace }}
{{- end }}

{{- define "tailor.agentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "tailor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "tailor.agentLabels" -}}
{{ include "tailor.agentSelectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: tailor
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

{{/*
"true" when the server serves MutatingAdmissionPolicy at
admissionregistration.k8s.io/v1 (GA in Kubernetes 1.36), else "": the
admission policies are rendered only then.
*/}}
{{- define "tailor.mapServed" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" }}true{{ end }}
{{- end }}

{{/*
"true" when the server serves ValidatingAdmissionPolicy at
admissionregistration.k8s.io/v1 (GA in Kubernetes 1.30), else "": the
guard that holds the managers to deleting only the pods they sized is
rendered only then.
*/}}
{{- define "tailor.vapServed" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" }}true{{ end }}
{{- end }}

{{/*
"true" when an admission policy of the release sizes new pods, and so
marks them autoscaling.tailor.dev/admitted: tailor-admission
(admission.enabled), or tailor-recreate (evictions.enabled with
evictions.admissionPolicy), where the server serves them. Only then can a
pod tailor sized wait unschedulable, and only then is the manager granted
the delete that replaces it.
*/}}
{{- define "tailor.sizesNewPods" -}}
{{- if and (include "tailor.mapServed" .) (or .Values.admission.enabled (and .Values.evictions.enabled .Values.evictions.admissionPolicy)) }}true{{ end }}
{{- end }}

{{/*
How the kubelet source reaches each kubelet: "direct" (the default, also
when kubelet.readVia is unset), authorized as nodes/metrics, or
"apiserver-proxy", authorized as nodes/proxy.
*/}}
{{- define "tailor.kubeletReadVia" -}}
{{- $via := (.Values.kubelet | default dict).readVia | default "direct" }}
{{- if not (has $via (list "direct" "apiserver-proxy")) }}
{{- fail (printf "kubelet.readVia %q: use direct or apiserver-proxy" $via) }}
{{- end }}
{{- $via }}
{{- end }}

{{/*
Binds ClusterRole RELEASE-tailor-<name> (the second argument) to the
managers' ServiceAccount where they write: cluster-wide, or with
watchNamespaces by a RoleBinding in each of those namespaces only, so a
tenant's managers write nowhere else. Call with (list $ "name").
*/}}
{{- define "tailor.writeBinding" -}}
{{- $ := index . 0 }}
{{- $name := printf "%s-%s" (include "tailor.fullname" $) (index . 1) }}
{{- if $.Values.watchNamespaces }}
{{- range $ns := $.Values.watchNamespaces }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ $ns }}
  labels:
    {{- include "tailor.labels" $ | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name }}
subjects:
{{- include "tailor.subject" $ | nindent 0 }}
{{- end }}
{{- else }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $name }}
  labels:
    {{- include "tailor.labels" $ | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name }}
subjects:
{{- include "tailor.subject" $ | nindent 0 }}
{{- end }}
{{- end }}

{{/*
"true" when the Prometheus Operator's kind (e.g. ServiceMonitor) is served
at monitoring.coreos.com/v1, or monitoring.assumeServed says to render it
anyway. Call with (list $ "Kind").
*/}}
{{- define "tailor.monitoringServed" -}}
{{- $ := index . 0 }}
{{- if or $.Values.monitoring.assumeServed ($.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" (index . 1))) }}true{{ end }}
{{- end }}

{{/* The job label of the managers' metrics, for the alerts and the dashboard. */}}
{{- define "tailor.managerJob" -}}
{{- .Values.monitoring.prometheusRule.managerJob | default (printf "%s-manager-metrics" (include "tailor.fullname" .)) }}
{{- end }}

{{/*
With watchNamespaces, scopes an admission policy binding's spec (the second
argument, changed in place) to pods of those namespaces: the release's
managers plan entries only there, and one tenant's release must never
admit another tenant's pods. Every namespace without. Call with
(list $ $spec).
*/}}
{{- define "tailor.bindingScope" -}}
{{- $ := index . 0 }}
{{- $spec := index . 1 }}
{{- with $.Values.watchNamespaces }}
{{- $_ := set $spec "matchResources" (dict "namespaceSelector" (dict "matchExpressions" (list (dict "key" "kubernetes.io/metadata.name" "operator" "In" "values" .)))) }}
{{- end }}
{{- end }}
