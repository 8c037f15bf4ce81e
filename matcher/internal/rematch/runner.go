package rematch

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Runner runs a Pass for the newest DB: a Matcher that arrives while a
// pass runs cancels that pass and starts one for the new DB (the progress
// file then starts over). A pass that stops on an error is resumed after
// RetryInterval.
type Runner struct {
	Pass *Pass
	// OnDone is called after each finished pass (publish
	// crowsnest.rematch.done). It is not called for Result.Repeated.
	OnDone func(Result)
	// RetryInterval is the wait before resuming a pass that failed
	// (default 1 minute).
	RetryInterval time.Duration
	Logger        *slog.Logger
}

// Run takes Matchers from dbs until ctx ends or dbs is closed (then it
// finishes the current pass first). It owns the Matchers it receives and
// closes each one when no pass uses it any more.
func (r *Runner) Run(ctx context.Context, dbs <-chan *Matcher) error {
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	retry := r.RetryInterval
	if retry <= 0 {
		retry = time.Minute
	}
	var cur *Matcher
	defer func() {
		if cur != nil {
			_ = cur.Close()
		}
	}()
	replace := func(m *Matcher) {
		if cur != nil && cur != m {
			_ = cur.Close()
		}
		cur = m
	}
	for {
		if cur == nil {
			select {
			case m, ok := <-dbs:
				if !ok {
					return nil
				}
				replace(m)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		passCtx, cancel := context.WithCancel(ctx)
		type outcome struct {
			res Result
			err error
		}
		doneCh := make(chan outcome, 1)
		go func(m *Matcher) {
			res, err := r.Pass.Run(passCtx, m)
			doneCh <- outcome{res, err}
		}(cur)

		var next *Matcher
		closed := false
		var out outcome
	wait:
		for {
			select {
			case out = <-doneCh:
				break wait
			case m, ok := <-dbs:
				if !ok {
					closed, dbs = true, nil // finish this pass, then stop
					continue
				}
				next = m
				cancel() // the pass returns soon with passCtx's error
			}
		}
		cancel()
		switch {
		case next != nil:
			log.InfoContext(ctx, "new vulnerability DB: restarting rematch pass", "db_built", next.DB().Built)
			replace(next)
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case out.err != nil && !errors.Is(out.err, context.Canceled):
			log.ErrorContext(ctx, "rematch pass stopped; resuming later", "error", out.err, "retry_in", retry)
			if closed {
				return out.err
			}
			select {
			case m, ok := <-dbs:
				if ok {
					replace(m)
				} else {
					return out.err
				}
			case <-time.After(retry):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if out.res.Finished && !out.res.Repeated && r.OnDone != nil {
			r.OnDone(out.res)
		}
		if closed {
			return nil
		}
		// Wait for the next DB.
		select {
		case m, ok := <-dbs:
			if !ok {
				return nil
			}
			replace(m)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
