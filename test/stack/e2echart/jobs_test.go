package e2echart

import (
	"context"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolswatch "k8s.io/client-go/tools/watch"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

// jobCounter records every scan Job created, in any namespace, from the
// moment watchJobs started (a watch from the list's resourceVersion: no
// creation is missed, none counted twice).
type jobCounter struct {
	mu      sync.Mutex
	created []string // namespace/name, in order
}

func watchJobs(ctx context.Context, t *testing.T, c kubernetes.Interface) *jobCounter {
	t.Helper()
	sel := scan.LabelManagedBy + "=" + scan.ManagedBy
	list, err := c.BatchV1().Jobs("").List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, j := range list.Items {
		seen[string(j.UID)] = true
	}
	// RetryWatcher resumes from the last resourceVersion when the watch
	// ends (the API server closes watches every few minutes).
	w, err := toolswatch.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cacheWatcher{c: c, sel: sel})
	if err != nil {
		t.Fatal(err)
	}
	jc := &jobCounter{}
	go func() {
		for ev := range w.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type != watch.Added || seen[string(j.UID)] {
				continue
			}
			seen[string(j.UID)] = true
			jc.mu.Lock()
			jc.created = append(jc.created, j.Namespace+"/"+j.Name)
			jc.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return jc
}

// count is how many scan Jobs were created so far.
func (jc *jobCounter) count() int {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return len(jc.created)
}

// since lists the Jobs created after the first n.
func (jc *jobCounter) since(n int) []string {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return append([]string(nil), jc.created[n:]...)
}

// cacheWatcher watches scan Jobs in every namespace (cache.WatcherWithContext).
type cacheWatcher struct {
	c   kubernetes.Interface
	sel string
}

func (w *cacheWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.LabelSelector = w.sel
	return w.c.BatchV1().Jobs("").Watch(ctx, opts)
}
