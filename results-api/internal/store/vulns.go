package store

import (
	"context"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

// maxAffected bounds the images listed for one vulnerability.
const maxAffected = 1000

// Affected is one image carrying a vulnerability.
type Affected struct {
	Digest, Image, Package, Version string
	PURL                            string
	FixedIn                         []string
	Risk                            report.Risk
	Severity                        report.Severity // of this image's finding
	Seen                            report.Seen
}

// Vulnerability is what is known about one vulnerability id across images.
type Vulnerability struct {
	ID          string
	Severity    report.Severity
	Description string
	URL         string
	// Risk is the highest of the images' findings: KEV when one is
	// listed, the highest EPSS and risk score.
	Risk   report.Risk
	Images []Affected
}

// GetVulnerability lists the images carrying vulnerability id (case-insensitive).
// age keeps only the findings it selects (the zero filter keeps every one).
func (s *Store) GetVulnerability(ctx context.Context, id string, age AgeFilter) (*Vulnerability, error) {
	var rows []struct {
		VulnID, Description, Digest, PkgName, PkgVersion, Image string
		PURL                                                    string `gorm:"column:purl"`
		URL                                                     string `gorm:"column:url"`
		Severity                                                int
		FixedIn                                                 []string `gorm:"serializer:json"`
		EPSS                                                    *float64 `gorm:"column:epss"`
		KEV                                                     bool     `gorm:"column:kev"`
		Risk                                                    float64
		FirstSeen                                               time.Time
		KEVSince                                                *time.Time `gorm:"column:kev_since"`
	}
	where, args := addScope(ctx, "f.digest", []string{"lower(f.vuln_id) = lower(?)"}, []any{id})
	where, args = age.filters("f", where, args)
	err := s.db.WithContext(ctx).Raw(`SELECT f.vuln_id, f.severity, f.description, f.url, f.digest, f.pkg_name,
 f.pkg_version, f.purl, f.fixed_in, f.epss, f.kev, f.risk, f.first_seen, f.kev_since, r.image FROM findings f JOIN reports r ON r.digest = f.digest`+whereSQL(where)+
		` ORDER BY f.risk DESC, r.image, f.digest, f.pkg_name LIMIT ?`, append(args, maxAffected)...).Scan(&rows).Error
	if err != nil {
		return nil, s.fail("get vulnerability", err)
	}
	v := &Vulnerability{Images: make([]Affected, len(rows))}
	if len(rows) == 0 {
		if !age.active() {
			return nil, ErrNotFound
		}
		// The filter left nothing: an empty list if the id is known.
		var known []struct {
			VulnID      string
			Severity    int
			Description string
			URL         string `gorm:"column:url"`
		}
		where, args := addScope(ctx, "f.digest", []string{"lower(f.vuln_id) = lower(?)"}, []any{id})
		err := s.db.WithContext(ctx).Raw(`SELECT f.vuln_id, f.severity, f.description, f.url FROM findings f`+whereSQL(where)+
			` ORDER BY f.severity DESC LIMIT 1`, args...).Scan(&known).Error
		if err != nil {
			return nil, s.fail("get vulnerability", err)
		}
		if len(known) == 0 {
			return nil, ErrNotFound
		}
		k := known[0]
		v.ID, v.Severity, v.Description, v.URL = k.VulnID, report.Severity(k.Severity), k.Description, k.URL
		return v, nil
	}
	v.ID = rows[0].VulnID
	for i, r := range rows {
		if sev := report.Severity(r.Severity); sev > v.Severity {
			v.Severity = sev
		}
		if v.Description == "" {
			v.Description = r.Description
		}
		if v.URL == "" {
			v.URL = r.URL
		}
		fixed := r.FixedIn
		if fixed == nil {
			fixed = []string{}
		}
		rk := report.Risk{EPSS: r.EPSS, KEV: r.KEV, Score: r.Risk}
		v.Images[i] = Affected{Digest: r.Digest, Image: r.Image, Package: r.PkgName, Version: r.PkgVersion, PURL: r.PURL, FixedIn: fixed, Risk: rk,
			Severity: report.Severity(r.Severity), Seen: report.Seen{FirstSeen: r.FirstSeen.UTC(), KEVSince: utc(r.KEVSince)}}
		v.Risk.KEV = v.Risk.KEV || rk.KEV
		v.Risk.Score = max(v.Risk.Score, rk.Score)
		if rk.EPSS != nil && (v.Risk.EPSS == nil || *rk.EPSS > *v.Risk.EPSS) {
			v.Risk.EPSS = rk.EPSS
		}
	}
	return v, nil
}
