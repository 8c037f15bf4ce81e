package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the KeyValue bucket the notifier user may use (api/events/v1
// permissions).
const Bucket = "crowsnest-notifier"

// DoneTTL is how long a handled event is remembered: longer than the
// oldest event Validate accepts (events/v1 MaxEventAge).
const DoneTTL = 31 * 24 * time.Hour

// Store reads and writes the notifier's state.
type Store struct {
	kv jetstream.KeyValue
}

// Open creates the bucket or binds to the existing one.
func Open(ctx context.Context, js jetstream.JetStream, maxBytes int64) (*Store, error) {
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         Bucket,
		Description:    "crowsnest notifier state",
		Storage:        jetstream.FileStorage,
		MaxBytes:       maxBytes,
		LimitMarkerTTL: time.Minute,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("open kv bucket %s: %w", Bucket, err)
	}
	return &Store{kv: kv}, nil
}

// hashKey maps arbitrary text (an event id, a namespace is safe already) to
// a key token.
func hashKey(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

// Done reports whether the event was handled.
func (s *Store) Done(ctx context.Context, eventID string) (bool, error) {
	_, err := s.kv.Get(ctx, "done."+hashKey(eventID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get done marker: %w", err)
	}
	return true, nil
}

// MarkDone records that the event was handled.
func (s *Store) MarkDone(ctx context.Context, eventID string) error {
	_, err := s.kv.Create(ctx, "done."+hashKey(eventID), []byte{1}, jetstream.KeyTTL(DoneTTL))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("mark event done: %w", err)
	}
	return nil
}

// get decodes key into out; false when absent.
func (s *Store) get(ctx context.Context, key string, out any) (bool, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get %s: %w", key, err)
	}
	if err := json.Unmarshal(e.Value(), out); err != nil {
		return false, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

func (s *Store) put(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	if _, err := s.kv.Put(ctx, key, b); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

func (s *Store) del(ctx context.Context, key string) error {
	if err := s.kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// keys lists the keys under prefix (prefix + ">").
func (s *Store) keys(ctx context.Context, prefix string) ([]string, error) {
	l, err := s.kv.ListKeysFiltered(ctx, prefix+">")
	if err != nil {
		return nil, fmt.Errorf("list %s keys: %w", prefix, err)
	}
	defer func() { _ = l.Stop() }()
	var out []string
	for k := range l.Keys() {
		out = append(out, k)
	}
	return out, nil
}

// Open returns the open groups (empty when none).
func (s *Store) Open(ctx context.Context) (*OpenGroups, error) {
	o := &OpenGroups{}
	if _, err := s.get(ctx, "open", o); err != nil {
		return nil, err
	}
	if o.Groups == nil {
		o.Groups = map[string]*Group{}
	}
	return o, nil
}

// PutOpen writes the open groups.
func (s *Store) PutOpen(ctx context.Context, o *OpenGroups) error { return s.put(ctx, "open", o) }

// Sealed returns a sealed group; false when it is gone (sent).
func (s *Store) Sealed(ctx context.Context, id string) (*Group, bool, error) {
	g := &Group{}
	ok, err := s.get(ctx, "sealed."+id, g)
	return g, ok, err
}

// PutSealed stores a sealed group.
func (s *Store) PutSealed(ctx context.Context, g *Group) error { return s.put(ctx, "sealed."+g.ID, g) }

// DeleteSealed forgets a sealed group once its receiver accepted it.
func (s *Store) DeleteSealed(ctx context.Context, id string) error { return s.del(ctx, "sealed."+id) }

// SealedIDs lists the sealed groups waiting for a receiver.
func (s *Store) SealedIDs(ctx context.Context) ([]string, error) {
	ks, err := s.keys(ctx, "sealed.")
	for i := range ks {
		ks[i] = strings.TrimPrefix(ks[i], "sealed.")
	}
	return ks, err
}

var labelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// nsKey is a namespace's key token: its name (a DNS label), or a hash of
// anything else, so a malformed name cannot address another key.
func nsKey(ns string) string {
	if labelRE.MatchString(ns) {
		return ns
	}
	return "x-" + hashKey(ns)
}

// Namespaces returns every namespace's latest inventory.
func (s *Store) Namespaces(ctx context.Context) (map[string]*Namespace, error) {
	ks, err := s.keys(ctx, "inv.")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Namespace, len(ks))
	for _, k := range ks {
		n := &Namespace{}
		if ok, err := s.get(ctx, k, n); err != nil {
			return nil, err
		} else if ok {
			out[n.Name] = n
		}
	}
	return out, nil
}

// PutNamespace stores a namespace's inventory; nil deletes it.
func (s *Store) PutNamespace(ctx context.Context, ns string, n *Namespace) error {
	if n == nil || len(n.Digests) == 0 {
		return s.del(ctx, "inv."+nsKey(ns))
	}
	n.Name = ns
	return s.put(ctx, "inv."+nsKey(ns), n)
}

// Criticals returns a digest's critical findings (zero when unknown).
func (s *Store) Criticals(ctx context.Context, digest string) (*Criticals, error) {
	c := &Criticals{}
	_, err := s.get(ctx, "crit."+strings.TrimPrefix(digest, "sha256:"), c)
	return c, err
}

// PutCriticals stores a digest's critical findings.
func (s *Store) PutCriticals(ctx context.Context, digest string, c *Criticals) error {
	return s.put(ctx, "crit."+strings.TrimPrefix(digest, "sha256:"), c)
}

// Failures returns a namespace's recent failed scans.
func (s *Store) Failures(ctx context.Context, ns string) (*Failures, error) {
	f := &Failures{}
	_, err := s.get(ctx, "fail."+nsKey(ns), f)
	if f.Events == nil {
		f.Events = map[string]time.Time{}
	}
	return f, err
}

// PutFailures stores a namespace's recent failed scans.
func (s *Store) PutFailures(ctx context.Context, ns string, f *Failures) error {
	if len(f.Events) == 0 {
		return s.del(ctx, "fail."+nsKey(ns))
	}
	return s.put(ctx, "fail."+nsKey(ns), f)
}
