package authn_test

import (
	"context"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serviceAccount creates service account name in namespace default of the
// API server at cfg and returns what mints its tokens: a ten-minute token
// for audience, signed by the API server, as a kubelet's projected token
// or `kubectl create token` would be.
func serviceAccount(ctx context.Context, t *testing.T, cfg *rest.Config, name string) func(audience string) string {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(cfg)
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func(audience string) string {
		t.Helper()
		tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authv1.TokenRequest{
			Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr(int64(600))}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
}
