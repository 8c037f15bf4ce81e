package scanner

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// platformTTL is how long a node's platform is remembered: nodes do not
// change architecture, but a name can come back as another machine.
const platformTTL = 10 * time.Minute

// platforms tells the platform (os/arch) of nodes, from their
// kubernetes.io/os and kubernetes.io/arch labels, so that a multi-arch image
// is scanned for the platform the workload actually runs. It reads one node's
// metadata when a scan Job is created, not a cache of every Node. Where the
// operator may not read Nodes (a Role per namespace), it answers "" and
// Grype scans its default platform.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
type platforms struct {
	reader client.Reader
	now    func() time.Time
	mu     sync.Mutex
	byNode map[string]platformEntry
}

type platformEntry struct {
	platform string
	at       time.Time
}

func (p *platforms) of(ctx context.Context, node string) string {
	if node == "" || p.reader == nil {
		return ""
	}
	p.mu.Lock()
	e, ok := p.byNode[node]
	p.mu.Unlock()
	if ok && p.now().Sub(e.at) < platformTTL {
		return e.platform
	}
	var m metav1.PartialObjectMetadata
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	platform := ""
	if err := p.reader.Get(ctx, client.ObjectKey{Name: node}, &m); err == nil {
		platform = nodePlatform(m.Labels)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byNode == nil || len(p.byNode) > 10000 {
		p.byNode = map[string]platformEntry{}
	}
	p.byNode[node] = platformEntry{platform: platform, at: p.now()}
	return platform
}

// nodePlatform is os/arch from a node's well-known labels, or "" when they
// are missing or not a valid platform.
func nodePlatform(labels map[string]string) string {
	os, arch := labels[corev1.LabelOSStable], labels[corev1.LabelArchStable]
	if os == "" || arch == "" {
		return ""
	}
	platform := os + "/" + arch
	if scanjob.ValidPlatform(platform) != nil {
		return ""
	}
	return platform
}
