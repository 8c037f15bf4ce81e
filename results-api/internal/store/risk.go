package store

// RiskFilter selects by Grype's risk data: KEV keeps KEV-listed findings
// (for report lists: images with one), MinEPSS those with an EPSS score at
// or above it (nil: no filter).
type RiskFilter struct {
	KEV     bool
	MinEPSS *float64
}

// riskFilters adds q.Risk's conditions on reports r.
func riskFilters(q ListQuery, where []string, args []any) ([]string, []any) {
	if q.Risk.KEV {
		where = append(where, "r.kev > 0")
	}
	if q.Risk.MinEPSS != nil {
		where = append(where, "r.max_epss >= ?")
		args = append(args, *q.Risk.MinEPSS)
	}
	return where, args
}

// findingRiskFilters adds f's conditions on findings (alias a).
func findingRiskFilters(a string, f RiskFilter, where []string, args []any) ([]string, []any) {
	if f.KEV {
		where = append(where, a+".kev")
	}
	if f.MinEPSS != nil {
		where = append(where, a+".epss >= ?")
		args = append(args, *f.MinEPSS)
	}
	return where, args
}
