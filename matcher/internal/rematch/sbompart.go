package rematch

import (
	"encoding/json"
)

// findingsMember is the top-level member of a Grype CycloneDX report that
// holds its findings: 60-70 % of a stored report's bytes (the large
// fixture's 3,000 vulnerabilities are 3.1 of its 4.3 MB), which Syft's
// CycloneDX decoder parses into cyclonedx-go's types and then never reads
// (its conversion to a Syft SBOM reads metadata, components and
// dependencies only).
const findingsMember = "vulnerabilities"

// sbomPart is bom without its top-level findings: what Grype's SBOM
// provider reads of it, so that decoding a stored report for a re-match
// costs what its SBOM costs. The findings are still checked to be valid
// JSON, so a report that was malformed there fails as before. Any bom it
// cannot take apart (not an object, a structural error, no findings) is
// returned as it is, for the decoder to read or refuse with its own error.
func sbomPart(bom []byte) []byte {
	members, open, ok := topMembers(bom)
	if !ok {
		return bom
	}
	size, dropped := len(bom), false
	for _, m := range members {
		if m.key == findingsMember {
			if !json.Valid(bom[m.value:m.end]) {
				return bom
			}
			size -= m.end - m.start
			dropped = true
		}
	}
	if !dropped {
		return bom
	}
	out := make([]byte, 0, size)
	out = append(out, bom[:open+1]...)
	first := true
	for _, m := range members {
		if m.key == findingsMember {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		out = append(out, bom[m.start:m.end]...)
		first = false
	}
	return append(out, '}')
}

// member is one top-level member of a JSON object: its key (unquoted) and
// where it lies, from the key's opening quote (start) through its value
// (value to end).
type member struct {
	key               string
	start, value, end int
}

// topMembers lists the members of the JSON object doc holds, and where its
// opening brace is. It checks structure only (brackets, strings, the
// separators between members, nothing after the object but white space)
// and does not validate scalars; ok is false for anything else.
func topMembers(doc []byte) (members []member, open int, ok bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, 0, false
	}
	open = i
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil, open, skipSpace(doc, i+1) == len(doc)
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return nil, 0, false
		}
		start := i
		keyEnd, ok := skipString(doc, i)
		if !ok {
			return nil, 0, false
		}
		var key string
		if err := json.Unmarshal(doc[start:keyEnd], &key); err != nil {
			return nil, 0, false
		}
		i = skipSpace(doc, keyEnd)
		if i >= len(doc) || doc[i] != ':' {
			return nil, 0, false
		}
		value := skipSpace(doc, i+1)
		end, ok := skipValue(doc, value)
		if !ok {
			return nil, 0, false
		}
		members = append(members, member{key: key, start: start, value: value, end: end})
		i = skipSpace(doc, end)
		if i >= len(doc) {
			return nil, 0, false
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case '}':
			return members, open, skipSpace(doc, i+1) == len(doc)
		default:
			return nil, 0, false
		}
	}
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at
// doc[i] ('"').
func skipString(doc []byte, i int) (int, bool) {
	for i++; i < len(doc); i++ {
		switch doc[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index just past the value that starts at doc[i]:
// a string, an object or array (brackets matched, strings skipped whole),
// or a scalar (up to the next separator).
func skipValue(doc []byte, i int) (int, bool) {
	if i >= len(doc) {
		return 0, false
	}
	switch doc[i] {
	case '"':
		return skipString(doc, i)
	case '{', '[':
		var stack []byte
		for ; i < len(doc); i++ {
			switch c := doc[i]; c {
			case '"':
				end, ok := skipString(doc, i)
				if !ok {
					return 0, false
				}
				i = end - 1
			case '{', '[':
				stack = append(stack, c)
			case '}', ']':
				if len(stack) == 0 || stack[len(stack)-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
					return 0, false
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	default:
		start := i
		for i < len(doc) && doc[i] != ',' && doc[i] != '}' && doc[i] != ']' && doc[i] != ' ' && doc[i] != '\t' && doc[i] != '\n' && doc[i] != '\r' {
			i++
		}
		return i, i > start
	}
}
