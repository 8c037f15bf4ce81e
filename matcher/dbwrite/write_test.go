package dbwrite

import (
	"testing"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// TestWriteReadBack writes the real advisories plus a few synthetic ones and
// reads them back with Grype's own v6 reader, as `grype db import` would.
func TestWriteReadBack(t *testing.T) {
	dir := t.TempDir()
	built := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if _, err := Write(dir, advisory.All(5), built); err != nil {
		t.Fatal(err)
	}
	r, err := v6.NewReader(v6.Config{DBDirPath: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	meta, err := r.GetDBMetadata()
	if err != nil || meta.Model != v6.ModelVersion || !meta.BuildTimestamp.Equal(built) {
		t.Fatalf("metadata %+v err %v; want model %d built %v", meta, err, v6.ModelVersion, built)
	}
	providers, err := r.AllProviders()
	if err != nil || len(providers) != 5 {
		t.Fatalf("providers %v err %v; want alpine, debian, github, nvd, synthetic", providers, err)
	}

	// minimist has two GHSA records; only one covers 1.2.5 (checked by the
	// node fixture), but both must be stored with their ranges and fixes.
	got, err := r.GetAffectedPackages(&v6.PackageSpecifier{Name: "minimist", Ecosystem: advisory.EcosystemNpm},
		&v6.GetPackageOptions{PreloadBlob: true, PreloadVulnerability: true})
	if err != nil || len(got) != 2 {
		t.Fatalf("minimist: %d handles, err %v", len(got), err)
	}
	for _, h := range got {
		rng := h.BlobValue.Ranges[0]
		if rng.Fix.State != v6.FixedStatus || rng.Version.Type != "semver" || h.Vulnerability.ProviderID != advisory.ProviderGitHub {
			t.Errorf("%s: range %+v fix %+v provider %s", h.Vulnerability.Name, rng.Version, rng.Fix, h.Vulnerability.ProviderID)
		}
	}

	// A distro record without its own severity gets NVD's (as grype-db does).
	deb, err := r.GetAffectedPackages(&v6.PackageSpecifier{Name: "openssl", Ecosystem: advisory.EcosystemDeb},
		&v6.GetPackageOptions{PreloadBlob: true, PreloadVulnerability: true, PreloadOS: true})
	if err != nil || len(deb) != 7 {
		t.Fatalf("debian openssl: %d handles, err %v", len(deb), err)
	}
	for _, h := range deb {
		if h.OperatingSystem == nil || h.OperatingSystem.Name != "debian" || h.OperatingSystem.MajorVersion != "12" {
			t.Errorf("%s: os %+v", h.Vulnerability.Name, h.OperatingSystem)
		}
		sev := h.Vulnerability.BlobValue.Severities
		if len(sev) == 0 || sev[0].Scheme != v6.SeveritySchemeCHMLN || sev[0].Value == "" {
			t.Errorf("%s: severities %+v, want NVD's severity filled in", h.Vulnerability.Name, sev)
		}
	}
}
