package ingest

// Test access to the two decoding paths of Parse.
var (
	ParseFull = parseFull
	DecodeBOM = decodeBOM
)
