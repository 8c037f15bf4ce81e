package export

import (
	"bufio"
	"encoding/csv"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// CSVHeader is the first row of every findings CSV.
var CSVHeader = []string{"image", "digest", "vulnerability", "severity", "package", "version", "type",
	"fixed_in", "cvss", "namespaces", "workloads", "kev", "epss", "risk", "grype_version", "db_built", "db_schema",
	"suppressed", "suppressed_by", "vex_status", "vex_justification", "suppression_statement", "action_statement", "expires_at"}

// A Row is one finding of one image and where the image runs.
type Row struct {
	Image, Digest string
	Finding       *report.Finding
	RunningIn     []report.Workload
	Provenance
	// Suppression is set when an exception suppresses the finding in the
	// export's view (the suppression columns, empty otherwise).
	Suppression *Suppression
}

// Provenance is what a report's findings were matched with: the Grype
// release and the vulnerability DB's build time and schema ("" each when
// the report named none).
type Provenance struct {
	GrypeVersion, DBBuilt, DBSchema string
}

// CSV writes findings as RFC 4180 CSV (encoding/csv), one row each after
// CSVHeader. Cells that a spreadsheet would take for a formula are
// defused (SafeCell). Multi-valued cells (fixed-in versions, namespaces,
// workloads as namespace/Kind/name) are joined with "; ". The last
// columns say whether an exception suppresses the finding in the export's
// view, and which and why.
type CSV struct {
	bw     *bufio.Writer
	w      *csv.Writer
	record []string
}

// NewCSV writes the header on w and returns the writer of the rows.
func NewCSV(w io.Writer) (*CSV, error) {
	bw := bufio.NewWriterSize(w, 32<<10)
	c := &CSV{bw: bw, w: csv.NewWriter(bw), record: make([]string, len(CSVHeader))}
	return c, c.w.Write(CSVHeader)
}

// Row writes one finding.
func (c *CSV) Row(r Row) error {
	f := r.Finding
	cvss := ""
	if f.CVSSScore != nil {
		cvss = strconv.FormatFloat(*f.CVSSScore, 'f', -1, 64)
	}
	namespaces, workloads := places(r.RunningIn)
	rec := c.record
	rec[0], rec[1], rec[2], rec[3] = r.Image, r.Digest, f.ID, f.Severity.String()
	rec[4], rec[5], rec[6] = f.Package.Name, f.Package.Version, f.Package.Type
	rec[7], rec[8], rec[9], rec[10] = strings.Join(f.FixedIn, "; "), cvss, namespaces, workloads
	rec[11], rec[12], rec[13] = strconv.FormatBool(f.Risk.KEV), "", strconv.FormatFloat(f.Risk.Score, 'f', -1, 64)
	rec[14], rec[15], rec[16] = r.GrypeVersion, r.DBBuilt, r.DBSchema
	rec[17] = strconv.FormatBool(r.Suppression != nil)
	rec[18], rec[19], rec[20], rec[21], rec[22], rec[23] = "", "", "", "", "", ""
	if s := r.Suppression; s != nil {
		rec[18], rec[19], rec[20], rec[21], rec[22], rec[23] = s.Exception, s.Status, s.Justification, s.Statement, s.ActionStatement, s.expires()
	}
	if f.Risk.EPSS != nil {
		rec[12] = strconv.FormatFloat(*f.Risk.EPSS, 'f', -1, 64)
	}
	for i := range rec {
		rec[i] = SafeCell(rec[i])
	}
	return c.w.Write(rec)
}

// Close flushes what is buffered.
func (c *CSV) Close() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return err
	}
	return c.bw.Flush()
}

func places(ws []report.Workload) (namespaces, workloads string) {
	if len(ws) == 0 {
		return "", ""
	}
	ns := make([]string, 0, len(ws))
	wl := make([]string, 0, len(ws))
	for _, w := range ws {
		ns = append(ns, w.Namespace)
		wl = append(wl, w.Namespace+"/"+w.Kind+"/"+w.Name)
	}
	slices.Sort(ns)
	ns = slices.Compact(ns)
	return strings.Join(ns, "; "), strings.Join(wl, "; ")
}

// SafeCell defuses CSV injection (OWASP): a cell that starts with =, +,
// -, @, a tab or a carriage return is prefixed with a single quote, so a
// spreadsheet shows it as text instead of evaluating it. Package names
// and versions come from scanned images, which anybody can build.
func SafeCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}
