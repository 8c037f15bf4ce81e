package export

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// SARIF's $schema, and the driver's fixed fields.
const (
	SARIFSchema     = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	SARIFDriverName = "Crowsnest (Grype)"
	SARIFDriverURI  = "https://github.com/anchore/grype"
	// FingerprintKey names the partial fingerprint of a result: stable
	// across scans of the same finding (id, package name, version, type).
	FingerprintKey = "crowsnestFinding/v1"
)

// Target is the image a SARIF log is about, and what its findings were
// matched with (Provenance: the driver's version is the Grype release, its
// properties grypeDbBuilt and grypeDbSchema name the DB).
type Target struct {
	Image, Digest string
	Provenance
}

// A Rule is one vulnerability id of a report (store.VulnRule converts).
type Rule struct {
	ID          string
	Severity    report.Severity
	CVSSScore   *float64
	Description string
	URL         string
}

// SARIF writes one SARIF 2.1.0 log of one run: NewSARIF, every Rule, then
// every Result, then Close. Errors are sticky: the first one is returned
// by every later call.
type SARIF struct {
	w       *bufio.Writer
	enc     *json.Encoder
	target  Target
	rules   map[string]int // rule id → ruleIndex
	n       int            // elements written in the current array
	results bool           // rules are done
	err     error
}

// NewSARIF starts a log for target on w.
func NewSARIF(w io.Writer, target Target) *SARIF {
	bw := bufio.NewWriterSize(w, 32<<10)
	s := &SARIF{w: bw, enc: json.NewEncoder(bw), target: target, rules: map[string]int{}}
	s.enc.SetEscapeHTML(false)
	driver := map[string]any{"name": SARIFDriverName, "informationUri": SARIFDriverURI}
	if target.GrypeVersion != "" {
		driver["version"] = target.GrypeVersion
	}
	if target.DBBuilt != "" {
		driver["properties"] = map[string]string{"grypeDbBuilt": target.DBBuilt, "grypeDbSchema": target.DBSchema}
	}
	head, err := json.Marshal(driver)
	if err != nil {
		s.err = err
		return s
	}
	s.write(`{"$schema":"` + SARIFSchema + `","version":"2.1.0","runs":[{"tool":{"driver":`)
	s.write(string(head[:len(head)-1]) + `,"rules":[`)
	return s
}

func (s *SARIF) write(str string) {
	if s.err == nil {
		_, s.err = s.w.WriteString(str)
	}
}

// element writes v as the next element of the current array (the
// encoder's newline after it is JSON whitespace).
func (s *SARIF) element(v any) {
	if s.n > 0 {
		s.write(",")
	}
	s.n++
	if s.err == nil {
		s.err = s.enc.Encode(v)
	}
}

type message struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	ShortDescription     message        `json:"shortDescription"`
	FullDescription      *message       `json:"fullDescription,omitempty"`
	HelpURI              string         `json:"helpUri,omitempty"`
	DefaultConfiguration ruleConfig     `json:"defaultConfiguration"`
	Properties           ruleProperties `json:"properties"`
}

type ruleProperties struct {
	Severity string `json:"severity"`
	// SecuritySeverity is what GitHub code scanning ranks alerts by.
	SecuritySeverity string   `json:"security-severity"`
	CVSS             *float64 `json:"cvss,omitempty"`
	Tags             []string `json:"tags"`
}

type ruleConfig struct {
	Level string `json:"level"`
}

// Rule adds a reporting descriptor; call it for each vulnerability id
// before the first Result.
func (s *SARIF) Rule(r Rule) error {
	if s.results {
		return errors.New("sarif: rule after results")
	}
	if _, dup := s.rules[r.ID]; dup {
		return s.err
	}
	s.rules[r.ID] = len(s.rules)
	short := r.ID + " (" + r.Severity.String() + ")"
	if line, _, _ := strings.Cut(strings.TrimSpace(r.Description), "\n"); line != "" {
		short = r.ID + ": " + clip(line, 200)
	}
	props := ruleProperties{Severity: r.Severity.String(), SecuritySeverity: securitySeverity(r.Severity, r.CVSSScore),
		CVSS: r.CVSSScore, Tags: []string{"security", "vulnerability", r.Severity.String()}}
	sr := sarifRule{ID: r.ID, ShortDescription: message{short}, DefaultConfiguration: ruleConfig{Level(r.Severity)},
		Properties: props}
	if d := strings.TrimSpace(r.Description); d != "" {
		sr.FullDescription = &message{d}
	}
	if strings.HasPrefix(r.URL, "https://") || strings.HasPrefix(r.URL, "http://") {
		sr.HelpURI = r.URL
	}
	s.element(sr)
	return s.err
}

type sarifResult struct {
	RuleID              string           `json:"ruleId"`
	RuleIndex           int              `json:"ruleIndex"`
	Level               string           `json:"level"`
	Message             message          `json:"message"`
	Locations           []location       `json:"locations"`
	PartialFingerprints fingerprints     `json:"partialFingerprints"`
	Suppressions        []suppression    `json:"suppressions,omitempty"`
	Properties          resultProperties `json:"properties"`
}

// suppression is SARIF's: a decision outside the analysis (external),
// accepted, with its reason.
type suppression struct {
	Kind          string                `json:"kind"`
	Status        string                `json:"status"`
	Justification string                `json:"justification"`
	Properties    suppressionProperties `json:"properties"`
}

