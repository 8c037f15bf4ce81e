package finding

import cdx "github.com/CycloneDX/cyclonedx-go"

// Rating sources Grype v0.121 writes into a vulnerability's CycloneDX
// ratings for its EPSS and KEV decorators (grype/presenter/cyclonedx).
const (
	SourceEPSS = "FIRST"
	SourceKEV  = "CISA KEV Catalog"
)

// risk reads a vulnerability's EPSS and KEV ratings and computes Grype's
// risk score from them and the other ratings, as Grype computes the score
// it prints (vulnerability.Metadata.RiskScore):
//
//	min(threat × severity × boost, 1) × 100
//
// threat is 1 for a KEV listing, else the EPSS probability (0 without);
// severity averages the severity's mid-range score (negligible 0.5, low 3,
// medium 5, high 7.5, critical 9, anything else 5) with the mean CVSS base
// score, both over 10 (the severity alone when no CVSS score is present);
// boost is 1.05 for a KEV listing. Grype boosts a listing with known
// ransomware use by 1.1 instead, but CycloneDX does not say which: such a
// score is up to 5 % lower than Grype's own.
func risk(v cdx.Vulnerability, sev Severity) Risk {
	var r Risk
	if v.Ratings == nil {
		return r
	}
	var cvss []float64
	for _, rt := range *v.Ratings {
		src := ""
		if rt.Source != nil {
			src = rt.Source.Name
		}
		switch {
		case src == SourceEPSS:
			// Grype's encoder drops a score of 0: the rating without
			// one is an EPSS probability of 0.
			e := 0.0
			if rt.Score != nil {
				e = *rt.Score
			}
			r.EPSS = &e
		case src == SourceKEV:
			r.KEV = true
		case rt.Source == nil && rt.Score != nil && *rt.Score != 0:
			// Grype's CVSS ratings: one per CVSS record, no source.
			cvss = append(cvss, *rt.Score)
		}
	}
	threat := 0.0
	switch {
	case r.KEV:
		threat = 1
	case r.EPSS != nil:
		threat = *r.EPSS
	}
	if threat == 0 {
		return r
	}
	severity := severityScore(sev) / 10
	if len(cvss) > 0 {
		severity = average(severity, average(cvss...)/10)
	}
	boost := 1.0
	if r.KEV {
		boost = 1.05
	}
	r.Score = min(threat*severity*boost, 1) * 100
	return r
}

func severityScore(s Severity) float64 {
	switch s {
	case Negligible:
		return 0.5
	case Low:
		return 3
	case Medium:
		return 5
	case High:
		return 7.5
	case Critical:
		return 9
	}
	return 5
}

func average(xs ...float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
