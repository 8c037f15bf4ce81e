package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// An Inventory is one namespace's running workloads, from the operator's
// crowsnest.inventory.snapshot: it replaces the namespace's previous one.
type Inventory struct {
	Namespace string
	Labels    map[string]string
	Entries   []InventoryEntry // empty: nothing runs in the namespace
	Truncated bool
	EventID   string    // the CloudEvents id
	Time      time.Time // the event's time: an older inventory is ignored
}

// InventoryEntry is one container of a workload running one digest.
type InventoryEntry struct {
	Kind, Name, Container string
	Digest                string
	Image                 string // as written in the Pod spec
	Init                  bool
	Pods                  int
}

// DigestRuntime says when a digest ran, as far as the inventories tell.
type DigestRuntime struct {
	Digest          string
	FirstSeen       time.Time
	LastSeenRunning time.Time
	// NotRunningSince is set once no namespace lists the digest any more.
	NotRunningSince *time.Time
}

// ApplyInventory replaces the namespace's inventory with inv in one
// transaction, unless an inventory as new or newer (event time, then event
// id) was applied already; it reports whether it applied inv. A
// redelivered inventory is therefore a no-op. Digests that no namespace
// lists any more are marked not running since inv.Time.
func (s *Store) ApplyInventory(ctx context.Context, inv Inventory) (bool, error) {
	labels, err := json.Marshal(inv.Labels)
	if err != nil {
		return false, fmt.Errorf("apply inventory: labels: %w", err)
	}
	if inv.Labels == nil {
		labels = []byte("{}")
	}
	t := inv.Time.UTC()
	applied := false
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The namespace row is the lock: concurrent applies of one
		// namespace run one after the other, the older one losing.
		q := tx.Exec(`INSERT INTO inventory_namespaces AS n (namespace, event_time, event_id, labels, truncated, applied_at)
 VALUES (?, ?, ?, ?, ?, now())
 ON CONFLICT (namespace) DO UPDATE SET event_time = EXCLUDED.event_time, event_id = EXCLUDED.event_id,
  labels = EXCLUDED.labels, truncated = EXCLUDED.truncated, applied_at = EXCLUDED.applied_at
 WHERE (n.event_time, n.event_id) < (EXCLUDED.event_time, EXCLUDED.event_id)`,
			inv.Namespace, t, inv.EventID, string(labels), inv.Truncated)
		if q.Error != nil || q.RowsAffected == 0 {
			return q.Error
		}
		applied = true
		return replaceInventory(ctx, tx, inv, t)
	})
	if err != nil {
		return false, s.fail("apply inventory", err)
	}
	return applied, nil
}

func replaceInventory(ctx context.Context, tx *gorm.DB, inv Inventory, t time.Time) error {
	pool := tx.Statement.ConnPool
	var before []string
	if err := tx.Raw(`SELECT DISTINCT digest FROM inventory WHERE namespace = ?`, inv.Namespace).Scan(&before).Error; err != nil {
		return fmt.Errorf("read previous inventory: %w", err)
	}
	n := len(inv.Entries)
	kinds, names, containers, digests, images := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	inits, pods := make([]bool, n), make([]int32, n)
	for i, e := range inv.Entries {
		kinds[i], names[i], containers[i], digests[i], images[i] = e.Kind, e.Name, e.Container, e.Digest, e.Image
		inits[i], pods[i] = e.Init, int32(min(e.Pods, 1<<31-1))
	}
	now := uniqueSorted(digests)
	all := uniqueSorted(append(slices.Clone(before), now...))
	// Lock every digest this change touches, in digest order (no
	// deadlock between namespaces): the "does anybody still run it"
	// check below then sees the other namespaces' committed state.
	if _, err := pool.ExecContext(ctx, `INSERT INTO digest_runtime (digest, first_seen, last_seen_running)
 SELECT d, $2, $2 FROM unnest($1::text[]) AS d ORDER BY d
 ON CONFLICT (digest) DO UPDATE SET digest = EXCLUDED.digest`, all, t); err != nil {
		return fmt.Errorf("lock digests: %w", err)
	}
	if _, err := pool.ExecContext(ctx, `DELETE FROM inventory WHERE namespace = $1`, inv.Namespace); err != nil {
		return fmt.Errorf("delete previous inventory: %w", err)
	}
	// A snapshot lists each (workload, container, digest) once; should a
	// producer repeat one, the pod counts add up.
	if n > 0 {
		if _, err := pool.ExecContext(ctx, `INSERT INTO inventory (namespace, kind, name, container, digest, image, init, pods)
 SELECT $1, k, nm, c, d, min(i), bool_or(it), sum(p) FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[], $8::int[]) AS x(k, nm, c, d, i, it, p)
 GROUP BY k, nm, c, d`,
			inv.Namespace, kinds, names, containers, digests, images, inits, pods); err != nil {
			return fmt.Errorf("insert inventory: %w", err)
		}
	}
	if _, err := pool.ExecContext(ctx, `UPDATE digest_runtime SET first_seen = LEAST(first_seen, $2),
 last_seen_running = GREATEST(last_seen_running, $2), not_running_since = NULL WHERE digest = ANY($1::text[])`, now, t); err != nil {
		return fmt.Errorf("mark digests running: %w", err)
	}
	// Dropped here and listed nowhere else: not running since t. (A row
	// created above for a digest only in before cannot happen: before's
	// digests had rows.)
	if _, err := pool.ExecContext(ctx, `UPDATE digest_runtime dr SET not_running_since = $2
 WHERE dr.digest = ANY($1::text[]) AND dr.not_running_since IS NULL
   AND NOT EXISTS (SELECT 1 FROM inventory i WHERE i.digest = dr.digest)`, all, t); err != nil {
		return fmt.Errorf("mark digests not running: %w", err)
	}
	return nil
}

func uniqueSorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// InventoryRow is one stored inventory row.
type InventoryRow struct {
	Namespace string
	InventoryEntry
}

// InventoryOf returns the inventory rows of one namespace, or of every
// namespace when namespace is empty, in key order.
func (s *Store) InventoryOf(ctx context.Context, namespace string) ([]InventoryRow, error) {
	q := `SELECT namespace, kind, name, container, digest, image, init, pods FROM inventory`
	var args []any
	if namespace != "" {
		q += ` WHERE namespace = ?`
		args = append(args, namespace)
	}
	var rows []struct {
		Namespace, Kind, Name, Container, Digest, Image string
		Init                                            bool
		Pods                                            int
	}
	if err := s.db.WithContext(ctx).Raw(q+` ORDER BY namespace, kind, name, container, digest`, args...).Scan(&rows).Error; err != nil {
		return nil, s.fail("read inventory", err)
	}
	out := make([]InventoryRow, len(rows))
	for i, r := range rows {
		out[i] = InventoryRow{Namespace: r.Namespace, InventoryEntry: InventoryEntry{Kind: r.Kind, Name: r.Name, Container: r.Container,
			Digest: r.Digest, Image: r.Image, Init: r.Init, Pods: r.Pods}}
	}
	return out, nil
}

// Runtime returns when digest ran (ErrNotFound: no inventory listed it).
func (s *Store) Runtime(ctx context.Context, digest string) (DigestRuntime, error) {
	var rows []DigestRuntime
	err := s.db.WithContext(ctx).Raw(`SELECT digest, first_seen, last_seen_running, not_running_since FROM digest_runtime WHERE digest = ?`, digest).
		Scan(&rows).Error
	if err != nil {
		return DigestRuntime{}, s.fail("read digest runtime", err)
	}
	if len(rows) == 0 {
		return DigestRuntime{}, ErrNotFound
	}
	r := rows[0]
	r.FirstSeen, r.LastSeenRunning = r.FirstSeen.UTC(), r.LastSeenRunning.UTC()
	if r.NotRunningSince != nil {
		u := r.NotRunningSince.UTC()
		r.NotRunningSince = &u
	}
	return r, nil
}

// Namespaces returns every namespace an inventory was received for, sorted
// (those whose last inventory was empty included).
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	var out []string
	if err := s.db.WithContext(ctx).Raw(`SELECT namespace FROM inventory_namespaces ORDER BY namespace`).Scan(&out).Error; err != nil {
		return nil, s.fail("list namespaces", err)
	}
	return out, nil
}

// NamespacesOf returns the namespaces digest runs in now, sorted.
func (s *Store) NamespacesOf(ctx context.Context, digest string) ([]string, error) {
	var out []string
	if err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT namespace FROM inventory WHERE digest = ? ORDER BY namespace`, digest).Scan(&out).Error; err != nil {
		return nil, s.fail("namespaces of digest", err)
	}
	return out, nil
}

// fillRunningIn sets RunningIn of each summary: one query for all of
// them, limited to ctx's scope (a reader never learns of namespaces
// outside it).
func (s *Store) fillRunningIn(ctx context.Context, items []report.Summary) error {
	if len(items) == 0 {
		return nil
	}
	digests := make([]string, len(items))
	for i, it := range items {
		digests[i] = it.Digest
	}
	where, args := []string{"i.digest = ANY(?::text[])"}, []any{textArray(digests)}
	if sc, ok := ScopeOf(ctx); ok {
		where, args = append(where, "i.namespace = ANY(?::text[])"), append(args, textArray(sc.Namespaces))
	}
	var rows []struct {
		Digest, Namespace, Kind, Name string
		Containers                    string // a JSON array
		Pods                          int
	}
	err := s.db.WithContext(ctx).Raw(`SELECT i.digest, i.namespace, i.kind, i.name,
 json_agg(DISTINCT i.container ORDER BY i.container)::text AS containers, sum(i.pods) AS pods
 FROM inventory i`+whereSQL(where)+` GROUP BY i.digest, i.namespace, i.kind, i.name ORDER BY i.digest, i.namespace, i.kind, i.name`, args...).
		Scan(&rows).Error
	if err != nil {
		return s.fail("running in", err)
	}
	idx := make(map[string]int, len(items))
	for i, it := range items {
		idx[it.Digest] = i
		items[i].RunningIn = []report.Workload{}
	}
	for _, r := range rows {
		w := report.Workload{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Pods: r.Pods}
		if err := json.Unmarshal([]byte(r.Containers), &w.Containers); err != nil {
			return fmt.Errorf("running in: containers: %w", err)
		}
		it := &items[idx[r.Digest]]
		it.RunningIn = append(it.RunningIn, w)
	}
	return nil
}
