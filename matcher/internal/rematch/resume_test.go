package rematch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// killedClient is a countingClient that also keeps the progress file as it
// was when the first DB record (batch) started: restoring it after the pass
// stopped is a SIGKILL right after that batch landed, before the pass
// could save anything else.
type killedClient struct {
	*countingClient
	dir      string
	snapshot []byte
}

func (c *killedClient) PutVulnDBs(ctx context.Context, digests []string, db DB) ([]string, error) {
	if c.snapshot == nil {
		b, err := os.ReadFile(filepath.Join(c.dir, ProgressFile))
		if err != nil {
			return nil, err
		}
		c.snapshot = b
	}
	return c.countingClient.PutVulnDBs(ctx, digests, db)
}

// notCurrent lists the stored fixtures not yet matched against m's DB.
func notCurrent(t *testing.T, srv *resultsapitest.Server, reps []stored) []string {
	t.Helper()
	var out []string
	for name, s := range state(t, srv, reps) {
		if got, err := time.Parse(time.RFC3339, s.DBBuilt); err != nil || !got.Equal(db2Built) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// TestPassRedoesOnlyWhatWasNotSaved stops a pass at each point where work
// is done but not saved — after the kth BOM download, after the first
// upload returned, right after the batch of unchanged records landed (the
// progress file then rolled back to before it, as a SIGKILL would leave it)
// — with progress saved per page and after every report, then resumes it
// from the progress file. The resumed pass downloads and matches again
// exactly the reports results-api has not recorded for this DB (each once)
// and nothing else; no report is uploaded or recorded twice; the final
// state and counts are those of an uninterrupted pass: nothing is lost,
// and redoing a report is harmless. A write the stop cut off counts when
// it landed (countingClient.settle): the pass saw it fail, results-api
// has it.
func TestPassRedoesOnlyWhatWasNotSaved(t *testing.T) {
	m := openDB(t, writeDB(t, changedAdvisories(), db2Built))
	type stop struct{ get, upload, batch int }
	for _, every := range []time.Duration{time.Hour, time.Nanosecond} {
		for _, at := range []stop{{get: 1}, {get: 3}, {get: 5}, {upload: 1}, {upload: 3}, {batch: 1}} {
			name := fmt.Sprintf("checkpoint=%s/stop=%+v", every, at)
			t.Run(name, func(t *testing.T) {
				srv := resultsapitest.Start(t)
				reps := storeFixtures(t, srv)
				before := state(t, srv, reps)
				dir := t.TempDir()
				cc := &killedClient{countingClient: newCounting(t, srv), dir: dir}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cc.cancel, cc.cancelAtGet, cc.cancelAt, cc.cancelAtBatch = cancel, at.get, at.upload, at.batch
				pass := &Pass{Client: cc, Dir: dir, PageSize: 5, CheckpointEvery: every}
				res, err := pass.Run(ctx, m)
				if at.batch > 0 {
					if cc.snapshot == nil {
						t.Fatal("no batch was recorded")
					}
					if err := os.WriteFile(filepath.Join(dir, ProgressFile), cc.snapshot, 0o600); err != nil {
						t.Fatal(err)
					}
				} else if err == nil || res.Finished {
					t.Fatalf("interrupted pass returned %+v, %v", res, err)
				}

				cc.settle(t)
				redo := notCurrent(t, srv, reps)
				cc.mu.Lock()
				cc.cancelAtGet, cc.cancelAt, cc.cancelAtBatch, cc.gets = 0, 0, 0, map[string]int{}
				cc.mu.Unlock()
				res, err = (&Pass{Client: cc, Dir: dir, PageSize: 5, CheckpointEvery: every}).Run(context.Background(), m)
				if err != nil {
					t.Fatal(err)
				}
				if want := (Counts{Total: 5, Changed: 3, Unchanged: 2}); res.Counts != want || !res.Finished {
					t.Errorf("resumed result %+v, want %+v", res.Counts, want)
				}
				var redone []string
				for _, r := range reps {
					if n := cc.gets[r.digest]; n > 0 {
						redone = append(redone, r.name)
						if n > 1 {
							t.Errorf("%s matched %d times on resume", r.name, n)
						}
					}
					if cc.puts[r.digest] > 1 || cc.dbs[r.digest] > 1 || cc.puts[r.digest]+cc.dbs[r.digest] != 1 {
						t.Errorf("%s: %d uploads and %d DB records in all", r.name, cc.puts[r.digest], cc.dbs[r.digest])
					}
				}
				slices.Sort(redone)
				if !slices.Equal(redone, redo) {
					t.Errorf("resume matched %v again, want exactly the reports not recorded %v", redone, redo)
				}
				t.Logf("redone on resume: %v", redone)
				checkAfterPass(t, srv, reps, before, m)
			})
		}
	}
}
