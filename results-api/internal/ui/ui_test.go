package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

func testFS() fstest.MapFS {
	return fstest.MapFS{
		"index.html":         {Data: []byte(`<!doctype html><script type="module" src="/assets/app.js"></script><div id="app"></div>`)},
		"assets/app.js":      {Data: []byte(`console.log(1)`)},
		"assets/app.css":     {Data: []byte(`body{}`)},
		"robots.txt":         {Data: []byte("User-agent: *\n")},
		"assets/nested/x.js": {Data: []byte(`1`)},
	}
}

// TestCSPOnEveryAnswer: the policy is on index.html, the SPA fallback,
// assets, other files and refusals alike, so no UI answer can run inline
// script or be framed.
func TestCSPOnEveryAnswer(t *testing.T) {
	h := Handler(testFS())
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/", 200},
		{http.MethodGet, "/images/sha256:" + strings.Repeat("a", 64), 200},
		{http.MethodGet, "/assets/app.js", 200},
		{http.MethodGet, "/assets/app.css", 200},
		{http.MethodGet, "/robots.txt", 200},
		{http.MethodHead, "/", 200},
		{http.MethodPost, "/", 405},
		{http.MethodGet, "/api/v1/nope", 404},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, rec.Code, tc.status)
		}
		if got := rec.Header().Get("Content-Security-Policy"); got != CSP {
			t.Errorf("%s %s: Content-Security-Policy %q, want %q", tc.method, tc.path, got, CSP)
		}
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: X-Content-Type-Options %q", tc.method, tc.path, got)
		}
	}
}

// TestCSPIsStrict pins each directive: no 'unsafe-inline', no
// 'unsafe-eval', no wildcard, no framing, no <base> rewriting.
func TestCSPIsStrict(t *testing.T) {
	want := map[string]string{
		"default-src":     "'self'",
		"connect-src":     "'self'",
		"img-src":         "'self' data:",
		"style-src":       "'self'",
		"script-src":      "'self'",
		"frame-ancestors": "'none'",
		"base-uri":        "'none'",
		"form-action":     "'self'",
	}
	got := map[string]string{}
	for _, d := range strings.Split(CSP, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		if _, dup := got[name]; dup {
			t.Errorf("directive %s twice", name)
		}
		got[name] = value
	}
	if len(got) != len(want) {
		t.Errorf("directives %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:"} {
		if strings.Contains(CSP, bad) {
			t.Errorf("policy contains %q: %s", bad, CSP)
		}
	}
}

var (
	inlineScript = regexp.MustCompile(`(?is)<script\b[^>]*>\s*[^<\s]`)
	inlineStyle  = regexp.MustCompile(`(?is)<style\b|\sstyle\s*=`)
	eventAttr    = regexp.MustCompile(`(?is)<[a-z][^>]*\son[a-z]+\s*=`)
)

// TestBuildNeedsNoInlineCode checks the embedded build, when there is one
// (make build-web fills dist/), against the policy: index.html has no
// inline script, style element, style attribute or event handler, which
// the policy would block. make test-web builds it and runs this test with
// CROWSNEST_UI_BUILD_REQUIRED=1, where a missing build fails.
func TestBuildNeedsNoInlineCode(t *testing.T) {
	index, err := fs.ReadFile(Embedded(), "index.html")
	if err != nil {
		if os.Getenv("CROWSNEST_UI_BUILD_REQUIRED") != "" {
			t.Fatal("no embedded build, and make test-web built one: ", err)
		}
		t.Skip("no embedded build (make test-web builds one and runs this test): ", err)
	}
	for name, re := range map[string]*regexp.Regexp{"inline script": inlineScript, "inline style": inlineStyle, "event handler attribute": eventAttr} {
		if m := re.Find(index); m != nil {
			t.Errorf("index.html has an %s the CSP blocks: %q", name, m)
		}
	}
	// The patterns themselves catch what they should.
	for _, s := range []string{`<script>alert(1)</script>`, `<div style="x">`, `<style>a{}</style>`, `<img onerror="x">`} {
		if !inlineScript.MatchString(s) && !inlineStyle.MatchString(s) && !eventAttr.MatchString(s) {
			t.Errorf("no pattern matches %s", s)
		}
	}
}
