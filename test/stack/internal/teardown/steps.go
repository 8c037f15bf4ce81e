package teardown

import (
	"errors"
	"sync"
	"testing"
)

// Steps is an ordered list of stop functions, each run at most once.
// The zero value is ready to use; it is safe for concurrent use.
type Steps struct {
	mu    sync.Mutex
	steps []*step
	ended bool
}

type step struct {
	once sync.Once
	fn   func() error
	err  error
}

func (s *step) run() error {
	_, err := s.runFirst()
	return err
}

// runFirst runs the step unless it ran already; first tells whether this
// call ran it.
func (s *step) runFirst() (first bool, err error) {
	s.once.Do(func() { first, s.err = true, s.fn() })
	return first, s.err
}

// Add appends fn and returns the function that runs it now. fn runs once
// whoever calls first (that function, Run or a signal); a later call waits
// for the first to finish and returns its error. Once Run has started, a
// step added late (its thing started while the run was ending) runs at
// once, so that it does not outlive the run.
func (s *Steps) Add(fn func() error) (runNow func() error) {
	st := &step{fn: fn}
	s.mu.Lock()
	s.steps = append(s.steps, st)
	ended := s.ended
	s.mu.Unlock()
	if ended {
		_ = st.run()
	}
	return st.run
}

// Run runs every step not yet run, the last added first, and returns
// their errors joined. Steps that already ran are not run again, and their
// errors are their caller's.
func (s *Steps) Run() error {
	s.mu.Lock()
	s.ended = true
	steps := s.steps
	s.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if first, err := steps[i].runFirst(); first {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ForTest returns the steps of a test that starts things on the host:
// they run when the test ends (t.Cleanup; an error fails it) and when
// SIGTERM or SIGINT stops the test binary before that (OnSignal: then the
// binary exits 1 once they are done).
func ForTest(t testing.TB) *Steps {
	s := &Steps{}
	stop := OnSignal(func() { _ = s.Run() })
	t.Cleanup(func() {
		// The watch ends after the steps: a SIGTERM while they run waits
		// for them (each runs once) instead of killing the binary halfway.
		err := s.Run()
		stop()
		if err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	return s
}
