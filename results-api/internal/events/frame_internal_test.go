package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// TestUnmarkedChangedFrame: the frame for namespace-limited WebSocket
// clients drops which namespaces' exceptions suppress a finding (another
// team's triage decisions) and keeps the cluster-wide mark; a change
// without namespace marks has no second frame.
func TestUnmarkedChangedFrame(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	mk := func(fs ...eventsv1.ChangedFinding) eventsv1.Event {
		ev, err := eventsv1.New(eventsv1.SourceResultsAPI, eventsv1.TypeFindingsChanged, "id-1", d, time.Now(),
			eventsv1.FindingsChanged{ChangeID: 1, Digest: d, New: fs})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ev := mk(eventsv1.ChangedFinding{ID: "CVE-1", SuppressedIn: []string{"team-a"}}, eventsv1.ChangedFinding{ID: "CVE-2", SuppressedEverywhere: true})
	full, _, err := frame(ev)
	if err != nil || !strings.Contains(string(full), `"suppressedIn":["team-a"]`) {
		t.Fatalf("full frame %s, %v: want team-a's mark", full, err)
	}
	limited, marked, err := unmarkedChangedFrame(ev)
	if err != nil || !marked {
		t.Fatalf("marked %v, %v", marked, err)
	}
	var m struct {
		Data eventsv1.FindingsChanged `json:"data"`
	}
	if err := json.Unmarshal(limited, &m); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(limited), "team-a") || len(m.Data.New) != 2 || !m.Data.New[1].SuppressedEverywhere {
		t.Errorf("limited frame %s: want no namespace named, the cluster-wide mark kept", limited)
	}
	if _, marked, err := unmarkedChangedFrame(mk(eventsv1.ChangedFinding{ID: "CVE-2", SuppressedEverywhere: true})); err != nil || marked {
		t.Errorf("a change without namespace marks: marked %v, %v", marked, err)
	}
}
