package dockerconfig

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Secret keys of the two pull-secret types, and the file names a scan Job
// projects them to inside each secret's folder.
const (
	// DockerConfigJSON is the key of a kubernetes.io/dockerconfigjson Secret:
	// a Docker config file, {"auths": {...}}.
	DockerConfigJSON = ".dockerconfigjson"
	// DockerCfg is the key of a legacy kubernetes.io/dockercfg Secret: the
	// bare map of registry to credentials.
	DockerCfg = ".dockercfg"
	// ConfigFile is the name Docker clients read in $DOCKER_CONFIG.
	ConfigFile = "config.json"
)

// Bounds on what is read. A Secret holds at most 1 MiB.
const (
	MaxFileBytes = 1 << 20
	MaxSecrets   = 64
	MaxEntries   = 1024
)

// Entry is one registry's credentials, as Docker config files spell them.
type Entry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	Email         string `json:"email,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// Config is a Docker config file holding only credentials.
type Config struct {
	Auths map[string]Entry `json:"auths"`
}

// Merge reads every secret folder in dir (its sub-folders, in sorted name
// order) and merges their credentials into one Config. In each folder
// .dockerconfigjson is read before .dockercfg; either may be missing. When
// several secrets hold the same registry, the first one wins: registries are
// compared by host, the way Docker clients look them up, so
// "https://r.example/v1/" and "r.example" are the same registry.
func Merge(dir string) (Config, error) {
	names, err := secretFolders(dir)
	if err != nil {
		return Config{}, err
	}
	out := Config{Auths: map[string]Entry{}}
	taken := map[string]bool{}
	for _, name := range names {
		for _, key := range []string{DockerConfigJSON, DockerCfg} {
			path := filepath.Join(dir, name, key)
			auths, err := readFile(path, key == DockerCfg)
			if errors.Is(err, fs.ErrNotExist) {
				continue // the projection is optional: a Secret of the other type
			}
			if err != nil {
				return Config{}, err
			}
			registries := make([]string, 0, len(auths))
			for r := range auths {
				registries = append(registries, r)
			}
			sort.Strings(registries)
			for _, r := range registries {
				host := Host(r)
				if taken[host] {
					continue
				}
				if len(out.Auths) >= MaxEntries {
					return Config{}, fmt.Errorf("%s: more than %d registries in all pull secrets", path, MaxEntries)
				}
				taken[host] = true
				out.Auths[r] = auths[r]
			}
		}
	}
	return out, nil
}

// secretFolders lists dir's sub-folders in sorted order. A projected volume
// links each top-level name to a hidden "..data" folder: names starting with
// a dot are the kubelet's, and links are followed.
func secretFolders(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read pull secrets: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read pull secrets: %w", err)
		}
		if !fi.IsDir() {
			continue
		}
		if len(names) >= MaxSecrets {
			return nil, fmt.Errorf("read pull secrets: more than %d in %s", MaxSecrets, dir)
		}
		names = append(names, e.Name())
	}
	sort.Strings(names) // ReadDir sorts already; the order is the contract
	return names, nil
}

// readFile decodes one projected secret key: a Docker config file, or with
// legacy set the bare registry map of a .dockercfg.
func readFile(path string, legacy bool) (map[string]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileBytes)
	}
	auths, err := decode(data, legacy)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return auths, nil
}

func decode(data []byte, legacy bool) (map[string]Entry, error) {
	var auths map[string]Entry
	if legacy {
		if err := strictUnmarshal(data, &auths); err != nil {
			return nil, fmt.Errorf("not a dockercfg registry map: %w", err)
		}
	} else {
		// Other keys (credHelpers, credsStore, proxies) name programs and
		// settings of the machine the file was made on: only auths is kept.
		var cfg struct {
			Auths map[string]Entry `json:"auths"`
		}
		if err := strictUnmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("not a Docker config: %w", err)
		}
		auths = cfg.Auths
	}
	for r, e := range auths {
		if Host(r) == "" {
			return nil, fmt.Errorf("registry %q: not a registry host", r)
		}
		if err := checkAuth(e.Auth); err != nil {
			return nil, fmt.Errorf("registry %q: %w", r, err)
		}
	}
	return auths, nil
}

// strictUnmarshal decodes exactly one JSON value; unknown fields pass.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// checkAuth applies Docker's own rule: an "auth" Docker clients cannot
// decode makes them reject the whole config file, every registry in it.
func checkAuth(auth string) error {
	if auth == "" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(auth)
	if err != nil {
		return errors.New(`"auth" is not base64`)
	}
	if user, _, ok := strings.Cut(string(b), ":"); !ok || user == "" {
		return errors.New(`"auth" is not base64 of username:password`)
	}
	return nil
}

// Host is the registry host a Docker config key names, compared the way
// Docker clients compare it (the CLI's ConvertToHostname): without scheme
// and path, "https://index.docker.io/v1/" → "index.docker.io".
func Host(key string) string {
	if strings.Contains(key, "://") {
		if u, err := url.Parse(key); err == nil && u.Hostname() != "" {
			return u.Host
		}
	}
	h, _, _ := strings.Cut(key, "/")
	return h
}

// Write writes cfg to path (mode 0600) through a temporary file and a
// rename, so a reader never sees half a file.
func Write(path string, cfg Config) error {
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing left to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
