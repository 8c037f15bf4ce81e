package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// PendingFile is the name of the outbox's file in its directory.
const PendingFile = "events-pending.json"

// Bounds of the pending file. The matcher makes a few events per DB
// update, so these are only reached when NATS is gone for a long time.
const (
	// MaxPending is the most events kept; the oldest go first beyond it.
	MaxPending = 256
	// rememberIDs is how many recently queued ids Add remembers to refuse
	// the same event twice.
	rememberIDs = 64
)

// Outbox is a durable queue of events waiting for JetStream, kept in one
// JSON file replaced atomically on every change. It is safe for concurrent
// use.
type Outbox struct {
	dir string

	mu    sync.Mutex
	state outboxState
	wake  chan struct{}
}

type outboxState struct {
	Version int              `json:"version"`
	Pending []eventsv1.Event `json:"pending"`
	// Queued lists the ids of the last events taken, published or not.
	Queued []string `json:"queued"`
}

const outboxVersion = 1

// OpenOutbox loads the pending file in dir (created if missing).
func OpenOutbox(dir string) (*Outbox, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("events dir: %w", err)
	}
	o := &Outbox{dir: dir, wake: make(chan struct{}, 1), state: outboxState{Version: outboxVersion}}
	b, err := os.ReadFile(filepath.Join(dir, PendingFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return o, nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", PendingFile, err)
	}
	if err := json.Unmarshal(b, &o.state); err != nil {
		return nil, fmt.Errorf("decode %s: %w", PendingFile, err)
	}
	if o.state.Version != outboxVersion {
		return nil, fmt.Errorf("%s: version %d, want %d", PendingFile, o.state.Version, outboxVersion)
	}
	if len(o.state.Pending) > 0 {
		o.nudge()
	}
	return o, nil
}

// Add queues ev durably. It returns false, and queues nothing, when an event
// with ev's id was queued recently, and dropped > 0 when the file was full
// and that many of the oldest events went to make room.
func (o *Outbox) Add(ev eventsv1.Event) (added bool, dropped int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if slices.Contains(o.state.Queued, ev.ID) || slices.ContainsFunc(o.state.Pending, func(p eventsv1.Event) bool { return p.ID == ev.ID }) {
		return false, 0, nil // Has, under the same lock
	}
	next := o.state
	next.Pending = append(slices.Clone(o.state.Pending), ev)
	if over := len(next.Pending) - MaxPending; over > 0 {
		next.Pending, dropped = next.Pending[over:], over
	}
	next.Queued = append(slices.Clone(o.state.Queued), ev.ID)
	if over := len(next.Queued) - rememberIDs; over > 0 {
		next.Queued = next.Queued[over:]
	}
	if err := o.save(next); err != nil {
		return false, 0, err
	}
	o.state = next
	o.nudge()
	return true, dropped, nil
}

// Has reports whether an event with id is pending or was queued recently.
func (o *Outbox) Has(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.state.Queued, id) || slices.ContainsFunc(o.state.Pending, func(p eventsv1.Event) bool { return p.ID == id })
}

// Pending returns the queued events, oldest first.
func (o *Outbox) Pending() []eventsv1.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.state.Pending)
}

// Len is the number of pending events.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.state.Pending)
}

// Done removes the event with id once JetStream has acknowledged it.
func (o *Outbox) Done(id string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	next := o.state
	next.Pending = slices.DeleteFunc(slices.Clone(o.state.Pending), func(p eventsv1.Event) bool { return p.ID == id })
	if len(next.Pending) == len(o.state.Pending) {
		return nil
	}
	if err := o.save(next); err != nil {
		return err
	}
	o.state = next
	return nil
}

// Wake is signalled when an event was added.
func (o *Outbox) Wake() <-chan struct{} { return o.wake }

func (o *Outbox) nudge() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// save replaces the pending file atomically and durably: temporary file,
// sync, rename, directory sync.
func (o *Outbox) save(s outboxState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(o.dir, PendingFile+".*")
	if err != nil {
		return fmt.Errorf("save %s: %w", PendingFile, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(o.dir, PendingFile))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("save %s: %w", PendingFile, err)
	}
	if d, err := os.Open(o.dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
