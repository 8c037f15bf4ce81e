package ingest

// Test access to the two decoding paths of Parse.
var (
	ParseFull = parseFull
	DecodeBOM = decodeBOM
)

// ReadString reads one JSON string value the way the fast path reads a
// string field: ok is false where it gives up (the document is then
// json.Unmarshal's to judge), end is where it stopped.
func ReadString(doc []byte) (s string, end int, ok bool) {
	d := decoder{data: doc}
	d.str(&s)
	return s, d.i, !d.bad
}
