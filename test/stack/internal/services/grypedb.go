package services

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// GrypeEnv is the environment every Grype run in the stack gets: no update
// checks, no DB downloads, plain-HTTP registries on loopback.
func GrypeEnv(dbDir string) []string {
	return []string{
		"GRYPE_DB_CACHE_DIR=" + dbDir,
		"GRYPE_DB_AUTO_UPDATE=false",
		"GRYPE_DB_VALIDATE_AGE=false",
		"GRYPE_CHECK_FOR_APP_UPDATE=false",
		"GRYPE_REGISTRY_INSECURE_USE_HTTP=true",
	}
}

// PrepareGrypeDB fills dbDir with Grype's vulnerability DB once: offline, the
// project's tiny DB written by vulndb (real advisories for the demo images)
// and imported with `grype db import`; online, Grype's published DB
// (`grype db update`). Scans then never download anything.
func PrepareGrypeDB(ctx context.Context, grype, vulndb, dbDir string, online bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	env := append(os.Environ(), GrypeEnv(dbDir)...)
	if online {
		env = append(env, "GRYPE_DB_AUTO_UPDATE=true")
		return runTool(ctx, env, grype, "db", "update")
	}
	tmp, err := os.MkdirTemp("", "crowsnest-vulndb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := runTool(ctx, os.Environ(), vulndb, "--out", tmp); err != nil {
		return err
	}
	return runTool(ctx, env, grype, "db", "import", filepath.Join(tmp, "vulnerability.db"))
}

func runTool(ctx context.Context, env []string, bin string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return nil
}
