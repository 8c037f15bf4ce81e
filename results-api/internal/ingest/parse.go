package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/crowsnest-dev/crowsnest/api/finding"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// Options carry what travels with an upload besides the BOM.
type Options struct {
	Digest string    // sha256:<64 hex>, already validated
	Image  string    // repository@sha256:..., may be empty
	Now    time.Time // upload time; scannedAt when the BOM has no timestamp or one after it
	// MaxFindings refuses a BOM with more findings (ErrTooManyFindings);
	// zero means DefaultMaxFindings.
	MaxFindings int
	// ClockSkew is how far ahead of Now a BOM's timestamp may be before
	// the clamp is reported (Report.Warnings); zero means DefaultClockSkew.
	ClockSkew time.Duration
}

// DefaultClockSkew is the tolerated difference between the scan Pod's
// clock and results-api's: a timestamp up to this far ahead is a clock
// difference, clamped silently; further ahead, the clamp is reported.
const DefaultClockSkew = 5 * time.Minute

// DefaultMaxFindings is the default cap on findings per report: Grype's
// output for the largest images seen holds a few thousand.
const DefaultMaxFindings = 50000

// Parse checks raw as a CycloneDX JSON BOM and extracts the report. It
// decodes raw once, with decodeBOM's single pass over only the fields it
// reads; a document that pass does not plainly accept is decoded by
// json.Unmarshal into cdx.BOM (parseFull), which decides and words the
// error.
func Parse(raw []byte, o Options) (*report.Report, error) {
	bom, ok := decodeBOM(raw)
	if !ok {
		return parseFull(raw, o)
	}
	return fromBOM(&bom, raw, o)
}

// parseFull is Parse by json.Unmarshal into the whole cdx.BOM.
func parseFull(raw []byte, o Options) (*report.Report, error) {
	var bom cdx.BOM
	if err := json.Unmarshal(raw, &bom); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || strings.Contains(err.Error(), "unexpected end of JSON input") {
			return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidBOM, err)
	}
	return fromBOM(&bom, raw, o)
}

// fromBOM checks a decoded BOM and extracts the report.
func fromBOM(bom *cdx.BOM, raw []byte, o Options) (*report.Report, error) {
	if bom.BOMFormat != cdx.BOMFormat {
		return nil, fmt.Errorf("%w: bomFormat is %q, want %q", ErrNotCycloneDX, clip(bom.BOMFormat), cdx.BOMFormat)
	}
	if bom.SpecVersion < cdx.SpecVersion1_4 {
		return nil, fmt.Errorf("%w: specVersion missing or older than 1.4", ErrNotCycloneDX)
	}

	r := &report.Report{Raw: raw}
	r.Digest = o.Digest
	r.Image = o.Image
	r.ScannedAt = o.Now.UTC()
	r.StoredAt = o.Now.UTC()
	readMetadata(bom, r)
	clampScannedAt(r, o)

	if o.MaxFindings <= 0 {
		o.MaxFindings = DefaultMaxFindings
	}
	fs, err := finding.Of(bom, o.MaxFindings)
	switch {
	case errors.Is(err, finding.ErrTooMany):
		return nil, fmt.Errorf("%w: more than %d", ErrTooManyFindings, o.MaxFindings)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrInvalidBOM, err)
	}
	if len(fs) > 0 {
		r.FindingList = make([]report.Finding, 0, len(fs))
	}
	for i := range fs {
		f := report.FromContract(&fs[i])
		r.FindingList = append(r.FindingList, f)
		r.Counts.Add(f.Severity)
		if f.Fixable() {
			r.Fixable++
		}
		if f.Risk.KEV {
			r.KEV++
		}
		r.MaxRisk = max(r.MaxRisk, f.Risk.Score)
		if e := f.Risk.EPSS; e != nil && (r.MaxEPSS == nil || *e > *r.MaxEPSS) {
			r.MaxEPSS = e
		}
	}
	r.Findings = len(r.FindingList)
	return r, nil
}

// clampScannedAt keeps scannedAt at or before the upload time. The BOM's
// timestamp is whatever the uploader wrote: one in the future (2099) would
// make the report look fresh for ever, and the operator, which rescans a
// digest when its report's scannedAt is older than the rescan interval,
// would never rescan it.
func clampScannedAt(r *report.Report, o Options) {
	now := o.Now.UTC()
	if !r.ScannedAt.After(now) {
		return
	}
	skew := o.ClockSkew
	if skew <= 0 {
		skew = DefaultClockSkew
	}
	if ahead := r.ScannedAt.Sub(now); ahead > skew {
		r.Warnings = append(r.Warnings, fmt.Sprintf("metadata.timestamp %s is %s ahead of the upload time (more than the %s clock skew "+
			"tolerated): scannedAt is the upload time %s", r.ScannedAt.Format(time.RFC3339), ahead.Round(time.Second), skew, now.Format(time.RFC3339)))
	}
	r.ScannedAt = now
}

func readMetadata(bom *cdx.BOM, r *report.Report) {
	md := bom.Metadata
	if md == nil {
		return
	}
	if t, err := time.Parse(time.RFC3339, md.Timestamp); err == nil {
		r.ScannedAt = t.UTC()
	}
	if md.Tools != nil && md.Tools.Components != nil {
		for _, c := range *md.Tools.Components {
			if strings.EqualFold(c.Name, "grype") {
				r.GrypeVersion = c.Version
			}
		}
	}
	if r.GrypeVersion == "" && md.Tools != nil && md.Tools.Tools != nil {
		for _, t := range *md.Tools.Tools {
			if strings.EqualFold(t.Name, "grype") {
				r.GrypeVersion = t.Version
			}
		}
	}
	if md.Properties != nil {
		for _, p := range *md.Properties {
			switch p.Name {
			case "grype:db:built", "grype:db-built":
				r.DBBuilt = p.Value
			case "grype:db:schema", "grype:db-schema":
				r.DBSchema = p.Value
			}
		}
	}
	if r.Image == "" && md.Component != nil {
		r.Image = md.Component.Name
		if v := md.Component.Version; strings.HasPrefix(v, "sha256:") && !strings.Contains(r.Image, "@") {
			r.Image += "@" + v
		}
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
