package exception

import (
	"slices"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	mk := func(kind, ns, name string, mutate func(*Exception)) *Exception {
		e := &Exception{Ref: Ref{Kind: kind, Namespace: ns, Name: name}, Created: now.Add(-24 * time.Hour),
			Vulnerabilities: []string{"CVE-1"}, Status: "not_affected", ExpiresAt: now.Add(24 * time.Hour)}
		if mutate != nil {
			mutate(e)
		}
		return e
	}
	set := NewSet([]*Exception{
		mk(KindNamespaced, "a", "all-of-cve-1", nil),
		mk(KindNamespaced, "b", "only-openssl", func(e *Exception) { e.Packages = []string{"pkg:deb/debian/openssl@*"} }),
		mk(KindNamespaced, "c", "only-image", func(e *Exception) { e.Images = []string{"sha256:1"} }),
		mk(KindNamespaced, "d", "expired", func(e *Exception) { e.ExpiresAt = now }),
		mk(KindNamespaced, "e", "too-long", func(e *Exception) { e.ExpiresAt = e.Created.Add(DefaultMaxLifetime + time.Second) }),
		mk(KindNamespaced, "f", "until-fix", func(e *Exception) { e.ExpiredOnFix = true }),
		mk(KindCluster, "", "cve-2", func(e *Exception) { e.Vulnerabilities = []string{"CVE-2"} }),
		mk(KindNamespaced, "g", "exact-purl", func(e *Exception) { e.Packages = []string{"pkg:deb/debian/zlib@1.2"} }),
	}, Policy{MaxLifetime: DefaultMaxLifetime, Now: func() time.Time { return now }})
	openssl := Finding{Digest: "sha256:1", VulnID: "cve-1", PURL: "pkg:deb/debian/openssl@3.0?arch=amd64"}
	zlib := Finding{Digest: "sha256:2", VulnID: "CVE-1", PURL: "pkg:deb/debian/zlib@1.2?arch=amd64"}
	fixed := Finding{Digest: "sha256:2", VulnID: "CVE-1", PURL: "pkg:deb/debian/zlib@1.2", FixedIn: []string{"1.3"}}
	for _, tc := range []struct {
		name   string
		f      Finding
		runsIn []string
		want   string // exception name, "" for active
	}{
		{"own namespace", openssl, []string{"a"}, "all-of-cve-1"},
		{"every namespace of the view has one", openssl, []string{"a", "b"}, "all-of-cve-1"},
		{"one namespace of the view has none", openssl, []string{"a", "z"}, ""},
		{"runs in no namespace of the view", openssl, nil, ""},
		{"package pattern matches", openssl, []string{"b"}, "only-openssl"},
		{"package pattern does not", zlib, []string{"b"}, ""},
		{"exact purl, qualifiers ignored", zlib, []string{"g"}, "exact-purl"},
		{"image matches", openssl, []string{"c"}, "only-image"},
		{"image does not", zlib, []string{"c"}, ""},
		{"expired", openssl, []string{"d"}, ""},
		{"beyond the maximum lifetime", openssl, []string{"e"}, ""},
		{"expiredOnFix without a fix", zlib, []string{"f"}, "until-fix"},
		{"expiredOnFix with a fix", fixed, []string{"f"}, ""},
		{"cluster exception, no namespace", Finding{Digest: "sha256:9", VulnID: "CVE-2"}, nil, "cve-2"},
		{"other id", Finding{Digest: "sha256:1", VulnID: "CVE-3"}, []string{"a"}, ""},
	} {
		got := ""
		if e := set.Decide(tc.f, tc.runsIn); e != nil {
			got = e.Name
		}
		if got != tc.want {
			t.Errorf("%s: decided %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSuppressingVulns: the ids of active exceptions and of imported
// statements that suppress, with their namespace ("" cluster-wide), each
// once; not those of expired exceptions, exceptions past the maximum
// lifetime, or affected statements.
func TestSuppressingVulns(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	mk := func(ns, name string, ids []string, mutate func(*Exception)) *Exception {
		e := &Exception{Ref: Ref{Kind: KindNamespaced, Namespace: ns, Name: name}, Created: now.Add(-time.Hour),
			Vulnerabilities: ids, Status: "not_affected", ExpiresAt: now.Add(time.Hour)}
		if mutate != nil {
			mutate(e)
		}
		return e
	}
	vex := &Provenance{DocumentID: "doc", Timestamp: now}
	set := NewSet([]*Exception{
		mk("a", "active", []string{"CVE-1", "CVE-2"}, nil),
		mk("b", "same-id", []string{"CVE-2"}, nil),
		mk("a", "expired", []string{"CVE-3"}, func(e *Exception) { e.ExpiresAt = now }),
		mk("a", "too-long", []string{"CVE-4"}, func(e *Exception) { e.ExpiresAt = e.Created.Add(DefaultMaxLifetime + time.Second) }),
		mk("a", "vex-fixed", []string{"CVE-5"}, func(e *Exception) { e.Status, e.VEX = "fixed", vex }),
		mk("a", "vex-affected", []string{"CVE-6"}, func(e *Exception) { e.Status, e.VEX = "affected", vex }),
		mk("", "cluster", []string{"CVE-2", "CVE-7"}, func(e *Exception) { e.Kind = KindCluster }),
		mk("a", "again", []string{"CVE-1"}, nil),
	}, Policy{MaxLifetime: DefaultMaxLifetime, Now: func() time.Time { return now }})
	want := []VulnScope{{"", "CVE-2"}, {"", "CVE-7"}, {"a", "CVE-1"}, {"a", "CVE-2"}, {"a", "CVE-5"}, {"b", "CVE-2"}}
	if got := set.SuppressingVulns(); !slices.Equal(got, want) {
		t.Errorf("SuppressingVulns() = %v, want %v", got, want)
	}
	if got := (*Set)(nil).SuppressingVulns(); got != nil {
		t.Errorf("nil set: %v", got)
	}
}
