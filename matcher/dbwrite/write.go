package dbwrite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	"gorm.io/gorm"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// FileName is the file Write creates in its directory.
const FileName = v6.VulnerabilityDBFileName

// Write creates dir/vulnerability.db holding advs. built is recorded as the
// DB build time and every provider's capture date, so the same input gives
// the same DB metadata (and Grype output that only differs where Grype
// itself adds a timestamp).
func Write(dir string, advs []advisory.Advisory, built time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, FileName)
	_ = os.Remove(path)
	w, err := v6.NewWriter(v6.Config{DBDirPath: dir})
	if err != nil {
		return "", fmt.Errorf("open v6 writer: %w", err)
	}
	if err := write(w, advs, built.UTC()); err != nil {
		_ = w.Close()
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("close v6 writer: %w", err)
	}
	if err := pinBuildTime(path, built.UTC()); err != nil {
		return "", err
	}
	return path, nil
}

func write(w v6.ReadWriter, advs []advisory.Advisory, built time.Time) error {
	if err := w.SetDBMetadata(); err != nil {
		return fmt.Errorf("set db metadata: %w", err)
	}
	providers := map[string]*v6.Provider{}
	nvdSeverity := map[string]string{}
	for _, a := range advs {
		if a.Provider == advisory.ProviderNVD && a.Severity != "" {
			nvdSeverity[a.ID] = a.Severity
		}
		if providers[a.Provider] == nil {
			p := &v6.Provider{ID: a.Provider, Version: "1", Processor: "crowsnest-vulndb", DateCaptured: &built}
			if err := w.AddProvider(*p); err != nil {
				return fmt.Errorf("add provider %s: %w", a.Provider, err)
			}
			providers[a.Provider] = p
		}
	}
	for _, a := range advs {
		sev := a.Severity
		if sev == "" && a.Provider != advisory.ProviderNVD {
			// grype-db fills a missing distro severity from NVD's record.
			sev = nvdSeverity[a.ID]
		}
		vh := &v6.VulnerabilityHandle{
			Name:       a.ID,
			Status:     v6.VulnerabilityActive,
			ProviderID: a.Provider,
			Provider:   providers[a.Provider],
			BlobValue:  blob(a, sev),
		}
		if err := w.AddVulnerabilities(vh); err != nil {
			return fmt.Errorf("add vulnerability %s/%s: %w", a.Provider, a.ID, err)
		}
		for _, af := range a.Affected {
			ph := affected(a, af)
			ph.VulnerabilityID = vh.ID
			if err := w.AddAffectedPackages(ph); err != nil {
				return fmt.Errorf("add affected package %s for %s: %w", af.Name, a.ID, err)
			}
		}
		for _, c := range a.CPEs {
			ch := affectedCPE(c)
			ch.VulnerabilityID = vh.ID
			if err := w.AddAffectedCPEs(ch); err != nil {
				return fmt.Errorf("add affected CPE %s:%s for %s: %w", c.Vendor, c.Product, a.ID, err)
			}
		}
	}
	return writeDecorations(w, advs)
}

func blob(a advisory.Advisory, severity string) *v6.VulnerabilityBlob {
	b := &v6.VulnerabilityBlob{
		ID:          a.ID,
		Description: a.Description,
		Aliases:     a.Aliases,
		References:  []v6.Reference{{URL: a.URL}},
	}
	if severity != "" {
		scheme := v6.SeveritySchemeCHMLN
		if a.Provider == advisory.ProviderGitHub {
			scheme = v6.SeveritySchemeCHML
		}
		b.Severities = append(b.Severities, v6.Severity{Scheme: scheme, Value: severity, Source: a.Provider, Rank: 1})
	}
	for _, vec := range a.CVSS {
		version := strings.TrimPrefix(strings.SplitN(vec, "/", 2)[0], "CVSS:")
		b.Severities = append(b.Severities, v6.Severity{
			Scheme: v6.SeveritySchemeCVSS,
			Value:  v6.CVSSSeverity{Vector: vec, Version: version},
			Source: a.Provider, Rank: 2,
		})
	}
	return b
}

func affected(a advisory.Advisory, af advisory.Affected) *v6.AffectedPackageHandle {
	fix := &v6.Fix{State: v6.NotFixedStatus}
	switch {
	case af.Fixed != "":
		fix = &v6.Fix{Version: af.Fixed, State: v6.FixedStatus}
	case af.WontFix:
		fix = &v6.Fix{State: v6.WontFixStatus}
	}
	h := &v6.AffectedPackageHandle{
		Package: &v6.Package{Ecosystem: af.Ecosystem, Name: af.Name},
		BlobValue: &v6.PackageBlob{
			CVEs:   a.Aliases,
			Ranges: []v6.Range{{Version: v6.Version{Type: versionType(af.Ecosystem), Constraint: af.Constraint}, Fix: fix}},
		},
	}
	if af.OS != nil {
		h.OperatingSystem = &v6.OperatingSystem{
			Name: af.OS.Name, ReleaseID: af.OS.Name,
			MajorVersion: af.OS.Major, MinorVersion: af.OS.Minor, Codename: af.OS.Codename,
		}
	}
	return h
}

func affectedCPE(c advisory.AffectedCPE) *v6.AffectedCPEHandle {
	fix := &v6.Fix{State: v6.NotFixedStatus}
	if c.Fixed != "" {
		fix = &v6.Fix{Version: c.Fixed, State: v6.FixedStatus}
	}
	return &v6.AffectedCPEHandle{
		CPE: &v6.Cpe{Part: "a", Vendor: c.Vendor, Product: c.Product},
		BlobValue: &v6.PackageBlob{
			Ranges: []v6.Range{{Version: v6.Version{Constraint: c.Constraint}, Fix: fix}},
		},
	}
}

func versionType(ecosystem string) string {
	switch ecosystem {
	case advisory.EcosystemApk:
		return "apk"
	case advisory.EcosystemDeb:
		return "dpkg"
	case advisory.EcosystemGo:
		return "go"
	default:
		return "semver"
	}
}

// pinBuildTime overwrites the build timestamp SetDBMetadata took from the
// clock, so DB metadata (and Grype's "db built" in reports) is reproducible.
func pinBuildTime(path string, built time.Time) error {
	db, err := v6.NewLowLevelDB(path, false, true, false)
	if err != nil {
		return fmt.Errorf("reopen %s: %w", path, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	ts := built.Round(time.Second)
	return db.Session(&gorm.Session{AllowGlobalUpdate: true}).Model(&v6.DBMetadata{}).Update("build_timestamp", &ts).Error
}
