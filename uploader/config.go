package main

import (
	"github.com/crowsnest-dev/crowsnest/api/scan"

	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultTokenFile is where Kubernetes mounts a projected service-account
// token in the scan Job (audience crowsnest-results-api).
const DefaultTokenFile = scan.TokenFile

// Config is everything the uploader needs; flags fill it, with CROWSNEST_*
// environment variables as defaults.
type Config struct {
	BOMFile     string
	GrypeJSON   string // Grype's JSON report of the same scan; empty: no DB provenance
	APIURL      string
	Digest      string
	Image       string
	TokenFile   string
	Timeout     time.Duration // per attempt
	Deadline    time.Duration // all attempts and waits together
	MaxAttempts int
	MaxBOMBytes int64
	BaseDelay   time.Duration
	MaxDelay    time.Duration
}

var errHelp = flag.ErrHelp

// parseConfig parses args with env (os.Getenv in production) supplying
// defaults. Usage and errors go to out.
func parseConfig(args []string, env func(string) string, out io.Writer) (Config, error) {
	c := Config{}
	fs := flag.NewFlagSet("uploader", flag.ContinueOnError)
	fs.SetOutput(out)
	var errs []error
	str := func(p *string, name, envName, def, usage string) {
		if v := env(envName); v != "" {
			def = v
		}
		fs.StringVar(p, name, def, usage+" (env "+envName+")")
	}
	dur := func(p *time.Duration, name, envName string, def time.Duration, usage string) {
		if v := env(envName); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", envName, err))
			}
			def = d
		}
		fs.DurationVar(p, name, def, usage+" (env "+envName+")")
	}
	num := func(p *int64, name, envName string, def int64, usage string) {
		if v := env(envName); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", envName, err))
			}
			def = n
		}
		fs.Int64Var(p, name, def, usage+" (env "+envName+")")
	}
	var attempts int64
	str(&c.BOMFile, "bom-file", "CROWSNEST_BOM_FILE", "", "path of the CycloneDX JSON report Grype wrote (required)")
	str(&c.GrypeJSON, "grype-json", "CROWSNEST_GRYPE_JSON", "", "path of Grype's JSON report of the same scan (-o json=FILE): the DB build and schema it names are sent with the report; unreadable, the report is sent without them")
	str(&c.APIURL, "api-url", "CROWSNEST_API_URL", "", "results-api base URL, e.g. http://crowsnest-results-api:8080 (required)")
	str(&c.Digest, "digest", "CROWSNEST_DIGEST", "", "image digest the report belongs to, sha256:<64 hex> (required)")
	str(&c.Image, "image", "CROWSNEST_IMAGE", "", "image reference repo@sha256:... sent along with the report")
	str(&c.TokenFile, "token-file", "CROWSNEST_TOKEN_FILE", DefaultTokenFile, "file holding the bearer token (a projected service-account token)")
	dur(&c.Timeout, "timeout", "CROWSNEST_TIMEOUT", 30*time.Second, "timeout of one upload attempt")
	dur(&c.Deadline, "deadline", "CROWSNEST_DEADLINE", 5*time.Minute, "total time for all attempts and backoff waits")
	num(&attempts, "max-attempts", "CROWSNEST_MAX_ATTEMPTS", 8, "maximum upload attempts (retries happen on connection errors and 5xx only)")
	num(&c.MaxBOMBytes, "max-bom-bytes", "CROWSNEST_MAX_BOM_BYTES", 32<<20, "largest report accepted, in bytes (results-api's default limit)")
	dur(&c.BaseDelay, "backoff-base", "CROWSNEST_BACKOFF_BASE", 500*time.Millisecond, "first backoff cap; doubles per attempt, full jitter")
	dur(&c.MaxDelay, "backoff-max", "CROWSNEST_BACKOFF_MAX", 30*time.Second, "largest backoff wait")
	fs.Usage = func() {
		fmt.Fprint(out, usageHeader)
		fs.PrintDefaults()
		fmt.Fprint(out, usageExitCodes)
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.MaxAttempts = int(attempts)
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " ")))
	}
	errs = append(errs, c.validate()...)
	return c, errors.Join(errs...)
}

func (c Config) validate() []error {
	var errs []error
	for name, v := range map[string]string{"--bom-file": c.BOMFile, "--api-url": c.APIURL, "--digest": c.Digest, "--token-file": c.TokenFile} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	if c.APIURL != "" {
		u, err := url.Parse(c.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--api-url %q: want http(s)://host[:port][/prefix]", c.APIURL))
		}
	}
	if c.Timeout <= 0 || c.Deadline <= 0 || c.BaseDelay <= 0 || c.MaxDelay < c.BaseDelay {
		errs = append(errs, errors.New("--timeout, --deadline and --backoff-base must be > 0 and --backoff-max >= --backoff-base"))
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 100 {
		errs = append(errs, errors.New("--max-attempts must be between 1 and 100"))
	}
	if c.MaxBOMBytes < 1 {
		errs = append(errs, errors.New("--max-bom-bytes must be > 0"))
	}
	return errs
}

const usageHeader = `Usage: uploader [flags]
       uploader docker-config --from DIR --out FILE   (merge pull secrets; see its --help)
       uploader probe URL...                          (readiness check for helm test; see its --help)
       uploader --version                             (print the version and exit)

Uploads the CycloneDX JSON report Grype wrote to Crowsnest's results-api:
PUT {api-url}/api/v1/reports/{digest}?image={image}, gzip-compressed, with
"Authorization: Bearer <token from --token-file>" and, with --grype-json, the
Grype DB the scan matched against (X-Crowsnest-DB-Built, X-Crowsnest-DB-Schema
from the JSON report's descriptor.db.status). Connection errors and 5xx
answers are retried with exponential backoff and full jitter until
--max-attempts or --deadline; 4xx answers are final. Logs are JSON lines on
stderr; the token and the report body are never logged.

Flags (each defaults to its CROWSNEST_* environment variable when set):
`

const usageExitCodes = `
Exit codes:
  0  report stored (201 created or 200 replaced)
  1  unexpected internal error
  2  usage: bad flags or environment
  3  report invalid: missing, unreadable, larger than --max-bom-bytes, or not CycloneDX JSON
  4  rejected by results-api (4xx: missing/wrong token, bad digest, bad or oversized BOM)
  5  results-api unreachable or failing (5xx) until --max-attempts or --deadline ran out
  6  token file missing, unreadable or empty
`
