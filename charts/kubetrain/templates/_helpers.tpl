{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "kubetrain.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name; kept short enough for the "-validating" suffix. */}}
{{- define "kubetrain.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kubetrain.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kubetrain.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubetrain.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kubetrain.labels" -}}
helm.sh/chart: {{ include "kubetrain.chart" . }}
{{ include "kubetrain.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kubetrain
{{- end }}

{{/* Names of the objects other templates and the operator's flags refer to. */}}
{{- define "kubetrain.serviceAccountName" -}}{{ include "kubetrain.fullname" . }}{{- end }}
{{- define "kubetrain.webhookServiceName" -}}{{ include "kubetrain.fullname" . }}-webhook{{- end }}
{{- define "kubetrain.metricsServiceName" -}}{{ include "kubetrain.fullname" . }}-metrics{{- end }}
{{- define "kubetrain.mutatingConfigName" -}}{{ include "kubetrain.fullname" . }}-mutating{{- end }}
{{- define "kubetrain.validatingConfigName" -}}{{ include "kubetrain.fullname" . }}-validating{{- end }}
{{- define "kubetrain.leaseName" -}}{{ include "kubetrain.fullname" . }}-controller{{- end }}
{{- define "kubetrain.servingCertName" -}}{{ include "kubetrain.fullname" . }}-webhook{{- end }}
{{- define "kubetrain.certSecretName" -}}
{{- default (printf "%s-webhook-tls" (include "kubetrain.fullname" .)) .Values.certificates.secretName }}
{{- end }}

{{- define "kubetrain.certDir" -}}/tmp/kubetrain/certs{{- end }}

{{/* Leader election is on when asked for, and always with more than one replica. */}}
{{- define "kubetrain.leaderElect" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicas) 1) }}true{{- end }}
{{- end }}

{{/* The caBundle field for a webhook clientConfig (existingSecret mode only). */}}
{{- define "kubetrain.caBundle" -}}
{{- if eq .Values.certificates.mode "existingSecret" }}
caBundle: {{ required "certificates.caBundle is required when certificates.mode is existingSecret (base64-encoded PEM of the CA that signed the Secret's certificate)" .Values.certificates.caBundle | quote }}
{{- end }}
{{- end }}

{{/* Annotation asking cert-manager's CA injector to fill caBundle (certManager mode). */}}
{{- define "kubetrain.webhookAnnotations" -}}
{{- if eq .Values.certificates.mode "certManager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "kubetrain.servingCertName" .) }}
{{- end }}
{{- end }}

{{/* clientConfig of a webhook: the webhook Service, one path. Call with (dict "ctx" $ "path" "/x"). */}}
{{- define "kubetrain.webhookClientConfig" -}}
clientConfig:
  service:
    name: {{ include "kubetrain.webhookServiceName" .ctx }}
    namespace: {{ .ctx.Release.Namespace }}
    path: {{ .path }}
    port: 443
  {{- with include "kubetrain.caBundle" .ctx }}{{ . | trim | nindent 2 }}{{ end }}
{{- end }}

{{/* What every webhook shares: fail closed, no side effects (dry-run safe), v1 reviews. */}}
{{- define "kubetrain.webhookSettings" -}}
matchPolicy: Equivalent
failurePolicy: Fail
sideEffects: None
timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
admissionReviewVersions: ["v1"]
{{- end }}

{{/* The job webhooks (mutate and validate): the kubetrain job kinds only, in the namespaces
webhook.namespaceSelector selects (all when empty). */}}
{{/* The served groups that hold the job kinds (trainer.kubeflow.org has its own kinds). */}}
{{- define "kubetrain.jobGroups" -}}
{{ without .Values.apiGroups "trainer.kubeflow.org" | toJson }}
{{- end }}

{{/* The versions of the served job groups: v1, and KubeDL's v1alpha1 with training.kubedl.io. */}}
{{- define "kubetrain.jobVersions" -}}
{{- $groups := without .Values.apiGroups "trainer.kubeflow.org" -}}
{{- $versions := list -}}
{{- if or (has "kubetrain.io" $groups) (has "kubeflow.org" $groups) }}{{ $versions = append $versions "v1" }}{{ end -}}
{{- if has "training.kubedl.io" $groups }}{{ $versions = append $versions "v1alpha1" }}{{ end -}}
{{ $versions | toJson }}
{{- end }}

{{/* Kubeflow Trainer v2's webhook: TrainJobs (CREATE, UPDATE); validating also the runtimes,
DELETE included (in-use protection). Names and rules as kubetrain.webhook.configurations. */}}
{{- define "kubetrain.trainerWebhook" -}}
rules:
  - apiGroups: ["trainer.kubeflow.org"]
    apiVersions: ["v1alpha1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["trainjobs"]
    scope: Namespaced
{{- if .validating }}
  - apiGroups: ["trainer.kubeflow.org"]
    apiVersions: ["v1alpha1"]
    operations: ["CREATE", "UPDATE", "DELETE"]
    resources: ["trainingruntimes", "clustertrainingruntimes"]
    scope: "*"
{{- end }}
{{ include "kubetrain.webhookSettings" .ctx }}
{{- if not .validating }}
{{- with .ctx.Values.webhook.namespaceSelector }}
namespaceSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kubetrain.jobWebhook" -}}
rules:
{{- /* One rule per group and version, as kubetrain.webhook.configurations.job_rules: MPIJob in
kubeflow.org is admitted at v2beta1 only (its storage version), so the API server converts a
kubeflow.org/v1 MPIJob for the webhooks; training.kubedl.io has KubeDL's kinds only, at v1alpha1. */}}
{{- range .ctx.Values.apiGroups }}
{{- if eq . "kubeflow.org" }}
  - apiGroups: ["kubeflow.org"]
    apiVersions: ["v1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["tfjobs", "pytorchjobs", "mxjobs", "xgboostjobs", "jaxjobs", "paddlejobs"]
    scope: Namespaced
  - apiGroups: ["kubeflow.org"]
    apiVersions: ["v2beta1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["mpijobs"]
    scope: Namespaced
{{- else if eq . "training.kubedl.io" }}
  - apiGroups: ["training.kubedl.io"]
    apiVersions: ["v1alpha1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["tfjobs", "pytorchjobs", "xgboostjobs", "mpijobs"]
    scope: Namespaced
{{- else if eq . "kubetrain.io" }}
  - apiGroups: ["kubetrain.io"]
    apiVersions: ["v1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["tfjobs", "pytorchjobs", "mxjobs", "xgboostjobs", "jaxjobs", "paddlejobs", "mpijobs"]
    scope: Namespaced
{{- end }}
{{- end }}
{{- if .validating }}
  {{- /* `kubectl scale` and HPAs write the scale subresource, which kube-apiserver sends to
  webhooks only when their rules name `<plural>/scale`. */}}
  - apiGroups: {{ include "kubetrain.jobGroups" .ctx }}
    apiVersions: {{ include "kubetrain.jobVersions" .ctx }}
    operations: ["UPDATE"]
    resources: ["pytorchjobs/scale", "paddlejobs/scale"]
    scope: Namespaced
{{- end }}
{{ include "kubetrain.webhookSettings" .ctx }}
{{- with .ctx.Values.webhook.namespaceSelector }}
namespaceSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The TrainingPolicy webhook (validate only). TrainingPolicies are cluster-scoped, so no
namespaceSelector: Kubernetes ignores it for cluster-scoped objects anyway. */}}
{{- define "kubetrain.policyWebhook" -}}
rules:
  - apiGroups: ["kubetrain.io"]
    apiVersions: ["v1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["trainingpolicies"]
    scope: Cluster
{{ include "kubetrain.webhookSettings" . }}
{{- end }}

{{/* The cron webhook (validate only): TrainingCrons, and KubeDL's Crons with kubedlCron. */}}
{{- define "kubetrain.cronWebhook" -}}
rules:
  - apiGroups: ["kubetrain.io"]
    apiVersions: ["v1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["trainingcrons"]
    scope: Namespaced
{{- if .Values.kubedlCron }}
  - apiGroups: ["apps.kubedl.io"]
    apiVersions: ["v1alpha1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["crons"]
    scope: Namespaced
{{- end }}
{{ include "kubetrain.webhookSettings" . }}
{{- with .Values.webhook.namespaceSelector }}
namespaceSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* `kubetrain run` arguments, built from values (flags: kubetrain/commands/_flags.py). */}}
{{- define "kubetrain.args" -}}
- run
- --log-level={{ .Values.logLevel }}
- --workers={{ .Values.controller.workers }}
- --qps={{ .Values.controller.qps }}
- --burst={{ .Values.controller.burst }}
{{- with .Values.watchNamespaces }}
- --namespaces={{ join "," . }}
{{- end }}
- --gang-scheduler={{ .Values.gangScheduler }}
{{- with .Values.schedulerName }}
- --scheduler-name={{ . }}
{{- end }}
- --service-mode={{ .Values.serviceMode }}
{{- with .Values.clusterDomain }}
- --cluster-domain={{ . }}
{{- end }}
- --api-groups={{ join "," .Values.apiGroups }}{{ if .Values.kubedlCron }},apps.kubedl.io{{ end }}
{{- if include "kubetrain.leaderElect" . }}
- --leader-elect
- --leader-election-namespace={{ .Release.Namespace }}
- --leader-election-id={{ include "kubetrain.leaseName" . }}
{{- else }}
- --no-leader-elect
{{- end }}
- --max-replicas-per-job={{ .Values.maxReplicasPerJob | int }}
- --metrics-port={{ .Values.metrics.port }}
- --metrics-bind-address={{ .Values.metrics.bindAddress }}
{{- if .Values.metrics.secure }}
- --metrics-secure
{{- end }}
- --webhook-port={{ .Values.webhook.port }}
- --webhook-workers={{ .Values.webhook.workers | int }}
- --webhook-max-request-bytes={{ .Values.webhook.maxRequestBytes | int }}
- --webhook-review-processes={{ .Values.webhook.reviewProcesses | int }}
- --cert-dir={{ include "kubetrain.certDir" . }}
{{- if .Values.statusServer.enabled }}
- --status-server-port={{ .Values.statusServer.port | int }}
- --status-server-url=https://{{ include "kubetrain.webhookServiceName" . }}.{{ .Release.Namespace }}.svc:{{ .Values.statusServer.port | int }}
{{- if .Values.statusServer.separateProcess }}
- --status-server-process
{{- end }}
{{- end }}
{{- if eq .Values.certificates.mode "selfManaged" }}
- --cert-mode=self-managed
- --cert-secret={{ include "kubetrain.certSecretName" . }}
- --webhook-service={{ include "kubetrain.webhookServiceName" . }}
- --webhook-namespace={{ .Release.Namespace }}
- --mutating-webhook-config={{ include "kubetrain.mutatingConfigName" . }}
- --validating-webhook-config={{ include "kubetrain.validatingConfigName" . }}
{{- else }}
- --cert-mode=directory
{{- end }}
{{- end }}
