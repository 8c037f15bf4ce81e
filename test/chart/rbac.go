package charttest

import (
	"fmt"
	"os"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// ResultsAPIRules are results-api's permissions in tokenreview mode with
// readAuth kubernetes, exactly what its authorization needs
// (results-api/internal/authz doc.go): TokenReview, SubjectAccessReview
// for readers, scrapers and admins, watching the triage exceptions, the imported VEX documents and RoleBindings (the read
// authorization's candidate namespaces, readAuth.namespaces rbac), and
// reading one scan Pod and its Job by name.
var ResultsAPIRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"vulnerabilityexceptions", "clustervulnerabilityexceptions", "vexdocuments", "clustervexdocuments"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get"}},
}

// OperatorReadRules let the operator's lookup read every report in
// results-api (SubjectAccessReview for list on the virtual resource
// reports.crowsnest.dev, cluster-wide): without them it would see only the
// digests of its own namespaces and scan the rest again and again.
var OperatorReadRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"reports"}, Verbs: []string{"list"}},
}

// ResultsAPIReadRules are what results-api needs for its read
// authorization alone (static writes, readAuth kubernetes): TokenReview,
// SubjectAccessReview, exceptions and RoleBindings, no Pod or Job.
var ResultsAPIReadRules = ResultsAPIRules[:4]

// AdminRules and ViewRules are the ClusterRoles for people and CI on the
// virtual resource reports.crowsnest.dev: the admin scope (SubjectAccessReview
// create/delete), and reading.
var (
	AdminRules = []rbacv1.PolicyRule{
		{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"reports"}, Verbs: []string{"get", "list", "create", "delete"}},
	}
	ViewRules = []rbacv1.PolicyRule{
		{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"reports"}, Verbs: []string{"get", "list"}},
	}
)

// aggregateLabel prefixes the labels that fold a ClusterRole into a
// built-in one (aggregate-to-view, -edit, -admin).
const aggregateLabel = "rbac.authorization.k8s.io/aggregate-to-"

