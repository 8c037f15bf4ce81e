package resultsapitest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support"
)

// EnvBinary names a prebuilt results-api binary to run instead of building
// one (e.g. bin/results-api from `make build-results-api`).
const EnvBinary = "CROWSNEST_RESULTS_API_BIN"

var built struct {
	once sync.Once
	path string
	took time.Duration
	err  error
}

// binary returns the results-api binary: $CROWSNEST_RESULTS_API_BIN, or one
// built once per test process.
func binary() (string, error) {
	built.once.Do(func() {
		if p := os.Getenv(EnvBinary); p != "" {
			if _, err := os.Stat(p); err != nil {
				built.err = fmt.Errorf("%s: %w", EnvBinary, err)
				return
			}
			built.path = p
			return
		}
		start := time.Now()
		built.path, built.err = build()
		built.took = time.Since(start)
	})
	return built.path, built.err
}

// build builds results-api/cmd/results-api as the Makefile's build target
// does (its own module, GOWORK=off, CGO off, -trimpath) into the cache
// hack/tools.sh keeps its tools in, one file per checkout. Test processes of several packages may build at once:
// each writes its own file and renames it into place, which is atomic and
// leaves a running copy alone. The Go build cache makes every build after
// the first a link.
func build() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cacheDir(), "resultsapitest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// One file per checkout: worktrees of other versions build beside it
	// at the same time, and a test must run its own checkout's results-api.
	sum := sha256.Sum256([]byte(root))
	bin := filepath.Join(dir, "results-api-"+hex.EncodeToString(sum[:6]))
	tmp := bin + ".tmp-" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, "./cmd/results-api")
	cmd.Dir = filepath.Join(root, "results-api")
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("build results-api in %s: %w\n%s", cmd.Dir, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return bin, nil
}

// repoRoot is the checkout holding this file, or (when it was compiled
// with -trimpath and has no file path) the one above the working directory.
func repoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..", "..")
		if _, err := os.Stat(filepath.Join(root, "results-api", "cmd", "results-api")); err == nil {
			return filepath.Clean(root), nil
		}
	}
	root, err := support.RepoRoot()
	if err != nil {
		return "", errors.New("resultsapitest: cannot find the checkout to build results-api in; run the tests inside it or set " + EnvBinary)
	}
	return root, nil
}

// cacheDir is hack/tools.sh's cache: $CROWSNEST_CACHE, else crowsnest under
// the user's cache directory.
func cacheDir() string {
	if d := os.Getenv("CROWSNEST_CACHE"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "crowsnest")
}
