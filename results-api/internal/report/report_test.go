package report_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

func TestParseDigest(t *testing.T) {
	good := "sha256:" + strings.Repeat("ab", 32)
	if d, err := report.ParseDigest(good); err != nil || d != good {
		t.Fatalf("ParseDigest(%q) = %q, %v", good, d, err)
	}
	for _, bad := range []string{"", "sha256:", "sha256:" + strings.Repeat("AB", 32), "sha512:" + strings.Repeat("ab", 32),
		"sha256:" + strings.Repeat("ab", 31), good + "0", "sha256:" + strings.Repeat("zz", 32), "SHA256:" + strings.Repeat("ab", 32)} {
		if _, err := report.ParseDigest(bad); !errors.Is(err, report.ErrInvalidDigest) {
			t.Errorf("ParseDigest(%q) err = %v, want ErrInvalidDigest", bad, err)
		}
	}
}

func FuzzParseDigest(f *testing.F) {
	f.Add("sha256:" + strings.Repeat("0", 64))
	f.Add("sha256:" + strings.Repeat("g", 64))
	f.Add("sha256:")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := report.ParseDigest(s)
		if err != nil {
			if !errors.Is(err, report.ErrInvalidDigest) {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		if d != s || len(d) != 71 || !strings.HasPrefix(d, "sha256:") || strings.Trim(d[7:], "0123456789abcdef") != "" {
			t.Fatalf("accepted %q", s)
		}
	})
}

func TestSeverity(t *testing.T) {
	for in, want := range map[string]report.Severity{"none": report.Negligible, "CRITICAL": report.Critical, "info": report.Negligible, "": report.Unknown} {
		if got, ok := report.ParseSeverity(in); !ok || got != want {
			t.Errorf("ParseSeverity(%q) = %v, %v", in, got, ok)
		}
	}
}