// RolePolicy is what one Role or ClusterRole of the chart must hold: exactly
// Rules, and aggregation into exactly the built-in roles in AggregateTo.
type RolePolicy struct {
	Rules       []rbacv1.PolicyRule
	AggregateTo []string // e.g. "view" for the label rbac.authorization.k8s.io/aggregate-to-view: "true"
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

// CheckRBAC returns a problem for every difference between the roles the
// rendered objects define and policy, which maps "Kind/name" of each Role and
// ClusterRole the chart may define to what it must hold (the operator's
// generated files, ResultsAPIRules, AdminRules, ViewRules). A rendered role
// must grant exactly its policy's permissions, no more and no fewer; a role
// not in policy may grant nothing. Non-resource URLs count like resources
// (a Role cannot grant them at all). Wildcards and aggregation rules are
// refused outright, and aggregation labels must be exactly the policy's.
// Bindings may only bind the chart's own roles to ServiceAccounts.
func CheckRBAC(objs []*unstructured.Unstructured, policy map[string]RolePolicy) ([]string, error) {
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
		want := policy[id]
		if r.AggregationRule != nil {
			problems = append(problems, id+": aggregation rules are not allowed")
		}
		problems = append(problems, aggregationProblems(id, r.Labels, want.AggregateTo)...)
		granted := map[permission]bool{}
		for _, rule := range r.Rules {
			problems = append(problems, ruleProblems(id, rule, want.Rules)...)
			for _, p := range expand(rule) {
				granted[p] = true
			}
		}
		for _, rule := range want.Rules {
			for _, p := range expand(rule) {
				if !granted[p] {
					problems = append(problems, fmt.Sprintf("%s lacks %s", id, p))
				}
			}
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

// aggregationProblems: a role's aggregate-to-* labels (set to "true") must be
// exactly want; each folds the role's rules into a built-in role that many
// users hold.
func aggregationProblems(owner string, labels map[string]string, want []string) []string {
	var problems []string
	have := map[string]bool{}
	for k, v := range labels {
		target, ok := strings.CutPrefix(k, aggregateLabel)
		if !ok {
			continue
		}
		if v != "true" {
			problems = append(problems, fmt.Sprintf("%s has label %s=%q; aggregation labels must be \"true\"", owner, k, v))
		}
		have[target] = true
		if !slices.Contains(want, target) {
			problems = append(problems, fmt.Sprintf("%s is aggregated into the built-in %s role", owner, target))
		}
	}
	for _, target := range want {
		if !have[target] {
			problems = append(problems, fmt.Sprintf("%s lacks label %s%s", owner, aggregateLabel, target))
		}
	}
	return problems
}

// permission is one (group, resource, verb) a rule grants, or one
// (non-resource URL, verb).
type permission struct{ group, resource, url, verb string }

func (p permission) String() string {
	if p.url != "" {
		return p.verb + " " + p.url
	}
	return fmt.Sprintf("%s %s/%s", p.verb, groupName(p.group), p.resource)
}

func expand(rule rbacv1.PolicyRule) []permission {
	var out []permission
	for _, v := range rule.Verbs {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				out = append(out, permission{group: g, resource: res, verb: v})
			}
		}
		for _, u := range rule.NonResourceURLs {
			out = append(out, permission{url: u, verb: v})
		}
	}
	return out
}

// ruleProblems checks that every (group, resource, verb) a rule grants is
// granted by one of the allowed rules, and that the rule is not narrowed in
// ways the comparison cannot see.
func ruleProblems(owner string, rule rbacv1.PolicyRule, allowed []rbacv1.PolicyRule) []string {
	var problems []string
	if len(rule.NonResourceURLs) > 0 && strings.HasPrefix(owner, "Role/") {
		problems = append(problems, fmt.Sprintf("%s grants non-resource URLs %v, which a Role cannot", owner, rule.NonResourceURLs))
	}
	if len(rule.ResourceNames) > 0 {
		problems = append(problems, fmt.Sprintf("%s has resourceNames %v, which this check does not compare", owner, rule.ResourceNames))
	}
	for _, p := range expand(rule) {
		if p.group == "*" || p.resource == "*" || p.verb == "*" || strings.HasSuffix(p.url, "*") {
			problems = append(problems, fmt.Sprintf("%s grants a wildcard (%q %q %q %q)", owner, p.group, p.resource, p.url, p.verb))
			continue
		}
		if !grants(allowed, p) {
			problems = append(problems, fmt.Sprintf("%s grants %s beyond what it may hold", owner, p))
		}
	}
	return problems
}

func grants(rules []rbacv1.PolicyRule, p permission) bool {
	for _, r := range rules {
		if !slices.Contains(r.Verbs, p.verb) {
			continue
		}
		if p.url != "" && slices.Contains(r.NonResourceURLs, p.url) {
			return true
		}
		if p.url == "" && slices.Contains(r.APIGroups, p.group) && slices.Contains(r.Resources, p.resource) {
			return true
		}
	}
	return false
}

// ClusterWideOnly are the permissions, "group/resource:verb" (verb "*" for
// all), only the operator's ClusterScanner controller uses. It runs only
// when the operator watches every namespace, so the chart grants them only
// then (in its ClusterRole), never in the per-namespace Roles nor, for the
// cluster-scoped ones, in the ClusterRole of a namespaced operator.
var ClusterWideOnly = []string{"/namespaces:*", "/serviceaccounts:*", "crowsnest.dev/clusterscanners:*",
	"crowsnest.dev/clusterscanners/status:*", "crowsnest.dev/clusterscanners/finalizers:*",
	"crowsnest.dev/scanners:create", "crowsnest.dev/scanners:update", "crowsnest.dev/scanners:patch", "crowsnest.dev/scanners:delete",
	"networking.k8s.io/networkpolicies:*"}

// WithoutPermissions returns rules without the permissions in drop (as
// ClusterWideOnly), one rule per resource, leaving out rules with nothing
// left.
func WithoutPermissions(rules []rbacv1.PolicyRule, drop []string) []rbacv1.PolicyRule {
	dropped := func(groups []string, resource, verb string) bool {
		return slices.ContainsFunc(groups, func(g string) bool {
			return slices.Contains(drop, g+"/"+resource+":*") || slices.Contains(drop, g+"/"+resource+":"+verb)
		})
	}
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		for _, res := range r.Resources {
			var verbs []string
			for _, v := range r.Verbs {
				if !dropped(r.APIGroups, res, v) {
					verbs = append(verbs, v)
				}
			}
			if len(verbs) > 0 {
				one := *r.DeepCopy()
				one.Resources, one.Verbs = []string{res}, verbs
				out = append(out, one)
			}
		}
	}
	return out
}

// Scope tells whether group/resource is namespaced ("scanners/status" is
// its parent's scope).
type Scope func(group, resource string) (namespaced bool, err error)

// DiscoveryScope asks the API server's discovery which resources are
// namespaced.
func DiscoveryScope(cfg *rest.Config) (Scope, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discover resources: %w", err)
	}
	namespaced := map[string]bool{} // group/resource -> namespaced
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			namespaced[gv.Group+"/"+r.Name] = r.Namespaced
		}
	}
	return func(group, resource string) (bool, error) {
		resource, _, _ = strings.Cut(resource, "/")
		ns, ok := namespaced[group+"/"+resource]
		if !ok {
			return false, fmt.Errorf("the API server serves no resource %s/%s", groupName(group), resource)
		}
		return ns, nil
	}, nil
}

// SplitByScope splits rules into those on namespaced resources (which a Role
// grants) and those on cluster-scoped ones (which only a ClusterRole does),
// independently of how the chart splits them. A rule spanning both scopes
// is an error.
func SplitByScope(rules []rbacv1.PolicyRule, scope Scope) (namespaced, cluster []rbacv1.PolicyRule, err error) {
	for _, r := range rules {
		var ns, cl int
		for _, p := range expand(r) {
			isNS, err := scope(p.group, p.resource)
			if err != nil {
				return nil, nil, err
			}
			if isNS {
				ns++
			} else {
				cl++
			}
		}
		switch {
		case ns > 0 && cl > 0:
			return nil, nil, fmt.Errorf("rule %v spans namespaced and cluster-scoped resources", r)
		case ns > 0:
			namespaced = append(namespaced, r)
		default:
			cluster = append(cluster, r)
		}
	}
	return namespaced, cluster, nil
}

func groupName(g string) string {
	if g == "" {
		return "core"
	}
	return g
}
