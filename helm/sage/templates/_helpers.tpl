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
  group      the key of the group in .Values.roles
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
{{- $items = append $items (dict "component" (printf "%s-%s" $component (include "sage.slug" .name) | trunc 50 | trimSuffix "-") "roles" $roles "models" (list .name) "cfg" $merged "group" $group) }}
{{- end }}
{{- else }}
{{- $names := list }}
{{- range $models }}{{ $names = append $names .name }}{{ end }}
{{- $items = append $items (dict "component" $component "roles" $roles "models" $names "cfg" (omit $cfg "models" "deploymentPerModel") "group" $group) }}
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

{{/*
The dialogue jobs: the work-queue stream and the durable pull consumer every dialogue worker
shares (JOBS_STREAM and JOBS_CONSUMER in crates/ports/src/transport/nats.rs; deploy/lint-helm.py
checks that these are the same).
*/}}
{{- define "sage.jobsStream" -}}SAGE_JOBS{{- end }}
{{- define "sage.jobsConsumer" -}}dialogue{{- end }}

{{/*
The autoscaling mode of a worker Deployment, after checking its settings: "cpu", "keda" or
"metrics"; "" when its group does not autoscale. Call with (dict "root" $ "w" <workload item>).
Every template that renders autoscaling calls it, so bad settings fail whatever is rendered.
*/}}
{{- define "sage.autoscalingMode" -}}
{{- $w := .w }}
{{- $root := .root }}
{{- $as := $w.cfg.autoscaling | default dict }}
{{- $where := printf "roles.%s.autoscaling" $w.group }}
{{- if ne $w.component (include "sage.slug" $w.group) }}
{{- $where = printf "%s (Deployment %s)" $where $w.component }}
{{- end }}
{{- $mode := $as.mode | default "cpu" }}
{{- if not (has $mode (list "cpu" "keda" "metrics")) }}
{{- fail (printf "%s.mode: %v is not a mode; use cpu (an HPA on CPU), keda (a KEDA ScaledObject on the dialogue jobs backlog) or metrics (an HPA on the backlog and in-flight metrics of the Prometheus adapter)" $where $mode) }}
{{- end }}
{{- if $as.enabled }}
{{- $max := required (printf "roles: autoscaling.maxReplicas is required for %s" $w.component) $as.maxReplicas }}
{{- $min := hasKey $as "minReplicas" | ternary $as.minReplicas 1 }}
{{- if gt (int $min) (int $max) }}
{{- fail (printf "%s: minReplicas %v is above maxReplicas %v" $where $min $max) }}
{{- end }}
{{- if and (eq (int $min) 0) (ne $mode "keda") }}
{{- fail (printf "%s.minReplicas: 0 needs mode keda (an HPA keeps at least one replica)" $where) }}
{{- end }}
{{- if and (ne $mode "cpu") (not (has "dialogue" $w.roles)) }}
{{- fail (printf "%s.mode: %s scales on the dialogue jobs backlog, and this group does not serve the dialogue role (roles: %s); use mode cpu" $where $mode (join "," $w.roles)) }}
{{- end }}
{{- $wait := $as.maxLimitWaitSeconds | default 0 }}
{{- if and (gt (float64 $wait) 0.0) (ne $mode "keda") }}
{{- fail (printf "%s.maxLimitWaitSeconds needs mode keda (in mode %s bound maxReplicas by the providers' limits: docs/deployment.md#provider-limits-in-a-cluster)" $where $mode) }}
{{- end }}
{{- if eq $mode "keda" }}
{{- $usesPrometheus := or (gt (float64 (include "sage.targetSaturation" $w)) 0.0) (gt (float64 $wait) 0.0) }}
{{- if and $usesPrometheus (not (dig "prometheus" "serverAddress" "" ($root.Values.autoscaling | default dict))) }}
{{- fail (printf "%s: mode keda scales on in-flight saturation (targetSaturation) or holds on the providers' wait (maxLimitWaitSeconds) through Prometheus: set autoscaling.prometheus.serverAddress (e.g. http://prometheus-operated.monitoring.svc:9090), or targetSaturation: 0 and maxLimitWaitSeconds: 0 to scale on the NATS backlog only" $where) }}
{{- end }}
{{- end }}
{{- $mode }}
{{- end }}
{{- end }}

{{/*
Jobs (waiting or being played) per worker the backlog triggers aim at: the group's
lagThreshold, else its --concurrency (a worker plays that many at once). Call with a workload
item.
*/}}
{{- define "sage.lagThreshold" -}}
{{- $as := .cfg.autoscaling | default dict }}
{{- $as.lagThreshold | default .cfg.concurrency | default 256 | int }}
{{- end }}

{{/*
The part of the pods' --concurrency in use that the saturation triggers aim at (0: none).
Call with a workload item.
*/}}
{{- define "sage.targetSaturation" -}}
{{- $as := .cfg.autoscaling | default dict }}
{{- hasKey $as "targetSaturation" | ternary $as.targetSaturation 0.8 }}
{{- end }}

{{/*
host:port of the nats-server monitoring endpoint for KEDA's nats-jetstream trigger:
autoscaling.keda.natsServerMonitoringEndpoint, else the first host of nats.url on port 8222
(a host without a dot gets .<release namespace>.svc, since the KEDA operator runs in another
namespace).
*/}}
{{- define "sage.natsMonitoringEndpoint" -}}
{{- $set := dig "keda" "natsServerMonitoringEndpoint" "" (.Values.autoscaling | default dict) }}
{{- if $set }}
{{- $set }}
{{- else }}
{{- $host := splitList "," .Values.nats.url | first | trim }}
{{- $host = regexReplaceAll "^[A-Za-z]+://" $host "" }}
{{- $host = regexReplaceAll "^[^@/]*@" $host "" }}
{{- $host = regexReplaceAll "/.*$" $host "" }}
{{- $host = regexReplaceAll ":[0-9]+$" $host "" }}
{{- if not (contains "." $host) }}
{{- $host = printf "%s.%s.svc" $host .Release.Namespace }}
{{- end }}
{{- printf "%s:8222" $host }}
{{- end }}
{{- end }}
