{{/*
crowsnest.operatorRules: the operator's generated rules (files/role.yaml,
operator/config/rbac/role.yaml copied by make generate) split by apiGroup
into "namespaced" (a Role per watched namespace) and "cluster" (the review
APIs, which are cluster-scoped, so only a ClusterRole grants them), plus
"all" in the file's order, as YAML.
A rule mixing both kinds of group is refused rather than guessed at.
"namespaced" leaves out, one rule per resource, what only the ClusterScanner
controller uses ($clusterWideOnly: "group/resource:verb", verb "*" for all):
namespaces, ServiceAccounts, NetworkPolicies, ClusterScanners and writing
Scanners. It runs
only when the operator watches every namespace, and gets them only in
"all" then. A verb the Scanner controller comes to need on one of these
must leave this list.
*/}}
{{- define "crowsnest.operatorRules" -}}
{{- $role := .Files.Get "files/role.yaml" | fromYaml -}}
{{- if not $role.rules }}{{ fail "files/role.yaml has no rules: run make generate" }}{{ end -}}
{{- $clusterGroups := list "authentication.k8s.io" "authorization.k8s.io" -}}
{{- $clusterWideOnly := list "/namespaces:*" "/serviceaccounts:*" "crowsnest.dev/clusterscanners:*" "crowsnest.dev/clusterscanners/status:*"
  "crowsnest.dev/clusterscanners/finalizers:*" "crowsnest.dev/scanners:create" "crowsnest.dev/scanners:update" "crowsnest.dev/scanners:patch"
  "crowsnest.dev/scanners:delete" "networking.k8s.io/networkpolicies:*" -}}
{{- $namespaced := list -}}
{{- $cluster := list -}}
{{- range $role.rules -}}
{{- $rule := . -}}
{{- $inCluster := 0 -}}
{{- range .apiGroups }}{{ if has . $clusterGroups }}{{ $inCluster = add1 $inCluster }}{{ end }}{{ end -}}
{{- if eq $inCluster 0 -}}
{{- range $r := $rule.resources -}}
{{- $verbs := list -}}
{{- range $v := $rule.verbs -}}
{{- $drop := false -}}
{{- range $g := $rule.apiGroups -}}
{{- if or (has (printf "%s/%s:*" $g $r) $clusterWideOnly) (has (printf "%s/%s:%s" $g $r $v) $clusterWideOnly) }}{{ $drop = true }}{{ end -}}
{{- end -}}
{{- if not $drop }}{{ $verbs = append $verbs $v }}{{ end -}}
{{- end -}}
{{- if $verbs -}}
{{- $namespaced = append $namespaced (merge (dict "resources" (list $r) "verbs" $verbs) (omit $rule "resources" "verbs")) -}}
{{- end -}}
{{- end -}}
{{- else if eq $inCluster (len .apiGroups) -}}
{{- $cluster = append $cluster . -}}
{{- else -}}
{{- fail (printf "files/role.yaml: rule %v mixes cluster-scoped and namespaced API groups" .) -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "namespaced" $namespaced "cluster" $cluster "all" $role.rules) -}}
{{- end -}}
