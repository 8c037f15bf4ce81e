package stack

import (
	"context"
	"path/filepath"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/services"
)

// backends are the stack's NATS and Postgres. They need nothing of the
// cluster, so they start while the control plane does (startBackends,
// joinBackends) instead of after it.
type backends struct {
	nats *services.NATS
	pg   *services.Postgres
	err  error
}

// startBackends starts NATS, then Postgres, in the background; the result
// arrives on the channel.
func (s *Stack) startBackends(ctx context.Context) <-chan backends {
	ch := make(chan backends, 1)
	logs := s.Options.StateDir
	go func() {
		n := &services.NATS{Binary: s.Options.Bin.NATS, StoreDir: filepath.Join(logs, "jetstream"), LogDir: logs}
		if err := n.Start(ctx); err != nil {
			ch <- backends{err: err}
			return
		}
		pg, err := services.StartPostgres(ctx)
		ch <- backends{nats: n, pg: pg, err: err}
	}()
	return ch
}

// joinBackends waits for startBackends and takes over what it started, so
// that Close stops it also when the start failed.
func (s *Stack) joinBackends(ch <-chan backends) error {
	b := <-ch
	if b.nats != nil {
		s.NATS = b.nats
		s.closers = append(s.closers, b.nats.Stop)
	}
	if b.pg != nil {
		s.Postgres = b.pg
		s.closers = append(s.closers, func() { _ = b.pg.Stop() })
	}
	return b.err
}
