package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type client struct {
	t   *testing.T
	srv *apitest.Server
}

func newClient(t *testing.T, opts ...apitest.Option) *client {
	return &client{t: t, srv: apitest.Start(t, opts...)}
}

// do sends a request and returns the status and body.
func (c *client) do(method, path string, body []byte, hdr ...string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body == nil {
		req.Body = nil
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (c *client) put(digest string, body []byte, hdr ...string) (int, []byte) {
	c.t.Helper()
	h := append([]string{"Authorization", "Bearer " + c.srv.Token, "Content-Type", "application/vnd.cyclonedx+json"}, hdr...)
	return c.do(http.MethodPut, "/api/v1/reports/"+digest+"?image=registry.example/app@"+digest, body, h...)
}

func (c *client) getJSON(path string, into any) {
	c.t.Helper()
	code, b := c.do(http.MethodGet, path, nil)
	if code != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, code, b)
	}
	if err := json.Unmarshal(b, into); err != nil {
		c.t.Fatalf("GET %s: %v in %s", path, err, b)
	}
}

// errorCode extracts error.code from a JSON error body.
func errorCode(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not a JSON error body: %s", b)
	}
	return e.Error.Code
}
