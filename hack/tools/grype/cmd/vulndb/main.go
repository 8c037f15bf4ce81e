// Command vulndb writes Crowsnest's tiny Grype v6 vulnerability database:
// real public advisories for the packages in the fixture and demo images
// (matcher/dbwrite/advisory), optionally plus synthetic records for
// benchmarks. Import the result with `grype db import DIR/vulnerability.db`.
// With --upstream it also writes the DB the way Grype distributes it
// (DIR/v6/latest.json and the vulnerability-db_v6….tar.zst archive it
// lists), for `matcher serve --upstream-url` or `matcher db import`.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite"
	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// DefaultBuilt is the fixed build time recorded in the DB unless --built says
// otherwise; a fixed value keeps fixture output reproducible.
const DefaultBuilt = "2026-11-01T00:00:00Z"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("vulndb", flag.ContinueOnError)
	out := fs.String("out", "", "directory to write vulnerability.db into (required)")
	synthetic := fs.Int("synthetic", 0, "also write this many synthetic CVE-2099-* advisories (benchmarks only)")
	builtFlag := fs.String("built", DefaultBuilt, "DB build time (RFC 3339); Grype treats the DB as this old")
	upstream := fs.String("upstream", "", "also write a Grype DB upstream (v6/latest.json + archive) into this directory")
	exclude := fs.String("exclude", "", "comma-separated advisory ids (or CVE aliases) to leave out, e.g. to publish them in a later DB (the local stack's demo)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	built, err := time.Parse(time.RFC3339, *builtFlag)
	if err != nil {
		return fmt.Errorf("--built: %w", err)
	}
	advs, err := without(advisory.All(*synthetic), *exclude)
	if err != nil {
		return err
	}
	path, err := dbwrite.Write(*out, advs, built)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d advisories, %d synthetic)\n", path, len(advs), *synthetic)
	if *upstream != "" {
		up, err := dbwrite.WriteUpstream(*upstream, advs, built)
		if err != nil {
			return fmt.Errorf("write upstream: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", up.ListingPath, up.ArchivePath)
	}
	return nil
}

// without drops the advisories whose id or alias is listed in ids
// (comma-separated); an id that matches nothing is an error, so a typo
// cannot silently leave the DB unchanged.
func without(advs []advisory.Advisory, ids string) ([]advisory.Advisory, error) {
	if ids == "" {
		return advs, nil
	}
	drop := map[string]bool{}
	for _, id := range strings.Split(ids, ",") {
		drop[strings.TrimSpace(id)] = false
	}
	out := advs[:0:0]
	for _, a := range advs {
		hit := false
		for _, id := range append([]string{a.ID}, a.Aliases...) {
			if _, ok := drop[id]; ok {
				drop[id], hit = true, true
			}
		}
		if !hit {
			out = append(out, a)
		}
	}
	for id, used := range drop {
		if !used {
			return nil, fmt.Errorf("--exclude: no advisory %q", id)
		}
	}
	return out, nil
}
