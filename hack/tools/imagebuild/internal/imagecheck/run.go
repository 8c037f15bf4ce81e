package imagecheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/hack/tools/imagebuild/internal/oci"
)

// runTimeout bounds one run of the image's binary.
const runTimeout = 10 * time.Second

// runBinary writes the image's binary to a temp dir and runs it with args, in
// an empty environment and working directory, within runTimeout.
func runBinary(bin []byte, c oci.Component, args ...string) (int, []byte, error) {
	dir, err := os.MkdirTemp("", "imagecheck-")
	if err != nil {
		return 0, nil, err
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, c.Binary)
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "TMPDIR=" + dir, "GRYPE_CHECK_FOR_APP_UPDATE=false"}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return 0, out, fmt.Errorf("no answer within %s", runTimeout)
	}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode(), out, nil
	}
	return 0, out, err
}

// runHelp runs `<binary> --help`: it must print something and exit with the
// component's usual code.
func runHelp(bin []byte, c oci.Component) error {
	code, out, err := runBinary(bin, c, "--help")
	if err != nil {
		return err
	}
	if code != c.HelpExit {
		return fmt.Errorf("exit %d, want %d:\n%s", code, c.HelpExit, out)
	}
	if len(out) == 0 {
		return errors.New("printed nothing")
	}
	return nil
}

// runVersion runs `<binary> --version`: it must name the version and
// revision the image's labels carry (make stamped them into the binary).
func runVersion(bin []byte, c oci.Component, version, revision string) error {
	code, out, err := runBinary(bin, c, "--version")
	if err != nil {
		return err
	}
	s := string(out)
	if code != 0 || !strings.Contains(s, " "+version+" ") || !strings.Contains(s, "revision "+revision) {
		return fmt.Errorf("exit %d, %q: want version %s and revision %s", code, strings.TrimSpace(s), version, revision)
	}
	return nil
}
