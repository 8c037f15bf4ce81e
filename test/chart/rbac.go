package charttest

import (
	"fmt"
	"os"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TokenReviewRules are results-api's only permission, in tokenreview mode:
// checking the scan Pods' projected tokens.
var TokenReviewRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
}

// LoadRole reads the rules of a ClusterRole YAML file (the operator's
// generated config/rbac/role.yaml).
func LoadRole(path string) ([]rbacv1.PolicyRule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if len(role.Rules) == 0 {
		return nil, fmt.Errorf("%s has no rules", path)
	}
	return role.Rules, nil
}

// CheckRBAC returns a problem for every permission the rendered objects grant
// beyond allowed, which maps "Kind/name" of each Role and ClusterRole the
// chart may define to the rules it may hold (the operator's generated files,
// TokenReviewRules). A role not in allowed may grant nothing; wildcards,
// aggregation and non-resource URLs are refused outright; bindings may only
// bind the chart's own roles to ServiceAccounts.
func CheckRBAC(objs []*unstructured.Unstructured, allowed map[string][]rbacv1.PolicyRule) ([]string, error) {
	roles := map[string]bool{}
	var problems []string
	for _, o := range objs {
		kind := o.GetKind()
		if kind != "ClusterRole" && kind != "Role" {
			continue
		}
		var r rbacv1.ClusterRole // Role has the same fields
		if err := fromUnstructured(o, &r); err != nil {
			return nil, err
		}
		id := kind + "/" + r.Name
		if r.AggregationRule != nil {
			problems = append(problems, id+": aggregation rules are not allowed")
		}
		for _, rule := range r.Rules {
			problems = append(problems, ruleProblems(id, rule, allowed[id])...)
		}
		roles[id] = true
	}
	for _, o := range objs {
		kind := o.GetKind()
		if kind != "ClusterRoleBinding" && kind != "RoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding
		if err := fromUnstructured(o, &b); err != nil {
			return nil, err
		}
		if !roles[b.RoleRef.Kind+"/"+b.RoleRef.Name] {
			problems = append(problems, fmt.Sprintf("%s/%s binds %s/%s, which the chart does not define", kind, b.Name, b.RoleRef.Kind, b.RoleRef.Name))
		}
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				problems = append(problems, fmt.Sprintf("%s/%s binds %s %s; only ServiceAccounts are allowed", kind, b.Name, s.Kind, s.Name))
			}
		}
	}
	return problems, nil
}

// ruleProblems checks that every (group, resource, verb) a rule grants is
// granted by one of the allowed rules.
func ruleProblems(owner string, rule rbacv1.PolicyRule, allowed []rbacv1.PolicyRule) []string {
	var problems []string
	if len(rule.NonResourceURLs) > 0 {
		problems = append(problems, fmt.Sprintf("%s grants non-resource URLs %v", owner, rule.NonResourceURLs))
	}
	for _, g := range rule.APIGroups {
		for _, res := range rule.Resources {
			for _, v := range rule.Verbs {
				if g == "*" || res == "*" || v == "*" {
					problems = append(problems, fmt.Sprintf("%s grants a wildcard (%q %q %q)", owner, g, res, v))
					continue
				}
				if !grants(allowed, g, res, v) {
					problems = append(problems, fmt.Sprintf("%s grants %s %s/%s beyond what it may hold", owner, v, groupName(g), res))
				}
			}
		}
	}
	return problems
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func groupName(g string) string {
	if g == "" {
		return "core"
	}
	return g
}
