{{/*
One component's Deployment: (dict "root" $ "component" "gate" "image" .Values.image
"command" "gate" "port" 9464 "portName" "metrics" "shm" false).
*/}}
{{- define "crawlsieve.deployment" -}}
{{- $root := .root -}}
{{- $v := index $root.Values .component -}}
{{- $sel := dict "root" $root "component" .component -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "crawlsieve.fullname" $root }}-{{ .component }}
  labels:
    {{- include "crawlsieve.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  {{- if not (or $v.autoscaling.enabled (and (hasKey $v "keda") $v.keda.enabled)) }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "crawlsieve.selector" $sel | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "crawlsieve.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ .component }}
      annotations:
        # Rolls the pods when the configuration changes.
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- if and $root.Values.secrets.create (not $root.Values.secrets.existingSecret) }}
        # ... and when the chart's own Secret changes (an existingSecret is the user's to roll).
        checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
        {{- end }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "crawlsieve.serviceAccountName" $root }}
      automountServiceAccountToken: {{ $root.Values.serviceAccount.automountServiceAccountToken }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      # Stages finish and commit their batch on SIGTERM; a render batch may hold a slow page.
      terminationGracePeriodSeconds: {{ ternary 90 30 (eq .component "render") }}
      containers:
        - name: {{ .component }}
          image: "{{ .image.repository }}:{{ default $root.Chart.AppVersion .image.tag }}"
          imagePullPolicy: {{ .image.pullPolicy }}
          args: [{{ .command | quote }}, "--config", "/etc/crawlsieve/{{ .component }}.toml", "--log-format", {{ $root.Values.logging.format | quote }}]
          env:
            - name: CRAWLSIEVE_LOG
              value: {{ $root.Values.logging.level | quote }}
            {{- with include "crawlsieve.secretEnv" $sel }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            - name: TMPDIR
              value: /tmp
          ports:
            - name: {{ .portName }}
              containerPort: {{ .port }}
              protocol: TCP
          livenessProbe:
            httpGet: {path: /healthz, port: {{ .portName }}}
            timeoutSeconds: {{ $root.Values.probes.timeoutSeconds }}
            periodSeconds: 10
            failureThreshold: 6
          readinessProbe:
            httpGet: {path: /readyz, port: {{ .portName }}}
            timeoutSeconds: {{ $root.Values.probes.timeoutSeconds }}
            periodSeconds: 5
            failureThreshold: 3
          startupProbe:
            httpGet: {path: /healthz, port: {{ .portName }}}
            timeoutSeconds: {{ $root.Values.probes.timeoutSeconds }}
            periodSeconds: 2
            failureThreshold: 30
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/crawlsieve
              readOnly: true
            - name: tmp
              mountPath: /tmp
            {{- if .shm }}
            - name: dshm
              mountPath: /dev/shm
            {{- end }}
            {{- if $root.Values.kafkaTls.enabled }}
            - name: kafka-tls
              mountPath: /etc/crawlsieve/kafka-tls
              readOnly: true
            {{- end }}
            {{- if $root.Values.redisTls.enabled }}
            - name: redis-tls
              mountPath: /etc/crawlsieve/redis-tls
              readOnly: true
            {{- end }}
      volumes:
        - name: config
          configMap:
            name: {{ include "crawlsieve.fullname" $root }}-config
            items:
              - key: {{ .component }}.toml
                path: {{ .component }}.toml
        - name: tmp
          emptyDir:
            sizeLimit: {{ ternary "1Gi" "64Mi" (eq .component "render") }}
        {{- if .shm }}
        - name: dshm
          emptyDir:
            medium: Memory
            sizeLimit: {{ $v.shmSize }}
        {{- end }}
        {{- if $root.Values.kafkaTls.enabled }}
        - name: kafka-tls
          secret:
            secretName: {{ required "kafkaTls.secretName is required when kafkaTls.enabled" $root.Values.kafkaTls.secretName }}
        {{- end }}
        {{- if $root.Values.redisTls.enabled }}
        - name: redis-tls
          secret:
            secretName: {{ required "redisTls.secretName is required when redisTls.enabled" $root.Values.redisTls.secretName }}
        {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
