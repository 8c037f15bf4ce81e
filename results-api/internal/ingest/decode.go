package ingest

import (
	"encoding/json"
	"reflect"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// decodeBOM is the fast path of Parse: one pass over raw that fills a
// cdx.BOM with only the fields Parse and finding.Of read (bomFormat,
// specVersion, metadata, each component's bom-ref, name, version, purl
// and nested components, each vulnerability's id, description, source,
// advisories, ratings and affects) and checks every other value against
// the type json.Unmarshal would decode it into (schema.go), without
// building it.
//
// ok is false when the document is not plainly one json.Unmarshal into
// cdx.BOM accepts: a syntax or type error, a duplicate key, a key that
// matches a field only under case folding or carries escapes, nesting past
// maxDepth. Parse then decodes it with json.Unmarshal, which decides, so
// every rejection and its message is exactly today's, and the fast path
// never accepts a document the full decode refuses. On every document it
// accepts, the read fields equal json.Unmarshal's (FuzzDecodeBOM and
// TestDecodeBOMMatchesFullDecode check both).
func decodeBOM(raw []byte) (bom cdx.BOM, ok bool) {
	d := decoder{data: raw}
	d.ws()
	if d.peek() != '{' {
		return bom, false
	}
	d.readBOM(&bom)
	d.ws()
	if d.bad || d.i != len(d.data) {
		return cdx.BOM{}, false
	}
	return bom, true
}

// maxDepth bounds the decoder's recursion; deeper documents go to
// json.Unmarshal (whose own limit is 10,000).
const maxDepth = 500

type decoder struct {
	data  []byte
	i     int
	depth int
	bad   bool // sticky: the fast path gives up
	// names holds one copy of each value of the fields that repeat
	// across vulnerabilities (severity, method, status, source name).
	names map[string]string
}

var (
	bomS    = bomShape()
	compS   = bomS.field[bomS.fieldIndex("components")].shape.elem.elem
	vulnS   = bomS.field[bomS.fieldIndex("vulnerabilities")].shape.elem.elem
	sourceS = vulnS.field[vulnS.fieldIndex("source")].shape.elem
	advS    = vulnS.field[vulnS.fieldIndex("advisories")].shape.elem.elem
	ratingS = vulnS.field[vulnS.fieldIndex("ratings")].shape.elem.elem
	affS    = vulnS.field[vulnS.fieldIndex("affects")].shape.elem.elem
	verS    = affS.field[affS.fieldIndex("versions")].shape.elem.elem
)

func (d *decoder) readBOM(b *cdx.BOM) {
	d.object(bomS, func(key string) bool {
		switch key {
		case "bomFormat":
			d.str(&b.BOMFormat)
		case "specVersion", "metadata":
			// Small, and of cyclonedx-go's own decoding (SpecVersion and
			// metadata.tools have UnmarshalJSON methods): decoded by it.
			start := d.skip()
			if d.bad {
				return true
			}
			var err error
			if key == "specVersion" {
				err = json.Unmarshal(d.data[start:d.i], &b.SpecVersion)
			} else {
				err = json.Unmarshal(d.data[start:d.i], &b.Metadata)
			}
			d.bad = d.bad || err != nil
		case "components":
			b.Components = array(d, d.readComponent)
		case "vulnerabilities":
			b.Vulnerabilities = array(d, d.readVulnerability)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) readComponent(c *cdx.Component) {
	d.object(compS, func(key string) bool {
		switch key {
		case "bom-ref":
			d.str(&c.BOMRef)
		case "name":
			d.str(&c.Name)
		case "version":
			d.str(&c.Version)
		case "purl":
			d.str(&c.PackageURL)
		case "components":
			c.Components = array(d, d.readComponent)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) readVulnerability(v *cdx.Vulnerability) {
	d.object(vulnS, func(key string) bool {
		switch key {
		case "id":
			d.str(&v.ID)
		case "description":
			d.str(&v.Description)
		case "source":
			v.Source = d.readSource()
		case "advisories":
			v.Advisories = array(d, func(a *cdx.Advisory) {
				d.object(advS, func(key string) bool {
					switch key {
					case "title":
						d.str(&a.Title)
					case "url":
						d.str(&a.URL)
					default:
						return false
					}
					return true
				})
			})
		case "ratings":
			v.Ratings = array(d, d.readRating)
		case "affects":
			v.Affects = array(d, d.readAffects)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) readSource() *cdx.Source {
	if d.null() {
		return nil
	}
	s := &cdx.Source{}
	d.object(sourceS, func(key string) bool {
		switch key {
		case "name":
			d.name(&s.Name)
		case "url":
			d.str(&s.URL)
		default:
			return false
		}
		return true
	})
	return s
}

func (d *decoder) readRating(r *cdx.VulnerabilityRating) {
	d.object(ratingS, func(key string) bool {
		switch key {
		case "source":
			r.Source = d.readSource()
		case "score":
			r.Score = d.float()
		case "severity":
			d.name((*string)(&r.Severity))
		case "method":
			d.name((*string)(&r.Method))
		case "vector":
			d.str(&r.Vector)
		default:
			return false
		}
		return true
	})
}

func (d *decoder) readAffects(a *cdx.Affects) {
	d.object(affS, func(key string) bool {
		switch key {
		case "ref":
			d.str(&a.Ref)
		case "versions":
			a.Range = array(d, func(v *cdx.AffectedVersions) {
				d.object(verS, func(key string) bool {
					switch key {
					case "version":
						d.str(&v.Version)
					case "range":
						d.str(&v.Range)
					case "status":
						d.name((*string)(&v.Status))
					default:
						return false
					}
					return true
				})
			})
		default:
			return false
		}
		return true
	})
}

// array reads null (nil) or an array whose elements elem reads; a null
// element is the zero value, as encoding/json leaves it.
func array[T any](d *decoder, elem func(*T)) *[]T {
	if d.null() {
		return nil
	}
	if !d.enter('[') {
		return nil
	}
	out := []T{}
	d.ws()
	if d.peek() == ']' {
		d.i++
		d.depth--
		return &out
	}
	for !d.bad {
		out = append(out, *new(T))
		if !d.null() {
			elem(&out[len(out)-1])
		}
		if !d.next(']') {
			break
		}
	}
	d.depth--
	return &out
}

// object reads an object of the struct shape s. For each key naming a field
// it calls read with the field's JSON name; read consumes the value and
// returns true, or returns false to have it checked against the field's
// shape. Other keys are skipped, as encoding/json ignores them. A null
// reads as an empty object: encoding/json leaves the struct as it was.
func (d *decoder) object(s *shape, read func(key string) bool) {
	if d.null() {
		return
	}
	if !d.enter('{') {
		return
	}
	var seen uint64
	d.ws()
	if d.peek() == '}' {
		d.i++
		d.depth--
		return
	}
	for !d.bad {
		d.ws()
		key, plain := d.rawString()
		if !plain {
			// An escaped key is matched after unquoting: leave it to json.Unmarshal.
			d.bad = true
			break
		}
		d.ws()
		if d.peek() != ':' {
			d.bad = true
			break
		}
		d.i++
		i, ok, fold := s.lookup(key)
		switch {
		case fold:
			d.bad = true
		case !ok:
			d.skip()
		case seen&(1<<i) != 0:
			// A repeated key: encoding/json merges or replaces; leave it to it.
			d.bad = true
		default:
			seen |= 1 << i
			if !read(s.field[i].name) {
				d.check(s.field[i].shape)
			}
		}
		if !d.next('}') {
			break
		}
	}
	d.depth--
}

// check validates one value against shape s without keeping it.
func (d *decoder) check(s *shape) {
	d.ws()
	if d.bad {
		return
	}
	c := d.peek()
	if c == 'n' && s.kind != shapeCustom {
		d.literal("null")
		return
	}
	switch s.kind {
	case shapeAny:
		d.checkAny()
	case shapeString:
		if c != '"' {
			d.bad = true
			return
		}
		d.rawString()
	case shapeBool:
		switch c {
		case 't':
			d.literal("true")
		case 'f':
			d.literal("false")
		default:
			d.bad = true
		}
	case shapeInt, shapeUint, shapeFloat:
		d.checkNumber(s)
	case shapePtr:
		d.check(s.elem)
	case shapeArray:
		if !d.enter('[') {
			return
		}
		d.ws()
		if d.peek() == ']' {
			d.i++
			d.depth--
			return
		}
		for !d.bad {
			d.check(s.elem)
			if !d.next(']') {
				break
			}
		}
		d.depth--
	case shapeMap:
		if !d.enter('{') {
			return
		}
		d.ws()
		if d.peek() == '}' {
			d.i++
			d.depth--
			return
		}
		for !d.bad {
			d.ws()
			d.rawString()
			d.ws()
			if d.peek() != ':' {
				d.bad = true
				break
			}
			d.i++
			d.check(s.elem)
			if !d.next('}') {
				break
			}
		}
		d.depth--
	case shapeStruct:
		d.object(s, func(string) bool { return false })
	case shapeCustom:
		start := d.skip()
		if !d.bad && json.Unmarshal(d.data[start:d.i], reflect.New(s.typ).Interface()) != nil {
			d.bad = true
		}
	}
}

// checkAny validates a value decoded into interface{}: any JSON, but a
// number must fit a float64.
func (d *decoder) checkAny() {
	d.ws()
	switch c := d.peek(); {
	case c == '{':
		if !d.enter('{') {
			return
		}
		d.ws()
		if d.peek() == '}' {
			d.i++
			d.depth--
			return
		}
		for !d.bad {
			d.ws()
			d.rawString()
			d.ws()
			if d.peek() != ':' {
				d.bad = true
				break
			}
			d.i++
			d.checkAny()
			if !d.next('}') {
				break
			}
		}
		d.depth--
	case c == '[':
		d.enter('[')
		d.ws()
		if d.peek() == ']' {
			d.i++
			d.depth--
			return
		}
		for !d.bad {
			d.checkAny()
			if !d.next(']') {
				break
			}
		}
		d.depth--
	case c == '-' || c >= '0' && c <= '9':
		d.checkNumber(&shape{kind: shapeFloat, bits: 64})
	default:
		d.skip()
	}
}

func (d *decoder) checkNumber(s *shape) {
	n := d.number()
	if d.bad {
		return
	}
	var err error
	switch s.kind {
	case shapeInt:
		_, err = strconv.ParseInt(string(n), 10, s.bits)
	case shapeUint:
		_, err = strconv.ParseUint(string(n), 10, s.bits)
	default:
		_, err = strconv.ParseFloat(string(n), s.bits)
	}
	d.bad = err != nil
}

// str reads a string field: null leaves it as it is.
func (d *decoder) str(dst *string) {
	d.ws()
	if d.null() {
		return
	}
	if d.peek() != '"' {
		d.bad = true
		return
	}
	b, plain := d.rawString()
	if d.bad {
		return
	}
	if plain || (!hasEscape(b) && utf8.Valid(b)) {
		*dst = string(b)
		return
	}
	// Escapes or invalid UTF-8 (a quote or line break in an advisory's
	// text, a CPE's \\:, a producer that escapes <, > and &): unquoted as
	// encoding/json does, which rawString's checks make safe. By
	// json.Unmarshal, a report with 15,000 such strings parsed ~15% slower.
	*dst = unquote(b)
}

// unquote decodes the body of a JSON string, its escapes already checked
// by rawString, exactly as encoding/json's unquote does: a \uXXXX
// surrogate pair is one rune, a lone surrogate is U+FFFD, and so is each
// byte of invalid UTF-8 (FuzzReadString holds it to json.Unmarshal).
func unquote(b []byte) string {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			e := b[i+1]
			i += 2
			switch e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b[i:])
				i += 4
				if utf16.IsSurrogate(r) {
					// Joined with a \u escape right after it when the two
					// are a pair; alone, U+FFFD.
					r2 := unicode.ReplacementChar
					if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
						r2 = hex4(b[i+2:])
					}
					if r = utf16.DecodeRune(r, r2); r != unicode.ReplacementChar {
						i += 6
					}
				}
				out = utf8.AppendRune(out, r)
			default: // " \ /
				out = append(out, e)
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			out = utf8.AppendRune(out, r) // RuneError for a bad byte, as encoding/json
			i += size
		}
	}
	return string(out)
}

// hex4 reads the four hex digits of a \u escape (rawString checked them).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// name reads a string field like str, keeping one copy per distinct value
// (up to maxNames of them).
func (d *decoder) name(dst *string) {
	d.ws()
	if d.peek() != '"' {
		d.str(dst)
		return
	}
	start := d.i
	b, plain := d.rawString()
	if d.bad || !plain {
		d.i = start
		d.str(dst)
		return
	}
	if s, ok := d.names[string(b)]; ok {
		*dst = s
		return
	}
	*dst = string(b)
	if d.names == nil {
		d.names = map[string]string{}
	}
	if len(d.names) < maxNames {
		d.names[*dst] = *dst
	}
}

const maxNames = 256

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// float reads a *float64 field: null is nil.
func (d *decoder) float() *float64 {
	if d.null() {
		return nil
	}
	n := d.number()
	if d.bad {
		return nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		d.bad = true
		return nil
	}
	return &f
}

// null consumes a null literal if one is next.
func (d *decoder) null() bool {
	d.ws()
	if d.peek() != 'n' {
		return false
	}
	d.literal("null")
	return !d.bad
}

// enter consumes an opening bracket c.
func (d *decoder) enter(c byte) bool {
	d.ws()
	if d.bad || d.peek() != c {
		d.bad = true
		return false
	}
	d.i++
	d.depth++
	if d.depth > maxDepth {
		d.bad = true
		return false
	}
	return true
}

// next consumes the comma before another element (true) or the closing
// bracket end (false).
func (d *decoder) next(end byte) bool {
	d.ws()
	if d.bad {
		return false
	}
	switch d.peek() {
	case ',':
		d.i++
		return true
	case end:
		d.i++
		return false
	}
	d.bad = true
	return false
}

func (d *decoder) ws() {
	for d.i < len(d.data) && space[d.data[d.i]] {
		d.i++
	}
}

var space = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func (d *decoder) peek() byte {
	if d.i < len(d.data) {
		return d.data[d.i]
	}
	return 0
}

func (d *decoder) literal(lit string) {
	if len(d.data)-d.i < len(lit) || string(d.data[d.i:d.i+len(lit)]) != lit {
		d.bad = true
		return
	}
	d.i += len(lit)
}

// skip validates any one value and returns where it starts.
func (d *decoder) skip() int {
	d.ws()
	start := d.i
	switch c := d.peek(); {
	case c == '"':
		d.rawString()
	case c == '{':
		if !d.enter('{') {
			return start
		}
		d.ws()
		if d.peek() == '}' {
			d.i++
			d.depth--
			return start
		}
		for !d.bad {
			d.ws()
			d.rawString()
			d.ws()
			if d.peek() != ':' {
				d.bad = true
				break
			}
			d.i++
			d.skip()
			if !d.next('}') {
				break
			}
		}
		d.depth--
	case c == '[':
		if !d.enter('[') {
			return start
		}
		d.ws()
		if d.peek() == ']' {
			d.i++
			d.depth--
			return start
		}
		for !d.bad {
			d.skip()
			if !d.next(']') {
				break
			}
		}
		d.depth--
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		d.number()
	default:
		d.bad = true
	}
	return start
}

// rawString consumes a string and returns its bytes between the quotes;
// plain is true when they hold no escape and no byte ≥ 0x80, so they are
// the string itself.
func (d *decoder) rawString() (b []byte, plain bool) {
	if d.peek() != '"' {
		d.bad = true
		return nil, false
	}
	d.i++
	start := d.i
	plain = true
	for d.i < len(d.data) {
		for d.i < len(d.data) && plainByte[d.data[d.i]] {
			d.i++
		}
		if d.i == len(d.data) {
			break
		}
		c := d.data[d.i]
		switch {
		case c == '"':
			d.i++
			return d.data[start : d.i-1], plain
		case c < 0x20:
			d.bad = true
			return nil, false
		case c == '\\':
			plain = false
			d.i++
			if d.i >= len(d.data) {
				d.bad = true
				return nil, false
			}
			switch d.data[d.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i++
			case 'u':
				if len(d.data)-d.i < 5 || !isHex(d.data[d.i+1]) || !isHex(d.data[d.i+2]) || !isHex(d.data[d.i+3]) || !isHex(d.data[d.i+4]) {
					d.bad = true
					return nil, false
				}
				d.i += 5
			default:
				d.bad = true
				return nil, false
			}
		case c >= 0x80:
			plain = false
			d.i++
		default:
			d.i++
		}
	}
	d.bad = true
	return nil, false
}

// plainByte marks the bytes a string holds as they are: not a quote, a
// backslash, a control character or part of a multi-byte character.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number consumes a number of JSON's grammar and returns its bytes.
func (d *decoder) number() []byte {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		digits()
	default:
		d.bad = true
		return nil
	}
	if d.peek() == '.' {
		d.i++
		if digits() == 0 {
			d.bad = true
			return nil
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if digits() == 0 {
			d.bad = true
			return nil
		}
	}
	return d.data[start:d.i]
}
