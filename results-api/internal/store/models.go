package store

import (
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// SummaryColumns are the columns of a report's summary, listed once: the
// reports table's row (reportRow) and a list query's row (listRow) embed
// them, and gorm flattens an embedded struct's fields into its parent's
// columns, for a table's row and for Raw().Scan alike. It is exported only
// because gorm skips an embedded field whose (type) name is not; nothing
// outside this package uses it.
type SummaryColumns struct {
	Digest       string `gorm:"primaryKey"`
	Image        string
	ScannedAt    time.Time
	StoredAt     time.Time
	GrypeVersion string
	DBBuilt      string `gorm:"column:db_built"`
	DBSchema     string `gorm:"column:db_schema"`
	MatchedAt    *time.Time
	Cause        string
	Critical     int
	High         int
	Medium       int
	Low          int
	Negligible   int
	Unknown      int
	Fixable      int
	Findings     int
	// FindingsSHA256 is the fingerprint of the stored findings rows
	// (fingerprint); NULL for reports stored before it existed. Lists carry
	// it for the matcher (an unchanged re-match).
	FindingsSHA256 []byte `gorm:"column:findings_sha256"`
	KEV            int    `gorm:"column:kev"`
	MaxRisk        float64
}

type reportRow struct {
	SummaryColumns
	CreatedAt   time.Time `gorm:"autoCreateTime:false"`
	MaxSeverity int
	BOMSHA256   []byte   `gorm:"column:bom_sha256"`
	MaxEPSS     *float64 `gorm:"column:max_epss"`
	// RiskParsed is false for reports stored before findings carried risk
	// columns, until BackfillRisk has filled them.
	RiskParsed bool
}

func (reportRow) TableName() string { return "reports" }

type bomRow struct {
	Digest   string `gorm:"primaryKey"`
	Encoding string
	Size     int64
	Data     []byte
}

func (bomRow) TableName() string { return "report_boms" }

type findingRow struct {
	ID          int64 `gorm:"primaryKey"`
	Digest      string
	VulnID      string
	Source      string
	Severity    int
	CVSSScore   *float64 `gorm:"column:cvss_score"`
	CVSSVector  string   `gorm:"column:cvss_vector"`
	PkgName     string
	PkgVersion  string
	PkgType     string
	PURL        string   `gorm:"column:purl"`
	FixedIn     []string `gorm:"serializer:json"`
	Fixable     bool
	Description string
	URL         string   `gorm:"column:url"`
	EPSS        *float64 `gorm:"column:epss"`
	KEV         bool     `gorm:"column:kev"`
	Risk        float64
	FirstSeen   time.Time
	KEVSince    *time.Time `gorm:"column:kev_since"`
}

func (findingRow) TableName() string { return "findings" }

type scanRow struct {
	Digest    string `gorm:"primaryKey"`
	Image     string
	Namespace string
	Scanner   string
	Job       string
	Status    string
	Reason    string
	Message   string
	Attempt   int
	UpdatedAt time.Time `gorm:"autoUpdateTime:false"`
}

func (scanRow) TableName() string { return "scans" }

func summaryRow(r *report.Summary, hash, findings []byte) reportRow {
	matched := r.StoredAt
	return reportRow{
		SummaryColumns: SummaryColumns{
			Digest: r.Digest, Image: r.Image, ScannedAt: r.ScannedAt, StoredAt: r.StoredAt,
			GrypeVersion: r.GrypeVersion, DBBuilt: r.DBBuilt, DBSchema: r.DBSchema, MatchedAt: &matched, Cause: string(r.Cause),
			Critical: r.Counts.Critical, High: r.Counts.High, Medium: r.Counts.Medium, Low: r.Counts.Low,
			Negligible: r.Counts.Negligible, Unknown: r.Counts.Unknown,
			Fixable: r.Fixable, Findings: r.Findings, FindingsSHA256: findings, KEV: r.KEV, MaxRisk: r.MaxRisk,
		},
		CreatedAt: r.StoredAt, MaxSeverity: int(r.Counts.Max()), BOMSHA256: hash, MaxEPSS: r.MaxEPSS, RiskParsed: true,
	}
}

func (r SummaryColumns) summary() report.Summary {
	return report.Summary{
		Digest: r.Digest, Image: r.Image, ScannedAt: r.ScannedAt.UTC(), StoredAt: r.StoredAt.UTC(),
		GrypeVersion: r.GrypeVersion, DBBuilt: r.DBBuilt, DBSchema: r.DBSchema, MatchedAt: utc(r.MatchedAt),
		Cause: report.Cause(r.Cause),
		Counts: report.Counts{Critical: r.Critical, High: r.High, Medium: r.Medium, Low: r.Low,
			Negligible: r.Negligible, Unknown: r.Unknown},
		Fixable: r.Fixable, Findings: r.Findings, FindingsFingerprint: r.FindingsSHA256, KEV: r.KEV, MaxRisk: r.MaxRisk,
	}
}

func (f findingRow) finding() report.Finding {
	return report.Finding{
		ID: f.VulnID, Source: f.Source, Severity: report.Severity(f.Severity),
		CVSSScore: f.CVSSScore, CVSSVector: f.CVSSVector,
		Package: report.Package{Name: f.PkgName, Version: f.PkgVersion, Type: f.PkgType, PURL: f.PURL},
		FixedIn: f.FixedIn, Description: f.Description, URL: f.URL,
		Risk: report.Risk{EPSS: f.EPSS, KEV: f.KEV, Score: f.Risk},
		Seen: report.Seen{FirstSeen: f.FirstSeen.UTC(), KEVSince: utc(f.KEVSince)},
	}
}

func (s scanRow) status() report.ScanStatus {
	return report.ScanStatus{
		Digest: s.Digest, Image: s.Image, Namespace: s.Namespace, Scanner: s.Scanner, Job: s.Job,
		State: report.ScanState(s.Status), Reason: s.Reason, Message: s.Message, Attempt: s.Attempt,
		UpdatedAt: s.UpdatedAt.UTC(),
	}
}

// utc dereferences a nullable time (zero for NULL) in UTC.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
