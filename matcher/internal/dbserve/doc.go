// Package dbserve serves the matcher's active vulnerability DB to scan Jobs
// in Grype's own distribution format, so `grype db update` in a Job talks to
// the matcher exactly as it would to Grype's public DB site:
//
//	GET <prefix>/v6/latest.json   the listing (distribution.LatestDocument):
//	                              schema, build time, archive path (relative,
//	                              so it resolves back to the matcher) and the
//	                              archive's sha256 checksum
//	GET <prefix>/v6/<archive>     the archive bytes, with Content-Length and
//	                              an ETag (If-None-Match answers 304)
//
// A scan Job sets GRYPE_DB_UPDATE_URL=http://<matcher>/<prefix>. The archive
// of the previous DB stays downloadable, so a Job that read the listing just
// before an activation still gets the archive it was told about.
//
// ImportHandler is the admin-only upload of a DB archive for air-gapped
// clusters (POST /api/v1/vulndb/import).
package dbserve
