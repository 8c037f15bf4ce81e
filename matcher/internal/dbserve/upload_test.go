package dbserve

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const adminToken = "s3cret-admin-token"

func adminOnly(_ context.Context, token string) error {
	switch token {
	case adminToken:
		return nil
	case "reader-token":
		return ErrForbidden
	case "outage":
		return errors.New("tokenreview: connection refused")
	default:
		return ErrUnauthenticated
	}
}

func post(t *testing.T, url, token string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestImportUpload plays the caller and the attacker: only the admin token
// imports; every refusal leaves the active DB as it was.
func TestImportUpload(t *testing.T) {
	store := newStore(t)
	h := &ImportHandler{Store: store, Auth: AuthorizerFunc(adminOnly), MaxBytes: 1 << 20}
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := srv.URL + ImportPath
	first, _ := os.ReadFile(writeUpstream(t, t1).ArchivePath)
	second, _ := os.ReadFile(writeUpstream(t, t2).ArchivePath)

	for _, tc := range []struct {
		token string
		want  int
	}{{"", 401}, {"wrong", 401}, {"reader-token", 403}, {"outage", 503}} {
		if r := post(t, url, tc.token, first); r.StatusCode != tc.want {
			t.Errorf("token %q: %s, want %d", tc.token, r.Status, tc.want)
		}
	}
	if _, ok := store.Active(); ok {
		t.Fatal("an unauthorized upload activated a DB")
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, ImportPath, bytes.NewReader(first))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	(&ImportHandler{Store: store}).ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("no Authorizer: %d, want 401 (fail closed)", rec.Code)
	}

	resp := post(t, url, adminToken, second)
	got := decode[ImportResponse](t, resp.Body)
	if resp.StatusCode != http.StatusOK || !got.Activated || !got.DB.Built.Equal(t2) || got.DB.Source != "upload" {
		t.Fatalf("upload: %s %+v", resp.Status, got)
	}
	if !strings.HasPrefix(got.DB.Archive, "vulnerability-db_v6.") || !strings.HasSuffix(got.DB.Archive, ".tar.zst") {
		t.Fatalf("uploaded archive kept as %q, want Grype's naming", got.DB.Archive)
	}
	if r := post(t, url, adminToken, second); r.StatusCode != http.StatusOK || decode[ImportResponse](t, r.Body).Activated {
		t.Fatalf("same upload again: %s", r.Status)
	}
	for _, tc := range []struct {
		name  string
		query string
		body  []byte
		want  int
	}{
		{"older build", "", first, http.StatusConflict},
		{"garbage", "", []byte("garbage"), http.StatusUnprocessableEntity},
		{"truncated", "", first[:len(first)/2], http.StatusUnprocessableEntity},
		{"checksum mismatch", "?checksum=sha256:" + strings.Repeat("0", 64), first, http.StatusUnprocessableEntity},
		{"over the cap", "", bytes.Repeat([]byte{0}, 2<<20), http.StatusRequestEntityTooLarge},
	} {
		r := post(t, url+tc.query, adminToken, tc.body)
		if r.StatusCode != tc.want {
			t.Errorf("%s: %s, want %d", tc.name, r.Status, tc.want)
		}
		if act, _ := store.Active(); act.ID != got.DB.ID {
			t.Fatalf("%s: active DB changed to %s", tc.name, act.ID)
		}
	}
	if r := post(t, url+"?force=true", adminToken, first); r.StatusCode != http.StatusOK {
		t.Fatalf("forced rollback: %s", r.Status)
	}
	if act, _ := store.Active(); !act.Built.Equal(t1) {
		t.Fatalf("after forced rollback active built %s", act.Built)
	}
	if entries, _ := os.ReadDir(filepath.Join(store.Dir(), "tmp")); len(entries) != 0 {
		t.Fatalf("uploads left in tmp/: %d", len(entries))
	}
}
