package advisory

// Real lists real public advisories, transcribed from the public records
// named by each URL (NVD, the Debian security tracker, Alpine secdb, the
// GitHub Advisory Database). Descriptions are short summaries. Distro fix
// revisions follow the distro trackers; see docs/fixtures.md for the caveats.
var Real = concat(nvd, alpine, debian, golang, npm)

// CVSS v3.1 vectors used more than once.
const (
	netHighA  = "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H" // 7.5
	netLowA   = "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:L" // 5.3
	localHigh = "CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H" // 7.8
	localUIA  = "CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:H" // 5.5
	netAll    = "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H" // 9.8
)

// nvd carries NVD's CVSS for the CVEs that distro records point at; Grype
// shows them as related vulnerabilities and the DB build copies their
// severity into distro records that have none (as grype-db does).
var nvd = []Advisory{
	nvdRec("CVE-2023-42363", "medium", localUIA, "BusyBox awk: use-after-free in xasprintf."),
	nvdRec("CVE-2023-42364", "medium", localUIA, "BusyBox awk: use-after-free in evaluate()."),
	nvdRec("CVE-2023-42365", "medium", localUIA, "BusyBox awk: use-after-free via a crafted awk pattern in copyvar."),
	nvdRec("CVE-2023-42366", "medium", localUIA, "BusyBox awk: heap-buffer-overflow in next_token."),
	nvdRec("CVE-2023-2975", "medium", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:L/A:N", "OpenSSL AES-SIV ignores empty associated data entries."),
	nvdRec("CVE-2023-3446", "medium", netLowA, "OpenSSL: excessive time spent checking DH keys and parameters (large modulus)."),
	nvdRec("CVE-2023-3817", "medium", netLowA, "OpenSSL: excessive time spent checking DH q parameter value."),
	nvdRec("CVE-2023-5363", "high", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N", "OpenSSL: incorrect cipher key and IV length processing."),
	nvdRec("CVE-2023-5678", "medium", netLowA, "OpenSSL: excessive time spent in DH key generation and check."),
	nvdRec("CVE-2024-0727", "medium", localUIA, "OpenSSL: NULL dereference when processing a malformed PKCS12 file."),
	nvdRec("CVE-2024-5535", "critical", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:H", "OpenSSL: SSL_select_next_proto buffer overread."),
	nvdRec("CVE-2023-45853", "critical", netAll, "zlib MiniZip: integer overflow and heap overflow in zipOpenNewFileInZip4_64."),
	nvdRec("CVE-2023-4911", "high", localHigh, "glibc ld.so: buffer overflow via GLIBC_TUNABLES (Looney Tunables)."),
	nvdRec("CVE-2023-6246", "high", localHigh, "glibc: heap-based buffer overflow in __vsyslog_internal."),
	nvdRec("CVE-2019-1010022", "critical", netAll, "glibc: stack guard protection bypass (disputed upstream)."),
}

var alpine = []Advisory{
	distro(Alpine318, "CVE-2023-42363", "", "busybox", "1.36.1-r6"),
	distro(Alpine318, "CVE-2023-42364", "", "busybox", "1.36.1-r7"),
	distro(Alpine318, "CVE-2023-42365", "", "busybox", "1.36.1-r7"),
	distro(Alpine318, "CVE-2023-42366", "", "busybox", "1.36.1-r6"),
	distro(Alpine318, "CVE-2023-2975", "", "openssl", "3.1.1-r2"),
	distro(Alpine318, "CVE-2023-3446", "", "openssl", "3.1.1-r3"),
	distro(Alpine318, "CVE-2023-3817", "", "openssl", "3.1.2-r0"),
	distro(Alpine318, "CVE-2023-5363", "", "openssl", "3.1.4-r0"),
	distro(Alpine318, "CVE-2023-5678", "", "openssl", "3.1.4-r1"),
	distro(Alpine318, "CVE-2024-0727", "", "openssl", "3.1.4-r5"),
	distro(Alpine318, "CVE-2024-5535", "", "openssl", "3.1.6-r0"),
}

var debian = []Advisory{
	distro(Bookworm12, "CVE-2023-2975", "", "openssl", "3.0.10-1~deb12u1"),
	distro(Bookworm12, "CVE-2023-3446", "", "openssl", "3.0.10-1~deb12u1"),
	distro(Bookworm12, "CVE-2023-3817", "", "openssl", "3.0.10-1~deb12u1"),
	distro(Bookworm12, "CVE-2023-5363", "", "openssl", "3.0.11-1~deb12u2"),
	distro(Bookworm12, "CVE-2023-5678", "", "openssl", "3.0.13-1~deb12u1"),
	distro(Bookworm12, "CVE-2024-0727", "", "openssl", "3.0.13-1~deb12u1"),
	distro(Bookworm12, "CVE-2024-5535", "", "openssl", "3.0.14-1~deb12u1"),
	distro(Bookworm12, "CVE-2023-45853", "", "zlib", ""),
	distro(Bookworm12, "CVE-2023-4911", "high", "glibc", "2.36-9+deb12u3"),
	distro(Bookworm12, "CVE-2023-6246", "", "glibc", "2.36-9+deb12u4"),
	wontFix(distro(Bookworm12, "CVE-2010-4756", "negligible", "glibc", "")),
	wontFix(distro(Bookworm12, "CVE-2019-1010022", "negligible", "glibc", "")),
}

var golang = []Advisory{
	ghsa("GHSA-4374-p667-p6c8", "CVE-2023-39325", "high", netHighA,
		"HTTP/2 rapid reset can cause excessive work in net/http", EcosystemGo, "golang.org/x/net", "<0.17.0", "0.17.0"),
	ghsa("GHSA-4v7x-pqxf-cx7m", "CVE-2023-45288", "medium", netLowA,
		"net/http, x/net/http2: close connections when receiving too many headers", EcosystemGo, "golang.org/x/net", "<0.23.0", "0.23.0"),
	ghsa("GHSA-w32m-9786-jp63", "CVE-2024-45338", "medium", netLowA,
		"Non-linear parsing of case-insensitive content in golang.org/x/net/html", EcosystemGo, "golang.org/x/net", "<0.33.0", "0.33.0"),
	ghsa("GHSA-45x7-px36-x8w8", "CVE-2023-48795", "medium", "CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:N/I:H/A:N",
		"Prefix Truncation Attack against ChaCha20-Poly1305 and Encrypt-then-MAC aka Terrapin", EcosystemGo, "golang.org/x/crypto", "<0.17.0", "0.17.0"),
	ghsa("GHSA-v778-237x-gjrc", "CVE-2024-45337", "critical", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:N",
		"Misuse of ServerConfig.PublicKeyCallback may cause authorization bypass in golang.org/x/crypto", EcosystemGo, "golang.org/x/crypto", "<0.31.0", "0.31.0"),
	ghsa("GHSA-hcg3-q754-cr77", "CVE-2025-22869", "high", netHighA,
		"golang.org/x/crypto Vulnerable to Denial of Service (DoS) via Slow or Incomplete Key Exchange", EcosystemGo, "golang.org/x/crypto", "<0.35.0", "0.35.0"),
}

var npm = []Advisory{
	ghsa("GHSA-p6mc-m468-83gw", "CVE-2020-8203", "high", "CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:N/I:H/A:H",
		"Prototype Pollution in lodash", EcosystemNpm, "lodash", ">=3.7.0, <4.17.19", "4.17.19"),
	ghsa("GHSA-35jh-r3h4-6jhm", "CVE-2021-23337", "high", "CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:H/I:H/A:H",
		"Command Injection in lodash", EcosystemNpm, "lodash", "<4.17.21", "4.17.21"),
	ghsa("GHSA-29mw-wpgm-hmr9", "CVE-2020-28500", "medium", netLowA,
		"Regular Expression Denial of Service (ReDoS) in lodash", EcosystemNpm, "lodash", ">=4.0.0, <4.17.21", "4.17.21"),
	ghsa("GHSA-xvch-5gv4-984h", "CVE-2021-44906", "critical", netAll,
		"Prototype Pollution in minimist", EcosystemNpm, "minimist", ">=1.0.0, <1.2.6", "1.2.6"),
	// Does not affect minimist 1.2.5: keeps a non-matching range in the DB.
	ghsa("GHSA-vh95-rmgr-6w4m", "CVE-2020-7598", "medium", "CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:L/I:L/A:L",
		"Prototype Pollution in minimist", EcosystemNpm, "minimist", ">=1.0.0, <1.2.3", "1.2.3"),
	ghsa("GHSA-c2qf-rxjj-qqgw", "CVE-2022-25883", "high", netHighA,
		"semver vulnerable to Regular Expression Denial of Service", EcosystemNpm, "semver", ">=7.0.0, <7.5.2", "7.5.2"),
}

func nvdRec(id, severity, vector, description string) Advisory {
	return Advisory{
		ID: id, Provider: ProviderNVD, Severity: severity, CVSS: []string{vector},
		Description: description, URL: "https://nvd.nist.gov/vuln/detail/" + id,
	}
}

func distro(os *OS, id, severity, pkg, fixed string) Advisory {
	provider, eco, url := ProviderAlpine, EcosystemApk, "https://security.alpinelinux.org/vuln/"+id
	if os.Name == "debian" {
		provider, eco, url = ProviderDebian, EcosystemDeb, "https://security-tracker.debian.org/tracker/"+id
	}
	constraint := ""
	if fixed != "" {
		constraint = "< " + fixed
	}
	return Advisory{
		ID: id, Provider: provider, Severity: severity, URL: url,
		Affected: []Affected{{OS: os, Ecosystem: eco, Name: pkg, Constraint: constraint, Fixed: fixed}},
	}
}

func wontFix(a Advisory) Advisory {
	a.Affected[0].WontFix = true
	return a
}

func ghsa(id, cve, severity, vector, summary, eco, pkg, constraint, fixed string) Advisory {
	return Advisory{
		ID: id, Provider: ProviderGitHub, Aliases: []string{cve}, Severity: severity,
		CVSS: []string{vector}, Description: summary, URL: "https://github.com/advisories/" + id,
		Affected: []Affected{{Ecosystem: eco, Name: pkg, Constraint: constraint, Fixed: fixed}},
	}
}

func concat(lists ...[]Advisory) []Advisory {
	var out []Advisory
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
