package teardown

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestStepsRunOnceLastFirst: Run runs the steps not yet run, the last
// added first; a step run by its own function is not run again, and its
// error is reported there, not by Run.
func TestStepsRunOnceLastFirst(t *testing.T) {
	var mu sync.Mutex
	var order []string
	step := func(name string, err error) func() error {
		return func() error {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return err
		}
	}
	var s Steps
	s.Add(step("network", nil))
	stopNode := s.Add(step("node", errors.New("node: a shim outlived containerd")))
	s.Add(step("proxy", errors.New("proxy: still bound")))

	if err := stopNode(); err == nil {
		t.Fatal("the node's stop returned no error")
	}
	if err := stopNode(); err == nil || len(order) != 1 {
		t.Fatalf("a second call ran the step again or lost its error: %v, %v", order, err)
	}
	err := s.Run()
	if want := []string{"node", "proxy", "network"}; !slices.Equal(order, want) {
		t.Fatalf("ran %v, want %v", order, want)
	}
	if err == nil || err.Error() != "proxy: still bound" {
		t.Fatalf("Run returned %v, want only the proxy's error (the node's was its caller's)", err)
	}
	if err := s.Run(); err != nil || len(order) != 3 {
		t.Fatalf("a second Run ran %v, %v", order, err)
	}
}

// TestStepsRunWaitsForAStepRunning: a signal's Run that comes while the
// test itself stops the node waits for that stop instead of stopping the
// node a second time beside it, then runs the rest.
func TestStepsRunWaitsForAStepRunning(t *testing.T) {
	var s Steps
	var networkClosed, nodeStops int
	s.Add(func() error { networkClosed++; return nil })
	release := make(chan struct{})
	started := make(chan struct{})
	stopNode := s.Add(func() error {
		nodeStops++
		close(started)
		<-release
		return nil
	})
	go func() { _ = stopNode() }()
	<-started
	done := make(chan struct{})
	go func() { _ = s.Run(); close(done) }()
	select {
	case <-done:
		t.Fatal("Run returned while the node was still stopping")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-done
	if nodeStops != 1 || networkClosed != 1 {
		t.Fatalf("node stopped %d times, network closed %d times; want 1 and 1", nodeStops, networkClosed)
	}
}

// TestStepAddedAfterRunRunsAtOnce: something that finished starting while
// the run was ending is stopped when it is added.
func TestStepAddedAfterRunRunsAtOnce(t *testing.T) {
	var s Steps
	_ = s.Run()
	ran := false
	s.Add(func() error { ran = true; return nil })
	if !ran {
		t.Fatal("a step added after Run did not run")
	}
}
