package executor

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

const (
	heldDigest  = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	otherDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func scanPod(digest string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{scan.LabelDigestHash: scan.DigestHash(digest)}}}
}

// waitAsync runs waitHeld for pod and reports its result.
func waitAsync(ctx context.Context, e *Executor, pod *corev1.Pod) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.waitHeld(ctx, pod, slog.New(slog.DiscardHandler)) }()
	return done
}

// blocked fails the test when done has a result within a moment. A moment
// cannot prove a wait; the release below then proves it ends.
func blocked(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("the held Pod went on (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
}

func waited(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the Pod still waits")
		return nil
	}
}

func TestHoldWaitsUntilEveryReleaseOfItsDigest(t *testing.T) {
	e := &Executor{}
	first, second := e.Hold(heldDigest), e.Hold(heldDigest)
	if err := waited(t, waitAsync(t.Context(), e, scanPod(otherDigest))); err != nil {
		t.Fatalf("another digest's Pod: %v", err)
	}
	if err := waited(t, waitAsync(t.Context(), e, &corev1.Pod{})); err != nil {
		t.Fatalf("a Pod without the label: %v", err)
	}
	done := waitAsync(t.Context(), e, scanPod(heldDigest))
	blocked(t, done)
	first()
	first() // idempotent
	blocked(t, done)
	second()
	if err := waited(t, done); err != nil {
		t.Fatalf("released: %v", err)
	}
	if err := waited(t, waitAsync(t.Context(), e, scanPod(heldDigest))); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

func TestHoldEndsWithThePodsContext(t *testing.T) {
	e := &Executor{}
	defer e.Hold(heldDigest)()
	ctx, cancel := context.WithCancel(t.Context())
	done := waitAsync(ctx, e, scanPod(heldDigest))
	blocked(t, done)
	cancel()
	if err := waited(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
