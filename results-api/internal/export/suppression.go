package export

import (
	"strings"
	"time"
)

// Suppression is why a finding is suppressed in the export's view: the
// exception or imported OpenVEX statement that covers it.
type Suppression struct {
	// Exception names the resource: "<Kind>/<namespace>/<name>", or
	// "<Kind>/<name>" for a cluster-scoped one.
	Exception string
	// Status is the OpenVEX status; Justification is set for not_affected.
	Status, Justification string
	// Statement is the reason; ActionStatement the accepted risk's plan.
	Statement, ActionStatement string
	// ExpiresAt is when the exception lapses (zero for an imported
	// statement, which holds until its document changes).
	ExpiresAt time.Time
}

// Text is the suppression in one line: "not_affected
// (vulnerable_code_not_in_execute_path): <statement>; <action statement>
// (<exception>, until <expiresAt>)".
func (s *Suppression) Text() string {
	var b strings.Builder
	b.WriteString(s.Status)
	if s.Justification != "" {
		b.WriteString(" (" + s.Justification + ")")
	}
	if s.Statement != "" {
		b.WriteString(": " + s.Statement)
	}
	if s.ActionStatement != "" {
		b.WriteString("; " + s.ActionStatement)
	}
	b.WriteString(" (" + s.Exception)
	if !s.ExpiresAt.IsZero() {
		b.WriteString(", until " + s.ExpiresAt.UTC().Format(time.RFC3339))
	}
	b.WriteString(")")
	return b.String()
}

// expires is ExpiresAt as RFC 3339, "" when zero.
func (s *Suppression) expires() string {
	if s.ExpiresAt.IsZero() {
		return ""
	}
	return s.ExpiresAt.UTC().Format(time.RFC3339)
}
