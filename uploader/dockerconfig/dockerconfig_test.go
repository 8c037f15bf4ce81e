package dockerconfig

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// layout writes files relative to a new folder, as the kubelet projects
// the pull secrets (secret/key → contents).
func layout(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, data := range files {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestMerge(t *testing.T) {
	a, b := basic("alice", "pw-a"), basic("bob", "pw-b")
	tests := []struct {
		name    string
		files   map[string]string
		want    map[string]string // registry key → auth
		wantErr string            // part of the error; "" for none
	}{
		{name: "no secrets", files: map[string]string{}, want: map[string]string{}},
		{name: "missing keys are fine", files: map[string]string{"a/unrelated": "x"}, want: map[string]string{}},
		{
			name:  "dockerconfigjson",
			files: map[string]string{"a/.dockerconfigjson": `{"auths":{"r1.example":{"auth":"` + a + `"}},"credsStore":"desktop"}`},
			want:  map[string]string{"r1.example": a},
		},
		{
			name:  "legacy dockercfg is the bare map",
			files: map[string]string{"a/.dockercfg": `{"r1.example":{"auth":"` + a + `","email":"a@example"}}`},
			want:  map[string]string{"r1.example": a},
		},
		{
			name: "two secrets, two registries",
			files: map[string]string{
				"a/.dockerconfigjson": `{"auths":{"r1.example":{"auth":"` + a + `"}}}`,
				"b/.dockercfg":        `{"r2.example:5000":{"auth":"` + b + `"}}`,
			},
			want: map[string]string{"r1.example": a, "r2.example:5000": b},
		},
		{
			name: "first secret in sorted order wins",
			files: map[string]string{
				"b-second/.dockerconfigjson": `{"auths":{"r1.example":{"auth":"` + b + `"}}}`,
				"a-first/.dockerconfigjson":  `{"auths":{"r1.example":{"auth":"` + a + `"}}}`,
			},
			want: map[string]string{"r1.example": a},
		},
		{
			name: "same host in another spelling is the same registry",
			files: map[string]string{
				"a/.dockercfg":        `{"https://index.docker.io/v1/":{"auth":"` + a + `"}}`,
				"b/.dockerconfigjson": `{"auths":{"index.docker.io":{"auth":"` + b + `"}}}`,
			},
			want: map[string]string{"https://index.docker.io/v1/": a},
		},
		{
			name: "in one secret dockerconfigjson wins over dockercfg",
			files: map[string]string{
				"a/.dockercfg":        `{"r1.example":{"auth":"` + b + `"}}`,
				"a/.dockerconfigjson": `{"auths":{"r1.example":{"auth":"` + a + `"}}}`,
			},
			want: map[string]string{"r1.example": a},
		},
		{
			name:  "username and password without auth",
			files: map[string]string{"a/.dockerconfigjson": `{"auths":{"r1.example":{"username":"alice","password":"pw-a"}}}`},
			want:  map[string]string{"r1.example": ""},
		},
		{name: "not JSON", files: map[string]string{"bad/.dockerconfigjson": `{"auths":`}, wantErr: "bad/.dockerconfigjson: not a Docker config"},
		{name: "dockercfg not a map", files: map[string]string{"bad/.dockercfg": `["r1"]`}, wantErr: "bad/.dockercfg: not a dockercfg registry map"},
		{name: "trailing data", files: map[string]string{"bad/.dockerconfigjson": `{"auths":{}} {}`}, wantErr: "data after the JSON value"},
		{name: "auth not base64", files: map[string]string{"bad/.dockerconfigjson": `{"auths":{"r1":{"auth":"%%%"}}}`}, wantErr: `bad/.dockerconfigjson: registry "r1": "auth" is not base64`},
		{name: "auth without colon", files: map[string]string{"bad/.dockercfg": `{"r1":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("alice")) + `"}}`}, wantErr: "username:password"},
		{name: "empty registry", files: map[string]string{"bad/.dockercfg": `{"":{"auth":"` + a + `"}}`}, wantErr: "not a registry host"},
		{name: "too large", files: map[string]string{"big/.dockerconfigjson": `{"auths":{}}` + strings.Repeat(" ", MaxFileBytes)}, wantErr: "big/.dockerconfigjson: larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Merge(layout(t, tt.files))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for r, e := range cfg.Auths {
				got[r] = e.Auth
			}
			if len(got) != len(tt.want) {
				t.Fatalf("registries %v, want %v", got, tt.want)
			}
			for r, auth := range tt.want {
				if g, ok := got[r]; !ok || g != auth {
					t.Errorf("registry %s: auth %q (present %v), want %q", r, g, ok, auth)
				}
			}
		})
	}
}

// TestMergeProjectedLayout reads a folder laid out as the kubelet writes a
// projected volume: the visible names are links into a hidden "..data"
// folder, next to which a timestamped folder lives.
func TestMergeProjectedLayout(t *testing.T) {
	dir := layout(t, map[string]string{
		"..2026_11_23_10_00_00.1/regcred/.dockerconfigjson": `{"auths":{"r1.example":{"auth":"` + basic("alice", "pw") + `"}}}`,
	})
	if err := os.Symlink("..2026_11_23_10_00_00.1", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "regcred"), filepath.Join(dir, "regcred")); err != nil {
		t.Fatal(err)
	}
	cfg, err := Merge(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Auths["r1.example"]; !ok || len(cfg.Auths) != 1 {
		t.Errorf("auths %v, want r1.example only", cfg.Auths)
	}
}

func TestMergeBoundsSecrets(t *testing.T) {
	files := map[string]string{}
	for i := range MaxSecrets + 1 {
		files[filepath.Join("s"+string(rune('a'+i/26))+string(rune('a'+i%26)), DockerCfg)] = `{}`
	}
	if _, err := Merge(layout(t, files)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("err = %v, want the bound on secrets", err)
	}
}

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), ConfigFile)
	want := Config{Auths: map[string]Entry{"r1.example": {Auth: basic("alice", "pw")}}}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	var got Config
	if err := json.Unmarshal(data, &got); err != nil || got.Auths["r1.example"] != want.Auths["r1.example"] {
		t.Errorf("wrote %s (%v)", data, err)
	}
	// An empty merge is still a valid config: Grype pulls anonymously.
	if err := Write(path, Config{Auths: map[string]Entry{}}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != `{"auths":{}}` {
		t.Errorf("empty config %s", data)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
