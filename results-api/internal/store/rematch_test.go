package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// A rematch changes the findings of a stored report and nothing else, and
// the store holds it to that inside the write's transaction (the gate's
// look-up before it can race a DELETE): no rematch creates a report, and
// none replaces the stored BOM with one listing other components. Nothing
// refused is written; the failures are the caller's, not the database's.
func TestRematchOnlyChangesFindings(t *testing.T) {
	st, errs := open(t)
	const bom = `{"bomFormat":"CycloneDX","components":[
		{"bom-ref":"a","type":"library","name":"musl","version":"1.2.5","purl":"pkg:apk/alpine/musl@1.2.5"},
		{"bom-ref":"os","type":"operating-system","name":"alpine","version":"3.20.3",
		 "components":[{"type":"file","name":"/etc/os-release"}]}]}`
	musl := finding("CVE-A", report.High, "musl", "")
	put(t, st, newReport(1, "reg/app@"+digest(1), t0, bom, musl))

	rematch := func(n int, raw string, fs ...report.Finding) error {
		r := newReport(n, "", t0.Add(time.Hour), raw, fs...)
		r.Cause = report.CauseRematch
		_, err := st.PutReport(ctx(t), r)
		return err
	}
	for name, tc := range map[string]struct {
		n   int
		raw string
	}{
		"no report":          {2, bom},
		"component added":    {1, `{"components":[{"type":"library","name":"musl","version":"1.2.5","purl":"pkg:apk/alpine/musl@1.2.5"},{"type":"operating-system","name":"alpine","version":"3.20.3","components":[{"type":"file","name":"/etc/os-release"}]},{"type":"library","name":"implant","version":"1"}]}`},
		"component removed":  {1, `{"components":[{"type":"operating-system","name":"alpine","version":"3.20.3","components":[{"type":"file","name":"/etc/os-release"}]}]}`},
		"version changed":    {1, `{"components":[{"type":"library","name":"musl","version":"1.2.6","purl":"pkg:apk/alpine/musl@1.2.5"},{"type":"operating-system","name":"alpine","version":"3.20.3","components":[{"type":"file","name":"/etc/os-release"}]}]}`},
		"nested one dropped": {1, `{"components":[{"type":"library","name":"musl","version":"1.2.5","purl":"pkg:apk/alpine/musl@1.2.5"},{"type":"operating-system","name":"alpine","version":"3.20.3"}]}`},
		"not JSON":           {1, `components`},
	} {
		if err := rematch(tc.n, tc.raw); !errors.Is(err, store.ErrRematchRefused) {
			t.Errorf("%s: %v, want ErrRematchRefused", name, err)
		}
	}
	if _, err := st.GetSummary(ctx(t), digest(2)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused rematch created %s: %v", digest(2), err)
	}
	if b, err := readBOM(st, digest(1)); err != nil || string(b) != bom {
		t.Errorf("stored BOM after refused rematches: %q, %v", b, err)
	}

	// The same components in another order, with other refs and a nested
	// one moved to the top level: a rematch with new findings.
	same := `{"components":[{"type":"file","name":"/etc/os-release"},{"type":"operating-system","name":"alpine","version":"3.20.3"},
		{"bom-ref":"pkg-1","type":"library","name":"musl","version":"1.2.5","purl":"pkg:apk/alpine/musl@1.2.5"}],"vulnerabilities":[]}`
	if err := rematch(1, same); err != nil {
		t.Fatalf("rematch with the same components: %v", err)
	}
	if sum, err := st.GetSummary(ctx(t), digest(1)); err != nil || sum.Cause != report.CauseRematch || sum.Findings != 0 {
		t.Errorf("after the rematch: %+v, %v", sum, err)
	}
	if got := errs.List(); len(got) != 0 {
		t.Errorf("refused rematches counted as database errors: %v", got)
	}
}
