package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// The identities the stack makes for --read-auth=kubernetes, as the chart
// would: ClusterRoles on the virtual resource reports.crowsnest.dev, the
// operator's lookup (cluster-wide list), an admin and a viewer of the demo
// namespace for the dashboard and kubectl-crowsnest.
const (
	AdminServiceAccount  = "crowsnest-admin"
	ViewerServiceAccount = "crowsnest-viewer"
	operatorReader       = "crowsnest-operator"
)

var reportsRules = func(verbs ...string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"crowsnest.dev"}, Resources: []string{"reports"}, Verbs: verbs}}
}

// setupReadAuth makes the roles, ServiceAccounts and bindings, and keeps
// the operator's lookup token fresh (results-api's audience, an hour).
func (s *Stack) setupReadAuth(ctx, bg context.Context) error {
	if s.Options.ReadAuth != "kubernetes" {
		return nil
	}
	c := s.Cluster.Client
	for _, ns := range []string{MatcherNamespace, workload.Namespace} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	roles := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-view", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
			Rules: reportsRules("get", "list")},
		{ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-admin"}, Rules: reportsRules("get", "list", "create", "delete")},
		{ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-operator-reads"}, Rules: reportsRules("list")},
	}
	for _, r := range roles {
		if _, err := c.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	bind := func(ns, sa, role string, cluster bool) error {
		if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
		var err error
		if cluster {
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
				Subjects: subjects, RoleRef: ref}, metav1.CreateOptions{})
		} else {
			_, err = c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns},
				Subjects: subjects, RoleRef: ref}, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
	if err := bind(MatcherNamespace, operatorReader, "crowsnest-operator-reads", true); err != nil {
		return err
	}
	if err := bind(MatcherNamespace, AdminServiceAccount, "crowsnest-admin", true); err != nil {
		return err
	}
	if err := bind(workload.Namespace, ViewerServiceAccount, "crowsnest-view", false); err != nil {
		return err
	}
	s.operatorTokenFile = filepath.Join(s.Options.StateDir, "operator-results-api-token")
	refresh := func(ctx context.Context) error {
		tok, err := s.ReadToken(ctx, MatcherNamespace, operatorReader)
		if err != nil {
			return err
		}
		tmp := s.operatorTokenFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(tok), 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, s.operatorTokenFile)
	}
	if err := refresh(ctx); err != nil {
		return err
	}
	s.goRun(bg, "operator token", func(ctx context.Context) error {
		t := time.NewTicker(20 * time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				if err := refresh(ctx); err != nil && ctx.Err() == nil {
					s.Log.Warn("refresh the operator's results-api token", "error", err)
				}
			}
		}
	})
	return nil
}

// ReadToken mints an hour's token of namespace/sa for results-api's
// audience: what `kubectl create token … --audience crowsnest-results-api`
// prints.
func (s *Stack) ReadToken(ctx context.Context, namespace, sa string) (string, error) {
	exp := int64(3600)
	tr, err := s.Cluster.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{TokenAudience}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of %s/%s: %w", namespace, sa, err)
	}
	return tr.Status.Token, nil
}
