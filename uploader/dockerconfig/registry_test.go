package dockerconfig_test

import (
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/crowsnest-dev/crowsnest/uploader/dockerconfig"
)

// privateRegistry is an in-memory OCI registry that answers only requests
// with its own basic-auth credentials, and holds one image.
type privateRegistry struct {
	host       string
	user, pass string
	ref        name.Digest
	digest     v1.Hash
}

func startRegistry(t *testing.T, user, pass string) privateRegistry {
	t.Helper()
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="crowsnest-test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	reg := privateRegistry{host: strings.TrimPrefix(srv.URL, "http://"), user: user, pass: pass}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(reg.host + "/team/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithAuth(&authn.Basic{Username: user, Password: pass})); err != nil {
		t.Fatalf("push to %s: %v", reg.host, err)
	}
	if reg.digest, err = img.Digest(); err != nil {
		t.Fatal(err)
	}
	reg.ref = tag.Context().Digest(reg.digest.String())
	return reg
}

// pullWithDockerConfig pulls ref by digest, resolving credentials the way
// Grype does: go-containerregistry's default keychain over $DOCKER_CONFIG.
func pullWithDockerConfig(ref name.Digest) (v1.Hash, error) {
	img, err := remote.Image(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// TestMergedConfigPullsFromTwoPrivateRegistries needs both secrets: one
// registry's credentials are a kubernetes.io/dockerconfigjson Secret, the
// other's a legacy kubernetes.io/dockercfg one, and each registry refuses
// the other's. Merged into one config, both images pull; with one secret
// left out, its registry's pull fails.
func TestMergedConfigPullsFromTwoPrivateRegistries(t *testing.T) {
	r1 := startRegistry(t, "alice", "pw-one")
	r2 := startRegistry(t, "bob", "pw-two")
	auth := func(r privateRegistry) string {
		return base64.StdEncoding.EncodeToString([]byte(r.user + ":" + r.pass))
	}
	secrets := t.TempDir()
	write := func(rel, data string) {
		path := filepath.Join(secrets, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("one/"+dockerconfig.DockerConfigJSON, `{"auths":{"`+r1.host+`":{"auth":"`+auth(r1)+`"}}}`)
	write("two/"+dockerconfig.DockerCfg, `{"http://`+r2.host+`/v1/":{"auth":"`+auth(r2)+`","email":"bob@example"}}`)

	// No ~/.docker/config.json of the machine running the test may answer.
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("REGISTRY_AUTH_FILE", "")

	merge := func(from string) {
		t.Helper()
		cfg, err := dockerconfig.Merge(from)
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		if err := dockerconfig.Write(filepath.Join(out, dockerconfig.ConfigFile), cfg); err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", out)
	}

	merge(secrets)
	for _, r := range []privateRegistry{r1, r2} {
		got, err := pullWithDockerConfig(r.ref)
		if err != nil {
			t.Fatalf("pull %s with the merged config: %v", r.ref, err)
		}
		if got != r.digest {
			t.Errorf("pulled %s, want %s", got, r.digest)
		}
	}

	// Without the second secret, the second registry refuses the pull:
	// each secret is needed.
	if err := os.RemoveAll(filepath.Join(secrets, "two")); err != nil {
		t.Fatal(err)
	}
	merge(secrets)
	if _, err := pullWithDockerConfig(r1.ref); err != nil {
		t.Errorf("pull %s with the first secret only: %v", r1.ref, err)
	}
	if _, err := pullWithDockerConfig(r2.ref); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("pull %s without its secret: err = %v, want UNAUTHORIZED", r2.ref, err)
	}
}
