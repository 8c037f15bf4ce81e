package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// NewScheme returns a scheme with the built-in kinds, the Scanner and the
// ClusterScanner: the manager's, and the tests' clients'.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("add built-in kinds to scheme: %w", err)
	}
	if err := crowsnestv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("add crowsnest kinds to scheme: %w", err)
	}
	return scheme, nil
}
