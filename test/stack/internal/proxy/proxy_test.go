package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Requests through the proxy reach both backends in turn; once one is gone
// (its listener closed, as a killed replica's port), every request reaches
// the other; with none left, requests fail instead of hanging.
func TestRoundRobinSkipsDeadBackend(t *testing.T) {
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "a") }))
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "b") }))
	defer a.Close()
	p, err := Start("127.0.0.1:0", []string{strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func() (string, error) {
		// A new connection per request: the proxy balances connections.
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + p.Addr())
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	seen := map[string]int{}
	for range 10 {
		got, err := get()
		if err != nil {
			t.Fatal(err)
		}
		seen[got]++
	}
	if seen["a"] != 5 || seen["b"] != 5 {
		t.Fatalf("10 requests with both backends up: %v, want 5 each", seen)
	}
	b.Close()
	for i := range 6 {
		if got, err := get(); err != nil || got != "a" {
			t.Fatalf("request %d with b gone: %q, %v; want a", i, got, err)
		}
	}
	a.Close()
	if got, err := get(); err == nil {
		t.Fatalf("with no backend left the request succeeded: %q", got)
	}
}
