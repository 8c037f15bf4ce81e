package stack

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteBearer returns a token results-api accepts for writes: the static
// write token, or in serviceaccount mode a TokenRequest token of
// namespace's default service account (audience crowsnest-results-api).
func (s *Stack) WriteBearer(ctx context.Context, namespace string) (string, error) {
	if s.Options.UploadToken != "serviceaccount" {
		return s.WriteToken, nil
	}
	exp := int64(3600)
	tr, err := s.Cluster.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{TokenAudience}, ExpirationSeconds: &exp},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a write token in %s: %w", namespace, err)
	}
	return tr.Status.Token, nil
}