type suppressionProperties struct {
	Exception       string `json:"exception"`
	VEXStatus       string `json:"vexStatus"`
	Justification   string `json:"vexJustification,omitempty"`
	Statement       string `json:"statement,omitempty"`
	ActionStatement string `json:"actionStatement,omitempty"`
	ExpiresAt       string `json:"expiresAt,omitempty"`
}

type fingerprints struct {
	Finding string `json:"crowsnestFinding/v1"` // FingerprintKey
}

type resultProperties struct {
	Severity string   `json:"severity"`
	CVSS     *float64 `json:"cvss,omitempty"`
	FixedIn  []string `json:"fixedIn,omitempty"`
	Image    string   `json:"image"`
	Digest   string   `json:"digest"`
	KEV      bool     `json:"kev,omitempty"`
	EPSS     *float64 `json:"epss,omitempty"`
	Risk     float64  `json:"risk,omitempty"`
}

type location struct {
	PhysicalLocation physicalLocation  `json:"physicalLocation"`
	LogicalLocations []logicalLocation `json:"logicalLocations"`
}

type physicalLocation struct {
	ArtifactLocation artifactLocation `json:"artifactLocation"`
	// GitHub code scanning wants a region; a package has no lines.
	Region region `json:"region"`
}

type artifactLocation struct {
	URI string `json:"uri"`
}

type region struct {
	StartLine int `json:"startLine"`
}

type logicalLocation struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// Result adds one finding; its rule must have been added. A finding that
// an exception suppresses in the export's view carries sup (nil for an
// active one): SARIF's suppression of kind external, status accepted.
func (s *SARIF) Result(f *report.Finding, sup *Suppression) error {
	if !s.results {
		s.write(`]}},"results":[`)
		s.results, s.n = true, 0
	}
	idx, ok := s.rules[f.ID]
	if !ok && s.err == nil {
		s.err = errors.New("sarif: result for rule " + f.ID + " that was not added")
	}
	where := f.Package.PURL
	if where == "" {
		where = s.target.Image
	}
	pkg := f.Package.Name
	if f.Package.Version != "" {
		pkg += "@" + f.Package.Version
	}
	props := resultProperties{Severity: f.Severity.String(), CVSS: f.CVSSScore, FixedIn: f.FixedIn,
		Image: s.target.Image, Digest: s.target.Digest, KEV: f.Risk.KEV, EPSS: f.Risk.EPSS, Risk: f.Risk.Score}
	var sups []suppression
	if sup != nil {
		sups = []suppression{{Kind: "external", Status: "accepted", Justification: sup.Text(),
			Properties: suppressionProperties{Exception: sup.Exception, VEXStatus: sup.Status, Justification: sup.Justification,
				Statement: sup.Statement, ActionStatement: sup.ActionStatement, ExpiresAt: sup.expires()}}}
	}
	s.element(sarifResult{
		RuleID: f.ID, RuleIndex: idx, Level: Level(f.Severity), Message: message{Message(f)}, Suppressions: sups,
		Locations: []location{{
			PhysicalLocation: physicalLocation{ArtifactLocation: artifactLocation{URI: where}, Region: region{StartLine: 1}},
			LogicalLocations: []logicalLocation{{Name: pkg, FullyQualifiedName: where, Kind: "module"}},
		}},
		PartialFingerprints: fingerprints{Fingerprint(f)},
		Properties:          props,
	})
	return s.err
}

// Close ends the log and flushes it.
func (s *SARIF) Close() error {
	if !s.results {
		s.write(`]}},"results":[`)
		s.results = true
	}
	s.write(`]}]}`)
	if s.err == nil {
		s.err = s.w.Flush()
	}
	return s.err
}

// Level is the SARIF level of a severity: error for critical and high,
// warning for medium, note otherwise.
func Level(s report.Severity) string {
	switch s {
	case report.Critical, report.High:
		return "error"
	case report.Medium:
		return "warning"
	}
	return "note"
}

// securitySeverity is what GitHub code scanning ranks alerts by: the CVSS
// score, or without one a score inside the severity's CVSS band (as
// Trivy does), so that critical findings still rank critical.
func securitySeverity(sev report.Severity, score *float64) string {
	if score != nil {
		return strconv.FormatFloat(*score, 'f', 1, 64)
	}
	switch sev {
	case report.Critical:
		return "9.5"
	case report.High:
		return "8.0"
	case report.Medium:
		return "5.5"
	case report.Low:
		return "2.0"
	}
	return "0.0"
}

// Message is a finding's one-line text: "<pkg> <version> is affected by
// <id>; fixed in <versions>".
func Message(f *report.Finding) string {
	fixed := "no fixed version is known"
	if len(f.FixedIn) > 0 {
		fixed = "fixed in " + strings.Join(f.FixedIn, ", ")
	}
	return f.Package.Name + " " + f.Package.Version + " is affected by " + f.ID + "; " + fixed
}

// Fingerprint identifies a finding across scans and rescans: a hash of
// its vulnerability id and package name, version and type (not of the
// digest, so that GitHub follows an alert from one build to the next).
func Fingerprint(f *report.Finding) string {
	var buf [256]byte
	b := buf[:0]
	for _, s := range []string{f.ID, f.Package.Name, f.Package.Version, f.Package.Type} {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(append(b, ':'), s...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
