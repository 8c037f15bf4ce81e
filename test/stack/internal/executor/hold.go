package executor

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

// Hold is a test hook: until release is called, the scan Pods of digest
// (label scan.LabelDigestHash = scan.DigestHash(digest)) run their init
// container and are reported Running, then wait before their main container
// (the uploader) starts — a scan that is running, for as long as a test
// needs. A Pod whose context ends first (deleted, or the executor stops)
// gives up waiting. release is idempotent; holds of the same digest stack,
// and its Pods go on once all are released.
func (e *Executor) Hold(digest string) (release func()) {
	hash := scan.DigestHash(digest)
	gate := make(chan struct{})
	e.mu.Lock()
	if e.holds == nil {
		e.holds = map[string][]chan struct{}{}
	}
	e.holds[hash] = append(e.holds[hash], gate)
	e.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			e.holds[hash] = slices.DeleteFunc(e.holds[hash], func(g chan struct{}) bool { return g == gate })
			if len(e.holds[hash]) == 0 {
				delete(e.holds, hash)
			}
			e.mu.Unlock()
			close(gate)
		})
	}
}

// waitHeld returns once no hold covers pod, or with ctx's error when the
// Pod's context ends first. It holds no lock while it waits.
func (e *Executor) waitHeld(ctx context.Context, pod *corev1.Pod, log *slog.Logger) error {
	hash := pod.Labels[scan.LabelDigestHash]
	if hash == "" {
		return nil
	}
	for logged := false; ; logged = true {
		e.mu.Lock()
		var gate chan struct{}
		if gates := e.holds[hash]; len(gates) > 0 {
			gate = gates[0]
		}
		e.mu.Unlock()
		if gate == nil {
			if logged {
				log.Info("main containers released")
			}
			return nil
		}
		if !logged {
			log.Info("main containers held by a test")
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
