package services

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// GrypeScanEnv is what every scan Pod's Grype gets on top of its Job's
// environment: no update checks of Grype itself and plain-HTTP registries
// on loopback. The DB comes from the Job (GRYPE_DB_UPDATE_URL: the matcher,
// into the Pod's empty cache volume).
func GrypeScanEnv() []string {
	return []string{"GRYPE_CHECK_FOR_APP_UPDATE=false", "GRYPE_REGISTRY_INSECURE_USE_HTTP=true"}
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
