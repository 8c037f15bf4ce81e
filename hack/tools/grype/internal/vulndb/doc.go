// Package vulndb writes a Grype v6 vulnerability database from advisory
// records with Grype's own writer (grype/db/v6), so `grype db import` accepts
// it exactly like a published DB.
package vulndb
