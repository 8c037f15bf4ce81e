package workload

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// Demo names.
const (
	Namespace   = "crowsnest-demo"
	ScannerName = "demo"
	IgnoreLabel = "crowsnest.dev/ignore"
)

// PodSpec is one demo Pod: its name, the demo image it runs and whether it
// carries the ignore label.
type PodSpec struct {
	Name, Image string
	Ignored     bool
}

// DemoPods: two Pods share the alpine digest, one is ignored, one runs an
// image the registry does not have.
var DemoPods = []PodSpec{
	{Name: "web-1", Image: "alpine"},
	{Name: "web-2", Image: "alpine"},
	{Name: "api", Image: "debian"},
	{Name: "frontend", Image: "node-app"},
	{Name: "tools", Image: "go-app"},
	{Name: "legacy", Image: "internal", Ignored: true},
	{Name: "payments", Image: "private"},
}

// Scheme knows core types and the Scanner.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = crowsnestv1alpha1.AddToScheme(s)
	return s
}

// NewClient returns a controller-runtime client for cfg.
func NewClient(cfg *rest.Config) (client.Client, error) {
	return client.New(cfg, client.Options{Scheme: Scheme()})
}

// Scanner is the demo Scanner of namespace ns.
func Scanner(ns string, maxConcurrent int32, rescan time.Duration) *crowsnestv1alpha1.Scanner {
	s := &crowsnestv1alpha1.Scanner{
		ObjectMeta: metav1.ObjectMeta{Name: ScannerName, Namespace: ns},
		Spec: crowsnestv1alpha1.ScannerSpec{
			IgnoreLabel:        IgnoreLabel,
			MaxConcurrentScans: maxConcurrent,
			ScanTimeout:        &metav1.Duration{Duration: 5 * time.Minute},
		},
	}
	if rescan > 0 {
		s.Spec.RescanInterval = &metav1.Duration{Duration: rescan}
	}
	return s
}

// Pod renders a demo Pod running image ref.
func Pod(ns, name, ref string, ignored bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "app", Image: ref}},
		},
	}
	if ignored {
		p.Labels[IgnoreLabel] = "true"
	}
	return p
}

// ScanServiceAccount is the service account scan Pods run as (operator and
// results-api --scan-service-account).
const ScanServiceAccount = "crowsnest-scan"

// EnsureNamespace creates ns and its scan service account unless they
// exist, and waits (up to 30s) for its default ServiceAccount, without
// which the ServiceAccount admission plugin refuses Pods.
func EnsureNamespace(ctx context.Context, c client.Client, ns string) error {
	if err := CreateNamespace(ctx, c, ns, nil); err != nil {
		return err
	}
	// The dedicated scan service account, as the chart creates it in every
	// scanned namespace: no permissions, no token mounted by default.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ScanServiceAccount, Namespace: ns},
		AutomountServiceAccountToken: ptr.To(false)}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account %s/%s: %w", ns, ScanServiceAccount, err)
	}
	return nil
}

// CreateNamespace creates ns with labels unless it exists (without the
// scan service account: a ClusterScanner creates that) and waits for its
// default ServiceAccount.
func CreateNamespace(ctx context.Context, c client.Client, ns string, labels map[string]string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return waitDefaultServiceAccount(ctx, c, ns)
}

func waitDefaultServiceAccount(ctx context.Context, c client.Client, ns string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s has no default service account after 30s: %w", ns, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CreateDemo creates the demo namespace, its Scanner and DemoPods; refOf
// maps a demo image name to its reference. Images refOf does not know are
// skipped.
func CreateDemo(ctx context.Context, c client.Client, refOf func(string) (string, bool)) error {
	if err := EnsureNamespace(ctx, c, Namespace); err != nil {
		return err
	}
	if err := c.Create(ctx, Scanner(Namespace, 2, 0)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create scanner: %w", err)
	}
	for _, p := range DemoPods {
		ref, ok := refOf(p.Image)
		if !ok {
			continue
		}
		if err := c.Create(ctx, Pod(Namespace, p.Name, ref, p.Ignored)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create pod %s: %w", p.Name, err)
		}
	}
	return nil
}
