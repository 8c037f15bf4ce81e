// Package dbwrite writes Grype v6 vulnerability databases with Grype's own
// writer (grype/db/v6), for tests, the local stack's offline DBs and the
// fixtures: Write turns advisory records (package advisory) into a
// vulnerability.db that `grype db import` accepts like a published DB, and
// WriteArchive, WriteListing and WriteUpstream package it the way Grype's DB
// is distributed (a vulnerability-db_v6.….tar.zst archive and a v6/latest.json
// listing), so a test or the demo can stand up a complete upstream.
//
// It is a library for building DBs, not for serving them: the matcher's DB
// store and server live in matcher/internal.
package dbwrite
