{{/*
crowsnest.scanJobNamePattern: the names the operator gives its scan Jobs
(operator/internal/scanjob.JobName): the Scanner's name cut to 40
characters, "-scan-" and 16 hex digits of a hash. An RE2 pattern for CEL.
*/}}
{{- define "crowsnest.scanJobNamePattern" -}}
^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?-scan-[0-9a-f]{16}$
{{- end -}}

{{/*
crowsnest.scanPodNamePattern: the names the Job controller gives the Pods
of those Jobs: generateName "<job>-", whose base the API server cuts to 58
characters before it appends 5 random ones, so a long Job name loses its
dash and up to 4 hex digits.
*/}}
{{- define "crowsnest.scanPodNamePattern" -}}
^[a-z0-9]([-a-z0-9]*[a-z0-9])?-scan-[0-9a-f]{12,16}-?[a-z0-9]{5}$
{{- end -}}

{{/*
crowsnest.scanImages: the images the operator's scan Jobs may run, as YAML
{exact: [...], prefixes: [...]}: operator.uploaderImage and
operator.grypeImage as the operator is given them, and
global.scan.admissionPolicy.extraScanImages (an entry ending in "*" allows
every image that starts with the rest).
*/}}
{{- define "crowsnest.scanImages" -}}
{{- $g := .Values.global -}}
{{- $exact := list (include "crowsnest.image" (dict "image" .Values.operator.uploaderImage "global" $g)) (include "crowsnest.image" (dict "image" .Values.operator.grypeImage "global" $g)) -}}
{{- $prefixes := list -}}
{{- range $g.scan.admissionPolicy.extraScanImages -}}
{{- if hasSuffix "*" . -}}
{{- $p := trimSuffix "*" . -}}
{{- if not $p }}{{ fail "global.scan.admissionPolicy.extraScanImages: \"*\" alone would allow every image in scan Jobs; name a repository (registry.example/grype:*)" }}{{ end -}}
{{- $prefixes = append $prefixes $p -}}
{{- else -}}
{{- $exact = append $exact . -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "exact" (uniq $exact) "prefixes" (uniq $prefixes)) -}}
{{- end -}}
