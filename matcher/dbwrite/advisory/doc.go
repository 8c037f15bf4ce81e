// Package advisory holds the vulnerability records that Crowsnest's tiny Grype
// database is built from: a readable table of real public advisories (data.go)
// for the packages in the fixture and demo images, plus clearly synthetic
// records for the large benchmark fixture (synthetic.go).
package advisory
