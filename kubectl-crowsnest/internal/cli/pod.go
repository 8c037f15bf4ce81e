package cli

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// getPod reads a Pod of the command's namespace from the API server.
func (o *options) getPod(ctx context.Context, name string) (*corev1.Pod, string, error) {
	ns, _, err := o.namespace()
	if err != nil {
		return nil, "", err
	}
	kc, err := o.kubeClient()
	if err != nil {
		return nil, "", err
	}
	pod, err := kc.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", fmt.Errorf("pod %s not found in namespace %s (choose the namespace with -n)", name, ns)
	case apierrors.IsForbidden(err):
		return nil, "", fmt.Errorf("your credentials cannot read pod %s in namespace %s: %w", name, ns, err)
	case err != nil:
		return nil, "", fmt.Errorf("read pod %s/%s: %w", ns, name, err)
	}
	return pod, ns, nil
}
