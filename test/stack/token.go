package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AdminToken is the static admin token: results-api accepts it for PUT and
// DELETE in every auth mode (what CI uploads and scripts use).
func (s *Stack) AdminToken() string { return s.WriteToken }

// ServiceAccountToken mints a token of namespace/sa for results-api's
// audience, bound to the Pod podName/podUID when podName is not empty — what
// a Pod's projected token volume holds. Tests use it to play workloads.
func (s *Stack) ServiceAccountToken(ctx context.Context, namespace, sa, podName, podUID string) (string, error) {
	exp := int64(600)
	spec := authenticationv1.TokenRequestSpec{Audiences: []string{TokenAudience}, ExpirationSeconds: &exp}
	if podName != "" {
		spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: podName, UID: types.UID(podUID)}
	}
	tr, err := s.Cluster.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for %s/%s: %w", namespace, sa, err)
	}
	return tr.Status.Token, nil
}

// PodToken reads the projected service-account token the real node's
// kubelet mounted into pod from its volume (as someone who execs into the
// Pod, or reads the node's disk, gets it).
func (s *Stack) PodToken(pod corev1.Pod, volume string) (string, error) {
	if pod.Spec.NodeName != NodeName {
		return "", fmt.Errorf("pod %s/%s runs on %q, not the real node", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name != volume || v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken == nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join(s.Options.StateDir, "node", "kubelet", "pods", string(pod.UID), "volumes", "kubernetes.io~projected", volume, src.ServiceAccountToken.Path))
			if err != nil {
				return "", fmt.Errorf("read the kubelet-mounted token of %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			return string(b), nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no projected token volume %q", pod.Namespace, pod.Name, volume)
}
