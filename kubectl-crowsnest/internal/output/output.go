package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
)

// Format is an -o value.
type Format string

// The formats -o accepts.
const (
	Table Format = ""
	Wide  Format = "wide"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

// ParseFormat checks an -o value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Table, Wide, JSON, YAML:
		return f, nil
	}
	return "", fmt.Errorf("unknown output format %q: want wide, json or yaml (or nothing for a table)", s)
}

// Data prints v as JSON or YAML. Both escape every control character in
// strings (encoding/json leaves DEL and C1 raw: escaped here), so report
// data cannot reach the terminal as escape sequences.
func Data(w io.Writer, f Format, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	b = escapeJSONControls(b)
	if f == YAML {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// TableWriter writes tab-separated rows aligned as kubectl aligns them.
type TableWriter struct {
	w interface {
		io.Writer
		Flush() error
	}
}

// NewTable starts a table with the given headers.
func NewTable(w io.Writer, headers ...string) *TableWriter {
	t := &TableWriter{w: printers.GetNewTabWriter(w)}
	t.Row(toAny(headers)...)
	return t
}

// Row writes one row, each cell through Clean.
func (t *TableWriter) Row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		s := Clean(fmt.Sprint(c))
		if s == "" {
			s = "<none>"
		}
		parts[i] = s
	}
	_, _ = fmt.Fprintln(t.w, strings.Join(parts, "\t"))
}

// Flush writes the aligned table out.
func (t *TableWriter) Flush() error { return t.w.Flush() }

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Age prints how long ago t was, as kubectl's AGE column does.
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// ShortDigest is the first 12 hex characters of a digest.
func ShortDigest(d string) string {
	hex := strings.TrimPrefix(d, "sha256:")
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return hex
}

// Workloads prints runningIn as namespace/kind/name, comma-separated.
func Workloads(ws *[]resultsapi.RunningWorkload, withNamespace bool) string {
	if ws == nil {
		return ""
	}
	parts := make([]string, 0, len(*ws))
	for _, w := range *ws {
		s := strings.ToLower(w.Kind) + "/" + w.Name
		if withNamespace {
			s = w.Namespace + "/" + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// List returns items, never nil, so JSON shows [] rather than null.
func List[T any](items []T) []T {
	if items == nil {
		return []T{}
	}
	return items
}
