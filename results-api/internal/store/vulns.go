package store

import (
	"context"

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
func (s *Store) GetVulnerability(ctx context.Context, id string) (*Vulnerability, error) {
	var rows []struct {
		VulnID, Description, Digest, PkgName, PkgVersion, Image string
		PURL                                                    string `gorm:"column:purl"`
		URL                                                     string `gorm:"column:url"`
		Severity                                                int
		FixedIn                                                 []string `gorm:"serializer:json"`
		EPSS                                                    *float64 `gorm:"column:epss"`
		KEV                                                     bool     `gorm:"column:kev"`
		Risk                                                    float64
	}
	where, args := addScope(ctx, "f.digest", []string{"lower(f.vuln_id) = lower(?)"}, []any{id})
	err := s.db.WithContext(ctx).Raw(`SELECT f.vuln_id, f.severity, f.description, f.url, f.digest, f.pkg_name,
 f.pkg_version, f.purl, f.fixed_in, f.epss, f.kev, f.risk, r.image FROM findings f JOIN reports r ON r.digest = f.digest`+whereSQL(where)+
		` ORDER BY f.risk DESC, r.image, f.digest, f.pkg_name LIMIT ?`, append(args, maxAffected)...).Scan(&rows).Error
	if err != nil {
		return nil, s.fail("get vulnerability", err)
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	v := &Vulnerability{ID: rows[0].VulnID, Images: make([]Affected, len(rows))}
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
		v.Images[i] = Affected{Digest: r.Digest, Image: r.Image, Package: r.PkgName, Version: r.PkgVersion, PURL: r.PURL, FixedIn: fixed, Risk: rk}
		v.Risk.KEV = v.Risk.KEV || rk.KEV
		v.Risk.Score = max(v.Risk.Score, rk.Score)
		if rk.EPSS != nil && (v.Risk.EPSS == nil || *rk.EPSS > *v.Risk.EPSS) {
			v.Risk.EPSS = rk.EPSS
		}
	}
	return v, nil
}
