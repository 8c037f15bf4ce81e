package authz

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSubjectKeys: RoleBinding subjects are indexed as RBAC matches them,
// and an identity looks itself up by its user and its groups.
func TestSubjectKeys(t *testing.T) {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "x"}, Subjects: []rbacv1.Subject{
		{Kind: rbacv1.UserKind, Name: "alice"},
		{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:ci"},
		{Kind: rbacv1.ServiceAccountKind, Name: "bot", Namespace: "ci"},
		{Kind: rbacv1.ServiceAccountKind, Name: "local"}, // no namespace: the RoleBinding's own
		{Kind: "Unknown", Name: "ignored"},
	}}
	got, err := subjectKeys(rb)
	want := []string{"user:alice", "group:system:serviceaccounts:ci", "user:system:serviceaccount:ci:bot", "user:system:serviceaccount:team-a:local"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("subjectKeys = %v, %v; want %v", got, err, want)
	}
	if keys, _ := subjectKeys(&rbacv1.ClusterRoleBinding{Subjects: rb.Subjects}); keys != nil {
		t.Errorf("a ClusterRoleBinding indexed as %v: the cluster-wide review decides those", keys)
	}
	id := Identity{Username: "system:serviceaccount:ci:bot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ci"}}
	if k := identityKeys(id); !slices.Equal(k, []string{"user:system:serviceaccount:ci:bot", "group:system:serviceaccounts", "group:system:serviceaccounts:ci"}) {
		t.Errorf("identityKeys = %v", k)
	}
	trimmed, _ := trimBinding(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "x",
		Annotations: map[string]string{"big": "value"}}, RoleRef: rbacv1.RoleRef{Name: "r"}, Subjects: rb.Subjects})
	if tb := trimmed.(*rbacv1.RoleBinding); tb.Annotations != nil || tb.RoleRef.Name != "" || len(tb.Subjects) != len(rb.Subjects) {
		t.Errorf("trimmed binding %+v keeps more than namespace, name and subjects", tb)
	}
}
