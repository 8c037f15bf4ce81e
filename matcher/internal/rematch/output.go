package rematch

import (
	"bytes"
	"fmt"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"

	grypecdx "github.com/anchore/grype/grype/presenter/cyclonedx"
	"github.com/anchore/grype/grype/presenter/models"
	"github.com/anchore/syft/syft/format/common/cyclonedxhelpers"
	"github.com/anchore/syft/syft/sbom"

	"github.com/crowsnest-dev/crowsnest/api/finding"
)

// Output is a match's CycloneDX report before it is encoded: a pass
// compares its findings' fingerprint with the stored one and encodes it
// only when they differ.
type Output struct {
	bom       *cdx.BOM
	footprint []string // nil unless Options.Footprints
}

// Footprint returns the keys of the DB lookups the match made (sorted;
// footprint.go), or nil when the Matcher does not record them.
func (o *Output) Footprint() []string { return o.footprint }

// present is Grype's CycloneDX presenter (presenter/cyclonedx.Presenter.
// Present) with the DB build added to the metadata properties, up to the
// encoding (Output.Encode).
func (m *Matcher) present(doc models.Document, s *sbom.SBOM) *cdx.BOM {
	bom := cyclonedxhelpers.ToFormatModel(*s)
	bom.Metadata.Tools = &cdx.ToolsChoice{
		Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Author: "anchore", Name: m.id.Name, Version: m.id.Version,
		}},
	}
	vulns := make([]cdx.Vulnerability, 0, len(doc.Matches))
	for _, match := range doc.Matches {
		v, err := grypecdx.NewVulnerability(match)
		if err != nil {
			continue // as Grype's presenter does
		}
		vulns = append(vulns, v)
	}
	bom.Vulnerabilities = &vulns
	setProperty(bom.Metadata, PropertyDBBuilt, m.db.Built.Format(time.RFC3339))
	setProperty(bom.Metadata, PropertyDBSchema, m.db.Schema)
	return bom
}

// Encode returns the report as Grype's presenter writes it.
func (o *Output) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	enc.SetEscapeHTML(false)
	if err := enc.EncodeVersion(o.bom, o.bom.SpecVersion); err != nil {
		return nil, fmt.Errorf("encode CycloneDX: %w", err)
	}
	work.encodes.Add(1)
	return buf.Bytes(), nil
}

// Findings returns the report's findings (FindingsOf).
func (o *Output) Findings() []Finding { return FindingsOf(o.bom) }

// Fingerprint is the contract's fingerprint of the report's findings, as
// results-api computes it from the encoded report (finding.Of,
// finding.Fingerprint). Reading them from the model rather than the JSON
// cannot make a changed report look unchanged: the JSON encoding changes
// no finding field except invalid UTF-8, which a stored fingerprint (made
// from JSON) cannot hold, so equal fingerprints mean equal findings.
func (o *Output) Fingerprint() ([]byte, error) {
	fs, err := finding.Of(o.bom, 0)
	if err != nil {
		return nil, err
	}
	return finding.Fingerprint(fs), nil
}

func setProperty(md *cdx.Metadata, name, value string) {
	var props []cdx.Property
	if md.Properties != nil {
		for _, p := range *md.Properties {
			if p.Name != name {
				props = append(props, p)
			}
		}
	}
	props = append(props, cdx.Property{Name: name, Value: value})
	md.Properties = &props
}
