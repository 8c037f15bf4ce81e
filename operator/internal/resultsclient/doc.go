// Package resultsclient asks results-api which image digests already have a
// report, with one batch request (POST /api/v1/reports/lookup) per call,
// never one per digest, and remembers the answer briefly.
package resultsclient
