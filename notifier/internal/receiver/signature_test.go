package receiver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// TestBinaryModeSignatureCoversAttributes plays an attacker who captured a
// signed binary-mode webhook request: the event's id and time travel as
// ce-id and ce-time headers. Replayed within the tolerance with a fresh
// ce-id (so the receiver's deduplication by id lets it through) or another
// ce-time or ce-type, it must fail verification; so must the request with
// its signature rewritten to the body-only v1 form. The genuine request
// passes.
func TestBinaryModeSignatureCoversAttributes(t *testing.T) {
	key := []byte("s3cret-key")
	now := time.Unix(1_800_000_000, 0)
	w := &webhook{url: "http://receiver.example/hook", mode: "binary", key: key, now: func() time.Time { return now }}
	g := &state.Group{ID: "g1", Route: "prod", Due: now, Items: []state.Item{
		{Kind: config.KindNew, Namespace: "a", Digest: "sha256:aa", Image: "r/app@sha256:aa",
			Findings: []state.Finding{{ID: "CVE-1", Severity: "critical"}}}}}
	req, err := w.request(context.Background(), g, "")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("ce-id") != "g1" || !strings.Contains(req.Header.Get(SignatureHeader), ",v2=") {
		t.Fatalf("binary request headers %v", req.Header)
	}
	at := now.Add(5 * time.Second)
	if err := VerifyRequest(key, req.Header, body, at, time.Minute); err != nil {
		t.Fatalf("genuine request refused: %v", err)
	}
	for name, change := range map[string]func(h http.Header){
		"new ce-id":      func(h http.Header) { h.Set("ce-id", "g2") },
		"other ce-time":  func(h http.Header) { h.Set("ce-time", now.Add(time.Hour).Format(time.RFC3339Nano)) },
		"other ce-type":  func(h http.Header) { h.Set("ce-type", "dev.crowsnest.other.v1") },
		"no ce-subject":  func(h http.Header) { h.Del("ce-subject") },
		"body-only v1":   func(h http.Header) { h.Set(SignatureHeader, Sign(key, now, body)) },
		"v1 next to v2":  func(h http.Header) { h.Set(SignatureHeader, Sign(key, now, body)+",v2="+strings.Repeat("0", 64)) },
		"v2 of the body": func(h http.Header) { h.Set(SignatureHeader, SignBinary(key, now, http.Header{}, body)) },
	} {
		t.Run(name, func(t *testing.T) {
			h := req.Header.Clone()
			change(h)
			if err := VerifyRequest(key, h, body, at, time.Minute); !errors.Is(err, ErrSignature) {
				t.Fatalf("replay accepted (err %v)", err)
			}
		})
	}
}

// TestStructuredModeSignature: a structured-mode request (the whole event is
// the body) keeps the v1 signature, which VerifyRequest and Verify accept.
func TestStructuredModeSignature(t *testing.T) {
	key := []byte("s3cret-key")
	now := time.Unix(1_800_000_000, 0)
	w := &webhook{url: "http://receiver.example/hook", mode: "structured", key: key, now: func() time.Time { return now }}
	req, err := w.request(context.Background(), &state.Group{ID: "g1", Route: "prod", Due: now}, "")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	if err := VerifyRequest(key, req.Header, body, now, time.Minute); err != nil {
		t.Fatalf("VerifyRequest: %v", err)
	}
	if err := Verify(key, req.Header.Get(SignatureHeader), body, now, time.Minute); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	tampered := []byte(strings.Replace(string(body), `"id":"g1"`, `"id":"g2"`, 1))
	if err := VerifyRequest(key, req.Header, tampered, now, time.Minute); !errors.Is(err, ErrSignature) {
		t.Fatalf("structured event with a new id accepted: %v", err)
	}
}
