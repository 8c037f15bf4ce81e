package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"
)

// maxGrypeJSONBytes bounds how much of Grype's JSON report is read. The
// report is streamed token by token, so this bounds time, not memory; the
// scan volume holding it is 512 MiB.
const maxGrypeJSONBytes = 512 << 20

// dbSchemaPattern is a Grype DB schema version (v6, v6.1 or v6.1.10), as
// results-api accepts it.
var dbSchemaPattern = regexp.MustCompile(`^v[0-9]{1,3}(\.[0-9]{1,6}){0,2}$`)

// provenance is the Grype DB a scan matched against, from Grype's JSON
// report of the same run: descriptor.db.status is the DB Grype loaded (its
// build time and schema), so it is the DB the findings came from, not
// whatever the cache or the matcher holds by the time the uploader runs.
type provenance struct {
	Built  time.Time
	Schema string
}

// builtString is the build time as sent (RFC 3339), or "" when unknown.
func (p provenance) builtString() string {
	if p.Built.IsZero() {
		return ""
	}
	return p.Built.Format(time.RFC3339)
}

// grypeDescriptor is the part of Grype's JSON report's descriptor the
// uploader reads (grype/presenter/models and vulnerability.ProviderStatus
// in Grype v0.121).
type grypeDescriptor struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	DB      struct {
		Status struct {
			SchemaVersion string `json:"schemaVersion"`
			Built         string `json:"built"`
			Valid         bool   `json:"valid"`
		} `json:"status"`
	} `json:"db"`
}

// readProvenance reads the DB Grype matched against from its JSON report at
// path. It streams the document and decodes only the descriptor, so a
// report with many matches costs no memory.
func readProvenance(path string) (provenance, error) {
	f, err := os.Open(path)
	if err != nil {
		return provenance{}, err
	}
	defer f.Close()
	d, err := findDescriptor(json.NewDecoder(io.LimitReader(f, maxGrypeJSONBytes)))
	if err != nil {
		return provenance{}, fmt.Errorf("read grype JSON %s: %w", path, err)
	}
	st := d.DB.Status
	if st.Built == "" || st.SchemaVersion == "" {
		return provenance{}, fmt.Errorf("grype JSON %s: descriptor.db.status names no DB build and schema", path)
	}
	built, err := time.Parse(time.RFC3339, st.Built)
	if err != nil {
		return provenance{}, fmt.Errorf("grype JSON %s: descriptor.db.status.built %q: %w", path, st.Built, err)
	}
	if !dbSchemaPattern.MatchString(st.SchemaVersion) {
		return provenance{}, fmt.Errorf("grype JSON %s: descriptor.db.status.schemaVersion %q is not a schema version", path, st.SchemaVersion)
	}
	return provenance{Built: built.UTC(), Schema: st.SchemaVersion}, nil
}

// findDescriptor walks the top-level object to its "descriptor" member and
// decodes it, skipping every other member token by token.
func findDescriptor(dec *json.Decoder) (grypeDescriptor, error) {
	var d grypeDescriptor
	if t, err := dec.Token(); err != nil {
		return d, err
	} else if t != json.Delim('{') {
		return d, errors.New("not a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return d, err
		}
		if key == "descriptor" {
			err := dec.Decode(&d)
			return d, err
		}
		if err := skipValue(dec); err != nil {
			return d, err
		}
	}
	return d, errors.New("no descriptor")
}

// skipValue consumes one JSON value.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
