// Command uploader is the main container of a Crowsnest scan Job. It reads the
// CycloneDX JSON report Grype wrote to the Job's shared volume, checks that it
// is a CycloneDX BOM, gzips it and PUTs it to results-api for the image
// digest, authenticated with a bearer token read from a file (the projected
// service-account token by default). Connection errors and 5xx responses are
// retried with exponential backoff and full jitter, within a bounded number
// of attempts and a total deadline; 4xx responses are final. The exit code
// tells the operator what happened (see exitcodes.go and docs/uploader.md),
// and every event is one JSON log line on stderr. Standard library only.
package main
