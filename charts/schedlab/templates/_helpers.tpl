{{/* The chart name, truncated to the 63 characters of a label value. */}}
{{- define "schedlab.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every resource name: fullnameOverride, else the release name followed by the chart
name unless the release name already contains it. 52 characters leave room for the suffixes.
*/}}
{{- define "schedlab.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "schedlab.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "schedlab.labels" -}}
helm.sh/chart: {{ include "schedlab.chart" . }}
{{ include "schedlab.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: schedlab
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "schedlab.selectorLabels" -}}
app.kubernetes.io/name: {{ include "schedlab.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The manager pod's selector labels. */}}
{{- define "schedlab.managerSelectorLabels" -}}
{{ include "schedlab.selectorLabels" . }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "schedlab.managerServiceAccountName" -}}
{{- if .Values.controller.serviceAccount.create }}
{{- default (printf "%s-manager" (include "schedlab.fullname" .)) .Values.controller.serviceAccount.name }}
{{- else }}
{{- required "controller.serviceAccount.name is required when controller.serviceAccount.create is false" .Values.controller.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "schedlab.agentServiceAccountName" -}}
{{- if .Values.agent.serviceAccount.create }}
{{- default (printf "%s-agent" (include "schedlab.fullname" .)) .Values.agent.serviceAccount.name }}
{{- else }}
{{- required "agent.serviceAccount.name is required when agent.serviceAccount.create is false" .Values.agent.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "schedlab.managerImage" -}}
{{- printf "%s:%s" .Values.controller.image.repository (default .Chart.AppVersion .Values.controller.image.tag) }}
{{- end }}

{{- define "schedlab.agentImage" -}}
{{- $repo := default .Values.controller.image.repository .Values.agent.image.repository }}
{{- $tag := default (default .Chart.AppVersion .Values.controller.image.tag) .Values.agent.image.tag }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}

{{/*
The rules of a generated RBAC role. files/rbac/ holds the controller-gen output of config/rbac
(`make manifests` keeps the copy in sync, and a test fails when it is stale); this returns the
rules of the document of the given kind and name as YAML.
  include "schedlab.generatedRules" (dict "ctx" . "file" "files/rbac/role.yaml" "kind" "ClusterRole" "name" "schedlab-manager")
*/}}
{{- define "schedlab.generatedRules" -}}
{{- $found := false }}
{{- range $doc := splitList "\n---" (.ctx.Files.Get .file) }}
{{- $obj := fromYaml $doc }}
{{- if and $obj (eq (get $obj "kind") $.kind) (eq (get (get $obj "metadata") "name") $.name) }}
{{- $found = true }}
{{- toYaml (get $obj "rules") }}
{{- end }}
{{- end }}
{{- if not $found }}
{{- fail (printf "%s: no %s %s (run make manifests)" .file .kind .name) }}
{{- end }}
{{- end }}

{{/*
The service account of a sweep Job's shard pods: one the chart creates next to the agent's, or,
when the agent's is not created, the agent's (an existing account; bind the simulator Role to it).
*/}}
{{- define "schedlab.simulatorServiceAccountName" -}}
{{- if .Values.agent.serviceAccount.create }}
{{- printf "%s-simulator" (include "schedlab.fullname" .) }}
{{- else }}
{{- include "schedlab.agentServiceAccountName" . }}
{{- end }}
{{- end }}
