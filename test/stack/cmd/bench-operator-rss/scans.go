package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

// scanPlayer plays the scan Jobs' Pods and the Job controller, which
// envtest lacks: for each new scan Job (label managed-by=crowsnest-operator,
// seen on a watch) it uploads a report for the Job's digest to results-api
// and then marks the Job succeeded through the status subresource. It
// counts Job creations per digest: a second Job for a digest is a
// duplicate, since no scan ever fails here and rescans are a day away.
type scanPlayer struct {
	cs     kubernetes.Interface
	apiURL string
	token  string
	http   *http.Client
	queue  chan *batchv1.Job

	mu         sync.Mutex
	seen       map[types.UID]bool
	perDigest  map[string]int
	duplicates []string // "namespace/job: digest"
	created    int
	completed  map[string]bool // digests whose Job was marked succeeded
	lastDone   time.Time
	waiters    map[string]chan struct{}
	errs       []error
}

func newScanPlayer(cs kubernetes.Interface, apiURL, token string) *scanPlayer {
	return &scanPlayer{cs: cs, apiURL: apiURL, token: token,
		http:  &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}},
		queue: make(chan *batchv1.Job, 1<<16), seen: map[types.UID]bool{}, perDigest: map[string]int{},
		completed: map[string]bool{}, waiters: map[string]chan struct{}{}}
}

// Run watches scan Jobs in every namespace and scans them on workers
// goroutines until ctx ends; it returns once the informer has synced.
func (p *scanPlayer) Run(ctx context.Context, workers int) error {
	lw := cache.NewFilteredListWatchFromClient(p.cs.BatchV1().RESTClient(), "jobs", metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = scan.LabelManagedBy + "=" + scan.ManagedBy
	})
	inf := cache.NewSharedIndexInformer(lw, &batchv1.Job{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: p.onAdd}); err != nil {
		return err
	}
	go inf.Run(ctx.Done())
	for range workers {
		go p.work(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("job informer did not sync")
	}
	return nil
}

func (p *scanPlayer) onAdd(obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	d := job.Annotations[scan.AnnotationDigest]
	p.mu.Lock()
	if p.seen[job.UID] {
		p.mu.Unlock()
		return
	}
	p.seen[job.UID] = true
	p.created++
	p.perDigest[d]++
	if p.perDigest[d] > 1 {
		p.duplicates = append(p.duplicates, fmt.Sprintf("%s/%s: %s", job.Namespace, job.Name, d))
	}
	if w, ok := p.waiters[d]; ok {
		close(w)
		delete(p.waiters, d)
	}
	p.mu.Unlock()
	if isFinished(job) {
		return
	}
	p.queue <- job // bounded; a full queue holds the informer back
}

func (p *scanPlayer) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-p.queue:
			if err := p.scan(ctx, job); err != nil && ctx.Err() == nil {
				p.mu.Lock()
				p.errs = append(p.errs, err)
				p.mu.Unlock()
			}
		}
	}
}

// scan uploads the report and then marks the Job succeeded, in the order
// the uploader and the Job controller would.
func (p *scanPlayer) scan(ctx context.Context, job *batchv1.Job) error {
	d := job.Annotations[scan.AnnotationDigest]
	if d == "" {
		return fmt.Errorf("job %s/%s has no %s annotation", job.Namespace, job.Name, scan.AnnotationDigest)
	}
	if err := putReport(ctx, p.http, p.apiURL, p.token, d); err != nil {
		return err
	}
	jobs := p.cs.BatchV1().Jobs(job.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setSucceeded(cur)
		_, err = jobs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("mark job %s/%s succeeded: %w", job.Namespace, job.Name, err)
	}
	p.mu.Lock()
	p.completed[d] = true
	p.lastDone = time.Now()
	p.mu.Unlock()
	return nil
}

// setSucceeded writes what the Job controller writes on success; the API
// server (1.31+) wants SuccessCriteriaMet before Complete, and startTime
// and completionTime with them.
func setSucceeded(job *batchv1.Job) {
	now := metav1.Now()
	start := metav1.NewTime(now.Add(-time.Second))
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached,
			LastTransitionTime: now, LastProbeTime: now}
	}
	job.Status.StartTime = &start
	job.Status.CompletionTime = &now
	job.Status.Succeeded = 1
	job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}
}

func isFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// jobCounts is what the player saw.
type jobCounts struct {
	Created, Digests, Completed int
	Duplicates                  []string
	LastDone                    time.Time
	Errors                      []error
}

func (p *scanPlayer) Counts() jobCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return jobCounts{Created: p.created, Digests: len(p.perDigest), Completed: len(p.completed),
		Duplicates: append([]string(nil), p.duplicates...), LastDone: p.lastDone, Errors: append([]error(nil), p.errs...)}
}

// WaitJob returns a channel closed when the first Job for d appears.
func (p *scanPlayer) WaitJob(d string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	if p.perDigest[d] > 0 {
		close(ch)
		return ch
	}
	p.waiters[d] = ch
	return ch
}
