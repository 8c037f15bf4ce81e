// Package scan is the contract between the operator, which builds scan Jobs,
// the uploader, which runs in them, and results-api, which checks that an
// upload comes from the Job that was scheduled for its digest: the uploader's
// exit codes, the paths inside the scan Pod, the token audience, and the
// labels and annotations that identify a scan Job (DigestHash is the digest
// label's value).
//
// Changing a value here changes what already-running Jobs and other tools
// expect; scan_test.go pins every one of them.
package scan
