package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/crowsnest-dev/crowsnest/api/scan"

	"github.com/crowsnest-dev/crowsnest/uploader/dockerconfig"
)

// dockerConfigCommand is the subcommand of the scan Job's init container
// that merges the projected pull secrets into one Docker config for Grype.
const dockerConfigCommand = "docker-config"

// runDockerConfig merges every secret folder under --from into --out and
// returns the process exit code: 0, 2 for bad flags, 1 for a malformed or
// unreadable secret (the message names the file).
func runDockerConfig(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("uploader "+dockerConfigCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "folder holding one sub-folder per pull secret, each with .dockerconfigjson and/or .dockercfg (required)")
	out := fs.String("out", "", "Docker config file to write, e.g. $DOCKER_CONFIG/config.json (required)")
	fs.Usage = func() {
		fmt.Fprint(stderr, dockerConfigUsage)
		fs.PrintDefaults()
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return scan.ExitOK
		}
		return scan.ExitUsage
	}
	if *from == "" || *out == "" || fs.NArg() > 0 {
		log.Error("invalid configuration", "error", "--from and --out are required, and nothing else", "exit_code", scan.ExitUsage)
		return scan.ExitUsage
	}
	cfg, err := dockerconfig.Merge(*from)
	if err != nil {
		log.Error("pull secrets invalid", "error", err.Error(), "exit_code", scan.ExitFailure)
		return scan.ExitFailure
	}
	if err := dockerconfig.Write(*out, cfg); err != nil {
		log.Error("write docker config", "error", err.Error(), "exit_code", scan.ExitFailure)
		return scan.ExitFailure
	}
	// Registry names only: never the credentials.
	registries := make([]string, 0, len(cfg.Auths))
	for r := range cfg.Auths {
		registries = append(registries, r)
	}
	log.Info("docker config written", "out", filepath.Clean(*out), "registries", registries)
	return scan.ExitOK
}

const dockerConfigUsage = `Usage: uploader docker-config --from DIR --out FILE

Merges the pull secrets a scan Job projects under --from (one folder per
Secret, in sorted order; .dockerconfigjson and the legacy .dockercfg) into one
Docker config file {"auths": {...}} for Grype. On a registry held by several
secrets the first secret wins. A missing key is fine; a malformed one is an
error naming its file (exit 1).

Flags:
`
