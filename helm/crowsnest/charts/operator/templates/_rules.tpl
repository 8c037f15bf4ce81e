{{/*
crowsnest.operatorRules: the operator's generated rules (files/role.yaml,
operator/config/rbac/role.yaml copied by make generate) split by apiGroup
into "namespaced" (a Role per watched namespace) and "cluster" (the review
APIs, which are cluster-scoped, so only a ClusterRole grants them), plus
"all" in the file's order, as YAML.
A rule mixing both kinds of group is refused rather than guessed at.
*/}}
{{- define "crowsnest.operatorRules" -}}
{{- $role := .Files.Get "files/role.yaml" | fromYaml -}}
{{- if not $role.rules }}{{ fail "files/role.yaml has no rules: run make generate" }}{{ end -}}
{{- $clusterGroups := list "authentication.k8s.io" "authorization.k8s.io" -}}
{{- $namespaced := list -}}
{{- $cluster := list -}}
{{- range $role.rules -}}
{{- $inCluster := 0 -}}
{{- range .apiGroups }}{{ if has . $clusterGroups }}{{ $inCluster = add1 $inCluster }}{{ end }}{{ end -}}
{{- if eq $inCluster 0 -}}
{{- $namespaced = append $namespaced . -}}
{{- else if eq $inCluster (len .apiGroups) -}}
{{- $cluster = append $cluster . -}}
{{- else -}}
{{- fail (printf "files/role.yaml: rule %v mixes cluster-scoped and namespaced API groups" .) -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "namespaced" $namespaced "cluster" $cluster "all" $role.rules) -}}
{{- end -}}
