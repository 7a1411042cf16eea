{{/*
Names and labels.
*/}}
{{- define "sage.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sage.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "sage.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sage.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sage.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sage.labels" -}}
helm.sh/chart: {{ include "sage.chart" . }}
{{ include "sage.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sage
{{- end }}

{{- define "sage.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "sage.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sage.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
A string as a Kubernetes name / label value part: lower case, [a-z0-9-], at most 40 characters.
*/}}
{{- define "sage.slug" -}}
{{- regexReplaceAll "[^a-z0-9-]+" (lower .) "-" | trunc 40 | trimAll "-" }}
{{- end }}

{{/*
Secrets: the name of the NATS Secret and of the model-key Secret, "" when there is none.
*/}}
{{- define "sage.natsSecretCreate" -}}
{{- $a := .Values.nats.auth -}}
{{- if and (not .Values.nats.existingSecret) (or $a.user $a.password $a.token $a.nkey) }}true{{ end }}
{{- end }}

{{- define "sage.natsSecretName" -}}
{{- if .Values.nats.existingSecret }}
{{- .Values.nats.existingSecret }}
{{- else if include "sage.natsSecretCreate" . }}
{{- printf "%s-nats" (include "sage.fullname" .) }}
{{- end }}
{{- end }}

{{- define "sage.modelKeysSecretCreate" -}}
{{- if and (not .Values.models.existingSecret) .Values.models.apiKeys }}true{{ end }}
{{- end }}

{{- define "sage.modelKeysSecretName" -}}
{{- if .Values.models.existingSecret }}
{{- .Values.models.existingSecret }}
{{- else if include "sage.modelKeysSecretCreate" . }}
{{- printf "%s-model-keys" (include "sage.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The worker Deployments to render, as JSON {"items": [...]}; one item per enabled role group, or
per model of a group with deploymentPerModel. An item:
  component  the Deployment's name suffix and app.kubernetes.io/component label
  roles      the roles it serves (list)
  models     its --model flags (list)
  cfg        the group's values, with a model entry's keys in place of the group's
*/}}
{{- define "sage.workloads" -}}
{{- $known := list "dialogue" "user" "service" "judge" "rule" }}
{{- $items := list }}
{{- range $group, $cfg := .Values.roles }}
{{- $cfg = $cfg | default dict }}
{{- $enabled := true }}
{{- if hasKey $cfg "enabled" }}{{ $enabled = $cfg.enabled }}{{ end }}
{{- if $enabled }}
{{- $roles := $cfg.roles | default (list $group) }}
{{- range $roles }}
{{- if not (has . $known) }}
{{- fail (printf "roles.%s: unknown role %q (known: %s); set roles.%s.roles to a list of known roles" $group . (join ", " $known) $group) }}
{{- end }}
{{- end }}
{{- $component := include "sage.slug" $group }}
{{- $models := list }}
{{- range ($cfg.models | default list) }}
{{- if kindIs "string" . }}
{{- $models = append $models (dict "name" .) }}
{{- else if and (kindIs "map" .) .name }}
{{- $models = append $models . }}
{{- else }}
{{- fail (printf "roles.%s.models: each entry is a model name or a map with `name`, got %v" $group .) }}
{{- end }}
{{- end }}
{{- if and $models (not (has "service" $roles)) }}
{{- fail (printf "roles.%s.models is set but the group does not serve the service role" $group) }}
{{- end }}
{{- if and $cfg.deploymentPerModel $models }}
{{- range $models }}
{{- /* A model entry's keys replace the group's (whole keys: false and 0 count too). */}}
{{- $merged := deepCopy (omit $cfg "models" "deploymentPerModel") }}
{{- range $k, $v := omit . "name" }}
{{- $_ := set $merged $k $v }}
{{- end }}
{{- $items = append $items (dict "component" (printf "%s-%s" $component (include "sage.slug" .name) | trunc 50 | trimSuffix "-") "roles" $roles "models" (list .name) "cfg" $merged) }}
{{- end }}
{{- else }}
{{- $names := list }}
{{- range $models }}{{ $names = append $names .name }}{{ end }}
{{- $items = append $items (dict "component" $component "roles" $roles "models" $names "cfg" (omit $cfg "models" "deploymentPerModel")) }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson (dict "items" $items) }}
{{- end }}

{{/*
The pod-level settings shared by workers and the aggregator. Call with
(dict "root" $ "cfg" <group or aggregator values> "needsModelKeys" bool).
*/}}
{{- define "sage.podSpecCommon" -}}
{{- $root := .root }}
{{- $cfg := .cfg }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
serviceAccountName: {{ include "sage.serviceAccountName" $root }}
automountServiceAccountToken: false
enableServiceLinks: false
terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
{{- with $root.Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with ($cfg.nodeSelector | default $root.Values.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with ($cfg.tolerations | default $root.Values.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with ($cfg.affinity | default $root.Values.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Pod annotations: config checksums (a change of settings or secrets rolls the pods), the
optional prometheus.io ones, then the user's.
*/}}
{{- define "sage.podAnnotations" -}}
{{- $root := .root }}
checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
checksum/secrets: {{ include (print $root.Template.BasePath "/secrets.yaml") $root | sha256sum }}
{{- if $root.Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ $root.Values.metrics.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- with (.cfg.podAnnotations | default $root.Values.podAnnotations) }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The container's environment: envFrom (ConfigMap, NATS Secret, model keys when needed), the files
volume mounts and env (extraEnv). Call with (dict "root" $ "cfg" ... "needsModelKeys" bool).
*/}}
{{- define "sage.containerEnv" -}}
{{- $root := .root }}
envFrom:
  - configMapRef:
      name: {{ include "sage.fullname" $root }}
  {{- with (include "sage.natsSecretName" $root) }}
  - secretRef:
      name: {{ . }}
  {{- end }}
  {{- if .needsModelKeys }}
  {{- with (include "sage.modelKeysSecretName" $root) }}
  - secretRef:
      name: {{ . }}
  {{- end }}
  {{- end }}
{{- $env := concat ($root.Values.extraEnv | default list) (.cfg.extraEnv | default list) }}
{{- with $env }}
env:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
