package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SignedAttributes are the CloudEvents attributes a binary-mode request
// carries as ce-* headers, in the order the v2 signature covers them.
var SignedAttributes = []string{"specversion", "id", "source", "type", "subject", "time"}

// ErrSignature is returned by Verify and VerifyRequest for a missing,
// malformed, wrong or stale signature.
var ErrSignature = errors.New("bad signature")

// Sign returns the signature header value of a structured-mode request
// (the whole event is the body) at time t: "t=<unix>,v1=<hex>", the MAC of
// "<t>.<body>".
func Sign(key []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(key, ts+"."+string(body)))
}

// SignBinary returns the signature header value of a binary-mode request
// at time t: "t=<unix>,v2=<hex>", the MAC of binaryPayload — the event's
// attributes from the ce-* headers in h and the body. Signing the body
// alone (v1) left ce-id and ce-time outside the signature: a captured
// request replayed with a new ce-id passed a receiver's deduplication.
func SignBinary(key []byte, t time.Time, h http.Header, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v2=" + hex.EncodeToString(mac(key, binaryPayload(ts, h, body)))
}

// binaryPayload is the string a v2 signature covers:
//
//	"v2\n<t>\n<ce-specversion>\n<ce-id>\n<ce-source>\n<ce-type>\n<ce-subject>\n<ce-time>\n<body>"
//
// Header values cannot hold a line feed, so the fields cannot run into
// each other.
func binaryPayload(ts string, h http.Header, body []byte) string {
	var b strings.Builder
	b.WriteString("v2\n" + ts + "\n")
	for _, a := range SignedAttributes {
		b.WriteString(h.Get("ce-" + a))
		b.WriteByte('\n')
	}
	b.Write(body)
	return b.String()
}

func mac(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Verify checks a structured-mode (v1) signature header against body: the
// MAC must match (compared in constant time) and its time must be within
// tolerance of now, so a captured request cannot be replayed later.
func Verify(key []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	sig, err := parseSignature(header, now, tolerance)
	if err != nil {
		return err
	}
	return sig.check("v1", mac(key, sig.ts+"."+string(body)))
}

// VerifyRequest checks the signature of a request the notifier sent, in
// either mode: a binary-mode request (it has a ce-id header) must carry a
// v2 signature over its ce-* headers and body, a structured one a v1
// signature over its body. A binary-mode request with only a v1 signature
// is refused: its attributes would not be covered.
func VerifyRequest(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	sig, err := parseSignature(h.Get(SignatureHeader), now, tolerance)
	if err != nil {
		return err
	}
	if h.Get("ce-id") != "" {
		return sig.check("v2", mac(key, binaryPayload(sig.ts, h, body)))
	}
	return sig.check("v1", mac(key, sig.ts+"."+string(body)))
}

// signature is a parsed signature header.
type signature struct {
	ts   string
	macs map[string]string // scheme ("v1", "v2") -> hex
}

func parseSignature(header string, now time.Time, tolerance time.Duration) (signature, error) {
	sig := signature{macs: map[string]string{}}
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			sig.ts = v
		case "v1", "v2":
			sig.macs[k] = v
		}
	}
	sec, err := strconv.ParseInt(sig.ts, 10, 64)
	if err != nil || len(sig.macs) == 0 {
		return sig, fmt.Errorf("%w: want t=<unix>,v1=<hex> or t=<unix>,v2=<hex>", ErrSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return sig, fmt.Errorf("%w: signed %s from now", ErrSignature, d.Round(time.Second))
	}
	return sig, nil
}

// check compares the MAC of scheme with want in constant time.
func (s signature) check(scheme string, want []byte) error {
	got, ok := s.macs[scheme]
	if !ok {
		return fmt.Errorf("%w: no %s signature", ErrSignature, scheme)
	}
	if !hmac.Equal([]byte(got), []byte(hex.EncodeToString(want))) {
		return fmt.Errorf("%w: mac mismatch", ErrSignature)
	}
	return nil
}
