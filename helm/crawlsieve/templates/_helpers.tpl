{{/* Names. */}}
{{- define "crawlsieve.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "crawlsieve.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "crawlsieve.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "crawlsieve.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "gate"). */}}
{{- define "crawlsieve.selector" -}}
app.kubernetes.io/name: {{ include "crawlsieve.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "crawlsieve.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "crawlsieve.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "crawlsieve.secretName" -}}
{{- if .Values.secrets.existingSecret -}}
{{- .Values.secrets.existingSecret -}}
{{- else -}}
{{- printf "%s-credentials" (include "crawlsieve.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "crawlsieve.hasSecret" -}}
{{- if or .Values.secrets.existingSecret .Values.secrets.create -}}true{{- end -}}
{{- end -}}

{{/*
The TOML configuration of one component: `config`, then the component's `config`, then what
the chart itself fixes (listen addresses, Kafka TLS). (dict "root" $ "component" "gate")
*/}}
{{- define "crawlsieve.config" -}}
{{- $root := .root -}}
{{- $own := index $root.Values .component -}}
{{- $cfg := mustMergeOverwrite (deepCopy $root.Values.config) (deepCopy $own.config) -}}
{{- $metrics := default dict $cfg.metrics -}}
{{- if ne .component "api" -}}
{{- $_ := set $metrics "listen" (printf "0.0.0.0:%v" $root.Values.metrics.port) -}}
{{- end -}}
{{- $_ := set $cfg "metrics" $metrics -}}
{{- if eq .component "api" -}}
{{- $serve := default dict $cfg.serve -}}
{{- $_ := set $serve "listen" (printf "0.0.0.0:%v" $root.Values.api.port) -}}
{{- $_ := set $cfg "serve" $serve -}}
{{- end -}}
{{- if $root.Values.kafkaTls.enabled -}}
{{- $kafka := default dict $cfg.kafka -}}
{{- $client := default dict $kafka.client -}}
{{- /* A protocol the user set (SASL_SSL with an existingSecret) is kept; else SASL_SSL when the
chart's own Secret carries SASL credentials, else kafkaTls.protocol. */ -}}
{{- if not (hasKey $client "security.protocol") -}}
{{- $_ := set $client "security.protocol" (ternary "SASL_SSL" $root.Values.kafkaTls.protocol (ne $root.Values.secrets.kafkaSaslUsername "")) -}}
{{- end -}}
{{- $_ := set $client "ssl.ca.location" "/etc/crawlsieve/kafka-tls/ca.crt" -}}
{{- if $root.Values.kafkaTls.mutual -}}
{{- $_ := set $client "ssl.certificate.location" "/etc/crawlsieve/kafka-tls/tls.crt" -}}
{{- $_ := set $client "ssl.key.location" "/etc/crawlsieve/kafka-tls/tls.key" -}}
{{- end -}}
{{- $_ := set $kafka "client" $client -}}
{{- $_ := set $cfg "kafka" $kafka -}}
{{- end -}}
{{- if $root.Values.redisTls.enabled -}}
{{- $redis := default dict $cfg.redis -}}
{{- if not (default false $redis.cluster) -}}
{{- $_ := set $redis "tls_ca" "/etc/crawlsieve/redis-tls/ca.crt" -}}
{{- if $root.Values.redisTls.mutual -}}
{{- $_ := set $redis "tls_cert" "/etc/crawlsieve/redis-tls/tls.crt" -}}
{{- $_ := set $redis "tls_key" "/etc/crawlsieve/redis-tls/tls.key" -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "redis" $redis -}}
{{- end -}}
{{- include "crawlsieve.toml" $cfg | trim -}}
{{- end -}}

{{/*
TOML of a two-level map (sections of scalars, arrays and one level of sub-tables such as
kafka.client). Helm reads YAML numbers as floats: whole ones are written as integers, which
the stages' integer settings need (toToml would write `workers = 1.0`).
*/}}
{{- define "crawlsieve.toml" -}}
{{- range $section, $table := . }}
[{{ $section | toJson }}]
{{- range $k, $v := $table }}
{{- if not (kindIs "map" $v) }}
{{ $k | toJson }} = {{ include "crawlsieve.tomlValue" $v }}
{{- end }}
{{- end }}
{{- range $k, $v := $table }}
{{- if kindIs "map" $v }}
[{{ $section | toJson }}.{{ $k | toJson }}]
{{- range $kk, $vv := $v }}
{{ $kk | toJson }} = {{ include "crawlsieve.tomlValue" $vv }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "crawlsieve.tomlValue" -}}
{{- if kindIs "slice" . -}}
[{{- range $i, $x := . }}{{ if $i }}, {{ end }}{{ include "crawlsieve.tomlValue" $x }}{{ end -}}]
{{- else if or (kindIs "float64" .) (kindIs "int" .) (kindIs "int64" .) -}}
{{- if eq (float64 .) (floor .) -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else if kindIs "bool" . -}}
{{ . }}
{{- else -}}
{{ toString . | toJson }}
{{- end -}}
{{- end -}}

{{/* Environment variables from the Secret (every key optional). */}}
{{- define "crawlsieve.secretEnv" -}}
{{- if include "crawlsieve.hasSecret" .root }}
{{- $name := include "crawlsieve.secretName" .root }}
{{- /* Each component gets only the credentials it uses: the API has no Kafka client. */}}
{{- if ne .component "api" }}
- name: CRAWLSIEVE__KAFKA__CLIENT__SASL_USERNAME
  valueFrom:
    secretKeyRef: {name: {{ $name }}, key: kafka-sasl-username, optional: true}
- name: CRAWLSIEVE__KAFKA__CLIENT__SASL_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ $name }}, key: kafka-sasl-password, optional: true}
{{- end }}
- name: CRAWLSIEVE__REDIS__URL
  valueFrom:
    secretKeyRef: {name: {{ $name }}, key: redis-url, optional: true}
{{- if eq .component "api" }}
- name: CRAWLSIEVE_API_TOKENS
  valueFrom:
    secretKeyRef: {name: {{ $name }}, key: api-tokens, optional: true}
{{- end }}
{{- end }}
{{- end -}}
