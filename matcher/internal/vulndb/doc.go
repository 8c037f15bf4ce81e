// Package vulndb keeps the cluster's Grype v6 vulnerability DB on a volume.
//
// A Store imports DB archives in the format Grype distributes
// (vulnerability-db_v6….tar.zst holding vulnerability.db and import.json):
// from a file or an upload (Import), or from an upstream listing in Grype's
// latest.json format (Fetch). Every import is checked before it can become
// active — archive checksum, archive format, Grype's v6 reader, schema model,
// SQLite integrity, and a build newer than the active one — then hydrated
// (indexes built, as `grype db import` does) and activated with one atomic
// rename of a symlink. The active DB and the one before it are kept; older
// ones are pruned.
//
// Layout of the data directory:
//
//	current  -> db/<id>        symlink, the active DB
//	previous -> db/<id>        symlink, the DB it replaced
//	db/<id>/vulnerability.db   hydrated, ready for Grype's reader
//	db/<id>/import.json        Grype's import metadata
//	db/<id>/<archive name>     the archive as imported (served to scan Jobs)
//	db/<id>/db.json            what Active returns
//	tmp/                       staging; emptied on open
//	lock                       flock held by the process that writes
//
// A process killed at any point leaves current pointing at a complete DB,
// old or new: a new DB is written and synced under tmp/, renamed into db/,
// and only then does the symlink swap make it current. Open removes what a
// killed import left behind.
package vulndb
