{{/*
Helpers shared by the umbrella chart and its subcharts (named templates are
global to one render). Callers pass a dict with "ctx" (the root context) and,
where needed, "component".
*/}}

{{/*
crowsnest.name: <release>-<component> (global.fullnameOverride instead of
the release name when set), at most 63 characters. Cluster-scoped objects
carry it too, so two releases never collide.
*/}}
{{- define "crowsnest.name" -}}
{{- printf "%s-%s" (.ctx.Values.global.fullnameOverride | default .ctx.Release.Name) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* crowsnest.selectorLabels: the labels a component's Service and workload select on. */}}
{{- define "crowsnest.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Values.global.nameOverride | default "crowsnest" }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* crowsnest.labels: the recommended labels on every object. */}}
{{- define "crowsnest.labels" -}}
{{ include "crowsnest.selectorLabels" . }}
app.kubernetes.io/part-of: crowsnest
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
crowsnest.image: repository[:tag][@digest] from (dict "image" <image section>
"global" .Values.global). A digest pins exactly; otherwise a tag is
required and "latest" is refused. With global.imageRegistry the repository
becomes <imageRegistry>/<its last path segment> (a mirror filled by
make images-push REGISTRY=<imageRegistry> and crane copy of nats/postgres).
*/}}
{{- define "crowsnest.image" -}}
{{- $img := .image -}}
{{- if not $img.repository -}}{{- fail "image.repository is required" -}}{{- end -}}
{{- if and (not $img.digest) (or (not $img.tag) (eq (toString $img.tag) "latest")) -}}
{{- fail (printf "image %s must be pinned by a tag other than latest or by a digest" $img.repository) -}}
{{- end -}}
{{- $ref := $img.repository -}}
{{- with .global.imageRegistry }}{{ $ref = printf "%s/%s" (trimSuffix "/" .) (last (splitList "/" $img.repository)) }}{{ end -}}
{{- if $img.tag }}{{ $ref = printf "%s:%s" $ref (toString $img.tag) }}{{ end -}}
{{- if $img.digest }}{{ $ref = printf "%s@%s" $ref $img.digest }}{{ end -}}
{{- $ref -}}
{{- end -}}

{{/* crowsnest.podSpecCommon: pull secrets, security context and scheduling of a component. */}}
{{- define "crowsnest.podSpecCommon" -}}
{{- $v := .values -}}
{{- with .ctx.Values.global.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- end -}}

{{/*
crowsnest.containerSecurityContext: the component's securityContext; seccomp
and runAsNonRoot are repeated per container so a container stays "restricted"
even if a user drops them from the Pod level.
*/}}
{{- define "crowsnest.containerSecurityContext" -}}
{{- $sc := deepCopy .securityContext -}}
{{- $_ := set $sc "runAsNonRoot" true -}}
{{- if not (hasKey $sc "seccompProfile") }}{{ $_ := set $sc "seccompProfile" (dict "type" "RuntimeDefault") }}{{ end -}}
{{- toYaml $sc -}}
{{- end -}}

{{/* crowsnest.natsEnv: CROWSNEST_NATS_URL from the bundled NATS, a URL or a Secret. */}}
{{- define "crowsnest.natsEnv" -}}
{{- $g := .ctx.Values.global.nats -}}
- name: CROWSNEST_NATS_URL
{{- if $g.existingSecret.name }}
  valueFrom:
    secretKeyRef:
      name: {{ $g.existingSecret.name }}
      key: {{ $g.existingSecret.key }}
{{- else if $g.url }}
  value: {{ $g.url | quote }}
{{- else }}
  value: {{ printf "nats://%s.%s.svc:4222" (include "crowsnest.name" (dict "ctx" .ctx "component" "nats")) .ctx.Release.Namespace | quote }}
{{- end }}
{{- end -}}

{{/* crowsnest.natsUsersSecret: the Secret with the bundled NATS users' passwords (global.nats.users). */}}
{{- define "crowsnest.natsUsersSecret" -}}
{{- .ctx.Values.global.nats.users.existingSecret | default (printf "%s-users" (include "crowsnest.name" (dict "ctx" .ctx "component" "nats"))) -}}
{{- end -}}

{{/*
crowsnest.natsAuth: how a component authenticates to NATS: "bundled" (its
own user on the bundled NATS, password from the users Secret), "creds" or
"password" (global.nats.credentials.<key> on an external NATS), or empty
(none besides the URL). Callers pass "ctx", "user" (its NATS user) and
"key" (its section of global.nats.credentials).
*/}}
{{- define "crowsnest.natsAuth" -}}
{{- $g := .ctx.Values.global.nats -}}
{{- $c := index $g.credentials .key -}}
{{- if not (or $g.url $g.existingSecret.name) -}}
{{- if or $c.user $c.passwordSecret.name $c.credsSecret.name -}}
{{- fail (printf "global.nats.credentials.%s is for an external NATS (global.nats.url or existingSecret); the bundled NATS has its own users (global.nats.users)" .key) -}}
{{- end -}}
bundled
{{- else if $c.credsSecret.name -}}
creds
{{- else if $c.passwordSecret.name -}}
password
{{- end -}}
{{- end -}}

{{/*
crowsnest.natsAuthEnv: CROWSNEST_NATS_USER + CROWSNEST_NATS_PASSWORD_FILE,
or CROWSNEST_NATS_CREDS: file paths only, never a secret value.
*/}}
{{- define "crowsnest.natsAuthEnv" -}}
{{- $auth := include "crowsnest.natsAuth" . -}}
{{- $c := index .ctx.Values.global.nats.credentials .key -}}
{{- if eq $auth "creds" }}
- name: CROWSNEST_NATS_CREDS
  value: /var/run/secrets/crowsnest/nats/nats.creds
{{- else if $auth }}
- name: CROWSNEST_NATS_USER
  value: {{ ternary .user $c.user (eq $auth "bundled") | quote }}
- name: CROWSNEST_NATS_PASSWORD_FILE
  value: /var/run/secrets/crowsnest/nats/password
{{- end }}
{{- end -}}

{{/* crowsnest.natsAuthVolumeMount: the read-only mount of the NATS credential file. */}}
{{- define "crowsnest.natsAuthVolumeMount" -}}
{{- if include "crowsnest.natsAuth" . }}
- name: nats-credentials
  mountPath: /var/run/secrets/crowsnest/nats
  readOnly: true
{{- end }}
{{- end -}}

{{/*
crowsnest.natsAuthVolume: the component's one key of the credentials Secret,
mode 0440 (root and the Pod's fsGroup).
*/}}
{{- define "crowsnest.natsAuthVolume" -}}
{{- $auth := include "crowsnest.natsAuth" . -}}
{{- $c := index .ctx.Values.global.nats.credentials .key -}}
{{- if $auth }}
- name: nats-credentials
  secret:
    {{- if eq $auth "bundled" }}
    secretName: {{ include "crowsnest.natsUsersSecret" . }}
    items:
      - {key: {{ .user | quote }}, path: password}
    {{- else if eq $auth "creds" }}
    secretName: {{ $c.credsSecret.name }}
    items:
      - {key: {{ $c.credsSecret.key | quote }}, path: nats.creds}
    {{- else }}
    secretName: {{ $c.passwordSecret.name }}
    items:
      - {key: {{ $c.passwordSecret.key | quote }}, path: password}
    {{- end }}
    defaultMode: 288 # 0440
{{- end }}
{{- end -}}

{{/*
crowsnest.apiURL: the in-cluster URL of results-api: http on the Service's
port 80, or https on 443 with global.resultsApi.tls.
*/}}
{{- define "crowsnest.apiURL" -}}
{{- printf "%s://%s" (include "crowsnest.apiPort" .) (include "crowsnest.apiHost" .) -}}
{{- end -}}

{{/* crowsnest.apiHost: the Service DNS name the operator and scan Jobs call results-api by. */}}
{{- define "crowsnest.apiHost" -}}
{{- printf "%s.%s.svc" (include "crowsnest.name" (dict "ctx" .ctx "component" "results-api")) .ctx.Release.Namespace -}}
{{- end -}}

{{/* crowsnest.apiPort: the name (and scheme) of results-api's port: http, or https with global.resultsApi.tls. */}}
{{- define "crowsnest.apiPort" -}}
{{- ternary "https" "http" (eq (toString .ctx.Values.global.resultsApi.tls.enabled) "true") -}}
{{- end -}}

{{/*
crowsnest.apiTLSSecret: the kubernetes.io/tls Secret results-api serves
with under global.resultsApi.tls, else empty. Fails on settings that cannot
work: neither a Secret nor an issuer, or an issuer where the cluster does not
serve cert-manager.io/v1 (no Certificate would write the Secret).
*/}}
{{- define "crowsnest.apiTLSSecret" -}}
{{- $tls := .ctx.Values.global.resultsApi.tls -}}
{{- if $tls.enabled -}}
{{- $issuer := $tls.certManager.issuerRef.name -}}
{{- if not (or $issuer $tls.secretName) -}}
{{- fail "global.resultsApi.tls.enabled needs global.resultsApi.tls.secretName (a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt) or global.resultsApi.tls.certManager.issuerRef.name (a cert-manager Issuer that writes it)" -}}
{{- end -}}
{{- if and $issuer (not (.ctx.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
{{- fail "global.resultsApi.tls.certManager.issuerRef is set but the cluster does not serve cert-manager.io/v1, so no Certificate would write the Secret: install cert-manager (with helm template, pass --api-versions cert-manager.io/v1), or create the Secret yourself and name it in global.resultsApi.tls.secretName without an issuerRef" -}}
{{- end -}}
{{- $tls.secretName | default (printf "%s-tls" (include "crowsnest.name" (dict "ctx" .ctx "component" "results-api"))) -}}
{{- end -}}
{{- end -}}

{{/* crowsnest.natsEgress: a NetworkPolicy egress rule to NATS (bundled pods, or any host on 4222). */}}
{{- define "crowsnest.natsEgress" -}}
{{- $g := .Values.global.nats -}}
- ports:
    - {port: 4222, protocol: TCP}
{{- if not (or $g.url $g.existingSecret.name) }}
  to:
    - podSelector:
        matchLabels:
          {{- include "crowsnest.selectorLabels" (dict "ctx" . "component" "nats") | nindent 10 }}
{{- end }}
{{- end -}}

{{/* crowsnest.dnsEgress: a NetworkPolicy egress rule for DNS. */}}
{{- define "crowsnest.dnsEgress" -}}
- ports:
    - {port: 53, protocol: UDP}
    - {port: 53, protocol: TCP}
{{- end -}}

{{/*
crowsnest.scanServiceAccount: the ServiceAccount scan Pods run as
(global.scan.serviceAccount). Never empty or "default": every Pod of a
namespace may run as its default ServiceAccount, and results-api accepts
uploads only from Pods running as this one. Call with any context that has
.Values.global.
*/}}
{{- define "crowsnest.scanServiceAccount" -}}
{{- $sa := .Values.global.scan.serviceAccount -}}
{{- if or (not $sa) (eq $sa "default") -}}
{{- fail "global.scan.serviceAccount must name a dedicated ServiceAccount (e.g. crowsnest-scan), not be empty or \"default\"" -}}
{{- end -}}
{{- $sa -}}
{{- end -}}

{{/*
crowsnest.allowedServiceAccounts: the namespaces whose scan Pods results-api
accepts uploads from in tokenreview mode: the scan ServiceAccount of every
global.scan namespace, or, with global.clusterScanner, of every namespace
(namespace "*": the ClusterScanner's namespaces are chosen by labels, and
the Pod must still belong to a Crowsnest scan Job); plus
resultsApi.auth.extraAllowedServiceAccounts. Call with the results-api
subchart's context.
*/}}
{{- define "crowsnest.allowedServiceAccounts" -}}
{{- $sa := include "crowsnest.scanServiceAccount" . -}}
{{- $out := list -}}
{{- if .Values.global.clusterScanner.enabled -}}
{{- $out = list (printf "*/%s" $sa) -}}
{{- else -}}
{{- range .Values.global.scan.namespaces }}{{ $out = append $out (printf "%s/%s" . $sa) }}{{ end -}}
{{- end -}}
{{- join "," (concat $out .Values.auth.extraAllowedServiceAccounts) -}}
{{- end -}}

{{/* crowsnest.authMode: static or tokenreview (see resultsApi.auth.mode). */}}
{{- define "crowsnest.authMode" -}}
{{- $mode := .Values.auth.mode -}}
{{- if not $mode -}}{{- $mode = ternary "tokenreview" "static" (ne (include "crowsnest.allowedServiceAccounts" .) "") -}}{{- end -}}
{{- if and (eq $mode "tokenreview") (eq (include "crowsnest.allowedServiceAccounts" .) "") -}}
{{- fail "resultsApi.auth.mode=tokenreview needs global.scan.namespaces, global.clusterScanner or resultsApi.auth.extraAllowedServiceAccounts" -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/*
crowsnest.watchNamespaces: the namespaces the operator is limited to
(--watch-namespaces): global.scan.namespaces, comma-separated, without
duplicates; empty with operator.clusterWide. Without scan namespaces and
without clusterWide the render fails: watching every namespace takes a
ClusterRole that may create Jobs anywhere, a choice made explicitly. Call with
the operator subchart's context (or a dict with Values.global and
Values.clusterWide).
*/}}
{{- define "crowsnest.watchNamespaces" -}}
{{- if not .Values.clusterWide -}}
{{- if not .Values.global.scan.namespaces -}}
{{- fail "global.scan.namespaces is empty: list the namespaces Crowsnest scans (the operator then gets a Role in each and watches only those), or set operator.clusterWide=true to let it watch every namespace with a ClusterRole that may create Jobs in any namespace" -}}
{{- end -}}
{{- join "," (uniq .Values.global.scan.namespaces) -}}
{{- end -}}
{{- end -}}

{{/*
crowsnest.vulnDBURL: the base URL scan Jobs fetch Grype's DB listing from
(operator --vulndb-url): the matcher's Service, the mirror of
global.vulnDB.url, or empty (public: Grype's own URL). Call with any context
that has .Values.global.
*/}}
{{- define "crowsnest.vulnDBURL" -}}
{{- $v := .Values.global.vulnDB -}}
{{- if and $v.url (ne $v.source "url") -}}
{{- fail "global.vulnDB.url is used only with global.vulnDB.source=url" -}}
{{- end -}}
{{- if eq $v.source "matcher" -}}
{{- printf "http://%s.%s.svc:8080/vulndb" (include "crowsnest.name" (dict "ctx" . "component" "matcher")) .Release.Namespace -}}
{{- else if eq $v.source "url" -}}
{{- if not $v.url -}}{{- fail "global.vulnDB.source=url needs global.vulnDB.url (your mirror's base URL in Grype's listing format)" -}}{{- end -}}
{{- $v.url -}}
{{- end -}}
{{- end -}}

{{/*
crowsnest.apiUsesKube: "true" when results-api talks to the Kubernetes API
(TokenReview, SubjectAccessReview): tokenreview write mode or
resultsApi.readAuth.mode kubernetes. Call with the results-api subchart's
context.
*/}}
{{- define "crowsnest.apiUsesKube" -}}
{{- if or (eq (include "crowsnest.authMode" .) "tokenreview") (eq .Values.readAuth.mode "kubernetes") -}}true{{- end -}}
{{- end -}}
