package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// WorkloadQuery selects workloads of the inventory.
type WorkloadQuery struct {
	Namespace string // empty: every namespace (of the reader's scope)
	// MinSeverity keeps the workloads running at least one image with a
	// finding this severe (Unknown: no filter).
	MinSeverity report.Severity
	Limit       int // workloads, at least 1
}

// WorkloadImage is one digest a workload runs, with its report's counts
// when one is stored.
type WorkloadImage struct {
	Digest, Image string
	Containers    []string
	Pods          int
	Scanned       bool
	Counts        report.Counts
	Fixable       int
}

// WorkloadImages is one workload with the images it runs.
type WorkloadImages struct {
	Namespace, Kind, Name string
	Images                []WorkloadImage
}

// ListWorkloads returns up to q.Limit workloads (namespace, kind, name
// order) with their images, limited to ctx's scope, and whether there were
// more.
func (s *Store) ListWorkloads(ctx context.Context, q WorkloadQuery) ([]WorkloadImages, bool, error) {
	var where []string
	var args []any
	if q.Namespace != "" {
		where, args = append(where, "i.namespace = ?"), append(args, q.Namespace)
	}
	if sc, ok := ScopeOf(ctx); ok {
		where, args = append(where, "i.namespace = ANY(?::text[])"), append(args, textArray(sc.Namespaces))
	}
	if q.MinSeverity > report.Unknown {
		where = append(where, `EXISTS (SELECT 1 FROM inventory i2 JOIN reports r ON r.digest = i2.digest
 WHERE i2.namespace = i.namespace AND i2.kind = i.kind AND i2.name = i.name AND r.max_severity >= ?)`)
		args = append(args, int(q.MinSeverity))
	}
	db := s.db.WithContext(ctx)
	var keys []struct{ Namespace, Kind, Name string }
	err := db.Raw(fmt.Sprintf(`SELECT DISTINCT i.namespace, i.kind, i.name FROM inventory i%s ORDER BY 1, 2, 3 LIMIT %d`,
		whereSQL(where), q.Limit+1), args...).Scan(&keys).Error
	if err != nil {
		return nil, false, s.fail("list workloads", err)
	}
	more := len(keys) > q.Limit
	if more {
		keys = keys[:q.Limit]
	}
	if len(keys) == 0 {
		return []WorkloadImages{}, false, nil
	}
	nss, kinds, names := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		nss[i], kinds[i], names[i] = k.Namespace, k.Kind, k.Name
	}
	var rows []struct {
		Namespace, Kind, Name, Digest, Image                  string
		Containers                                            string // JSON array
		Pods                                                  int
		Scanned                                               bool
		Critical, High, Medium, Low, Negligible, Unknown, Fix int
	}
	err = db.Raw(`SELECT i.namespace, i.kind, i.name, i.digest, min(i.image) AS image,
 json_agg(DISTINCT i.container ORDER BY i.container)::text AS containers, sum(i.pods) AS pods,
 bool_or(r.digest IS NOT NULL) AS scanned, coalesce(max(r.critical),0) AS critical, coalesce(max(r.high),0) AS high,
 coalesce(max(r.medium),0) AS medium, coalesce(max(r.low),0) AS low, coalesce(max(r.negligible),0) AS negligible,
 coalesce(max(r.unknown),0) AS unknown, coalesce(max(r.fixable),0) AS fix
 FROM inventory i JOIN unnest(?::text[], ?::text[], ?::text[]) AS w(ns, k, n) ON i.namespace = w.ns AND i.kind = w.k AND i.name = w.n
 LEFT JOIN reports r ON r.digest = i.digest
 GROUP BY i.namespace, i.kind, i.name, i.digest ORDER BY 1, 2, 3, 4`, textArray(nss), textArray(kinds), textArray(names)).Scan(&rows).Error
	if err != nil {
		return nil, false, s.fail("list workload images", err)
	}
	out := make([]WorkloadImages, len(keys))
	idx := make(map[string]int, len(keys))
	for i, k := range keys {
		out[i] = WorkloadImages{Namespace: k.Namespace, Kind: k.Kind, Name: k.Name, Images: []WorkloadImage{}}
		idx[strings.Join([]string{k.Namespace, k.Kind, k.Name}, "\x00")] = i
	}
	for _, r := range rows {
		img := WorkloadImage{Digest: r.Digest, Image: r.Image, Pods: r.Pods, Scanned: r.Scanned, Fixable: r.Fix,
			Counts: report.Counts{Critical: r.Critical, High: r.High, Medium: r.Medium, Low: r.Low, Negligible: r.Negligible, Unknown: r.Unknown}}
		if err := json.Unmarshal([]byte(r.Containers), &img.Containers); err != nil {
			return nil, false, fmt.Errorf("list workload images: containers: %w", err)
		}
		w := &out[idx[strings.Join([]string{r.Namespace, r.Kind, r.Name}, "\x00")]]
		w.Images = append(w.Images, img)
	}
	return out, more, nil
}
