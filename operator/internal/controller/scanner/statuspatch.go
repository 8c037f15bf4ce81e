package scanner

import (
	"bytes"
	"encoding/json"
	"fmt"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// statusPatch is the JSON merge patch from before's status to after's, as
// client.MergeFrom would compute it from the two Scanners when only their
// status differs, with the five counts always in it (a Scanner whose
// status was never written has none on the server to keep). MergeFrom
// encodes both whole objects and diffs them through a generic decode of
// each; every field of ScannerStatus is a scalar or a list, which a merge
// patch replaces whole, so comparing each field's encoding gives the same
// patch at a fraction of the cost (a Scanner's status is written by most
// of its reconciles). TestStatusPatchMatchesMergeFrom holds it to
// MergeFrom's.
func statusPatch(before, after *crowsnestv1alpha1.ScannerStatus) ([]byte, error) {
	m := map[string]json.RawMessage{}
	var errs []error
	set := func(name string, v any) {
		raw, err := json.Marshal(v)
		errs = append(errs, err)
		m[name] = raw
	}
	// field puts name in the patch when its encoding changed: its new
	// value, or null when it is now omitted (omitempty and empty).
	field := func(name string, old, new any, oldOmitted, newOmitted bool) {
		if oldOmitted && newOmitted {
			return
		}
		if newOmitted {
			m[name] = json.RawMessage("null")
			return
		}
		n, err := json.Marshal(new)
		errs = append(errs, err)
		if !oldOmitted {
			o, err := json.Marshal(old)
			errs = append(errs, err)
			if bytes.Equal(o, n) {
				return
			}
		}
		m[name] = n
	}
	set("images", after.Images)
	set("scanned", after.Scanned)
	set("queued", after.Queued)
	set("scanning", after.Scanning)
	set("failed", after.Failed)
	field("observedGeneration", before.ObservedGeneration, after.ObservedGeneration, before.ObservedGeneration == 0, after.ObservedGeneration == 0)
	field("conditions", before.Conditions, after.Conditions, len(before.Conditions) == 0, len(after.Conditions) == 0)
	field("lastScanTime", before.LastScanTime, after.LastScanTime, before.LastScanTime == nil, after.LastScanTime == nil)
	field("recentFailures", before.RecentFailures, after.RecentFailures, len(before.RecentFailures) == 0, len(after.RecentFailures) == 0)
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("encode status patch: %w", err)
		}
	}
	return json.Marshal(map[string]any{"status": m})
}
