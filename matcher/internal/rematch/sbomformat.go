package rematch

import (
	"bytes"
	"strings"

	"github.com/anchore/syft/syft/format/cyclonedxjson"
	"github.com/anchore/syft/syft/format/cyclonedxxml"
	"github.com/anchore/syft/syft/sbom"
)

// sbomReader is what Grype's SBOM provider reads: a stored report's SBOM
// part, naming the decoder Syft's format.Decode would choose for it when
// that is sure to be CycloneDX JSON. The patched Grype (PATCH.md,
// crowsnest_format.go) then decodes it with that decoder alone, skipping
// the passes in which Syft JSON's and CycloneDX XML's decoders each parse
// the whole document to say it is not theirs; upstream's Grype ignores the
// method and identifies the document itself, with the same result.
type sbomReader struct {
	parsedReader
	decoder sbom.FormatDecoder
}

// FormatDecoder is the patched Grype's pkg.FormatDecoderReader.
func (r sbomReader) FormatDecoder() sbom.FormatDecoder { return r.decoder }

// Syft's decoders are stateless values, safe to share.
var (
	cycloneDXJSON = cyclonedxjson.NewFormatDecoder()
	cycloneDXXML  = cyclonedxxml.NewFormatDecoder()
)

func newSBOMReader(part []byte) sbomReader {
	r := sbomReader{parsedReader: parsedReader{bytes.NewReader(part)}}
	if cycloneDXOnly(part) {
		r.decoder = cycloneDXJSON
	}
	return r
}

// cycloneDXOnly reports whether neither decoder format.Decode asks before
// CycloneDX JSON's (syft v1.57: Syft JSON, then CycloneDX XML) can
// identify doc, so that the collection's choice is CycloneDX JSON's, or,
// when that refuses doc too, the decoders after it, which the patched
// Grype then asks as upstream does.
//   - Syft JSON identifies a document by a top-level "schema" member: from
//     the document's tail, found as the raw bytes "schema" followed by a
//     colon, or by decoding the object, where encoding/json matches the key
//     case-insensitively (strings.EqualFold's folding) after unescaping.
//     Neither can happen without such raw bytes or such a key.
//   - CycloneDX XML identifies a document by the xmlns of its first
//     element. XML's decoder reads everything before the first '<' as
//     character data (or stops there with an error), then reads from '<'
//     as it would a document that starts there. So it is asked about the
//     bytes from the first '<' on: a string like "Name <mail@host>" (a
//     package's maintainer) ends it at once. A JSON document has no '<'
//     outside its strings, but its strings may hold one raw.
//
// A doc that is not one well-formed JSON object is left to format.Decode
// too.
func cycloneDXOnly(doc []byte) bool {
	if bytes.Contains(doc, []byte(`"schema"`)) {
		return false
	}
	members, _, ok := topMembers(doc)
	if !ok {
		return false
	}
	for _, m := range members {
		if strings.EqualFold(m.key, "schema") {
			return false
		}
	}
	if lt := bytes.IndexByte(doc, '<'); lt >= 0 {
		if id, _ := cycloneDXXML.Identify(bytes.NewReader(doc[lt:])); id != "" {
			return false
		}
	}
	return true
}
