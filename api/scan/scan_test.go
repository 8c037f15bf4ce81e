package scan_test

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

// TestContractPinned fails when a value that running Jobs, results-api or
// other tools depend on changes. Changing one is a contract change: update
// docs/uploader.md and this table together.
func TestContractPinned(t *testing.T) {
	ints := map[string][2]int{
		"ExitOK":                 {scan.ExitOK, 0},
		"ExitFailure":            {scan.ExitFailure, 1},
		"ExitUsage":              {scan.ExitUsage, 2},
		"ExitInvalidReport":      {scan.ExitInvalidReport, 3},
		"ExitRejected":           {scan.ExitRejected, 4},
		"ExitUnreachable":        {scan.ExitUnreachable, 5},
		"ExitTokenInvalid":       {scan.ExitTokenInvalid, 6},
		"TokenExpirationSeconds": {scan.TokenExpirationSeconds, 600},
	}
	for name, v := range ints {
		if v[0] != v[1] {
			t.Errorf("%s = %d, the contract says %d", name, v[0], v[1])
		}
	}
	strs := map[string][2]string{
		"ScanDir":          {scan.ScanDir, "/scan"},
		"BOMFile":          {scan.BOMFile, "/scan/bom.json"},
		"GrypeJSONFile":    {scan.GrypeJSONFile, "/scan/grype.json"},
		"HeaderDBBuilt":    {scan.HeaderDBBuilt, "X-Crowsnest-DB-Built"},
		"HeaderDBSchema":   {scan.HeaderDBSchema, "X-Crowsnest-DB-Schema"},
		"TokenDir":         {scan.TokenDir, "/var/run/secrets/crowsnest/token"},
		"TokenFile":        {scan.TokenFile, "/var/run/secrets/crowsnest/token/token"},
		"DBCacheDir":       {scan.DBCacheDir, "/var/cache/grype/db"},
		"RegistryDir":      {scan.RegistryDir, "/var/run/secrets/crowsnest/registry"},
		"TokenAudience":    {scan.TokenAudience, "crowsnest-results-api"},
		"LabelManagedBy":   {scan.LabelManagedBy, "app.kubernetes.io/managed-by"},
		"ManagedBy":        {scan.ManagedBy, "crowsnest-operator"},
		"LabelName":        {scan.LabelName, "app.kubernetes.io/name"},
		"AppName":          {scan.AppName, "crowsnest-scan"},
		"LabelDigestHash":  {scan.LabelDigestHash, "crowsnest.dev/digest-hash"},
		"AnnotationDigest": {scan.AnnotationDigest, "crowsnest.dev/digest"},
		"AnnotationImage":  {scan.AnnotationImage, "crowsnest.dev/image"},
	}
	for name, v := range strs {
		if v[0] != v[1] {
			t.Errorf("%s = %q, the contract says %q", name, v[0], v[1])
		}
	}
	codes := []int{scan.ExitOK, scan.ExitFailure, scan.ExitUsage, scan.ExitInvalidReport, scan.ExitRejected, scan.ExitUnreachable, scan.ExitTokenInvalid}
	seen := map[int]bool{}
	for _, c := range codes {
		if seen[c] {
			t.Errorf("exit code %d used twice", c)
		}
		seen[c] = true
	}
}

// TestDigestHashPinned pins the label value of a digest: running Jobs carry
// it and tools select scan Pods by it.
func TestDigestHashPinned(t *testing.T) {
	for in, want := range map[string]string{
		"sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1": "4bcff63911fcb4448bd4fdacec207030",
		"sha256:abc": "abc",
	} {
		if got := scan.DigestHash(in); got != want {
			t.Errorf("DigestHash(%q) = %q, the contract says %q", in, got, want)
		}
	}
}
