package resultsclient

// Severities lists the severities worst first, as the API names them.
var Severities = []string{"critical", "high", "medium", "low", "negligible", "unknown"}

// SeverityRank orders severities: 0 is the worst; an unknown name ranks last.
func SeverityRank(s string) int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return len(Severities)
}
