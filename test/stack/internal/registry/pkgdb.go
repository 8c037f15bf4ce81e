package registry

// Package databases of the demo root filesystems. Versions are releases that
// the advisories in matcher/dbwrite/advisory affect (Alpine 3.18
// secdb and Debian bookworm tracker records).

const alpineOSRelease = `NAME="Alpine Linux"
ID=alpine
VERSION_ID=3.18.4
PRETTY_NAME="Alpine Linux v3.18"
HOME_URL="https://alpinelinux.org/"
BUG_REPORT_URL="https://gitlab.alpinelinux.org/alpine/aports/-/issues"
`

const apkInstalled = `P:musl
V:1.2.4-r1
A:x86_64
T:the musl c library (libc) implementation
U:https://musl.libc.org/
L:MIT
o:musl

P:busybox
V:1.36.1-r2
A:x86_64
T:Size optimized toolbox of many common UNIX utilities
U:https://busybox.net/
L:GPL-2.0-only
o:busybox
D:so:libc.musl-x86_64.so.1

P:libcrypto3
V:3.1.1-r1
A:x86_64
T:Crypto library from openssl
U:https://www.openssl.org/
L:Apache-2.0
o:openssl
D:so:libc.musl-x86_64.so.1

P:libssl3
V:3.1.1-r1
A:x86_64
T:SSL shared libraries
U:https://www.openssl.org/
L:Apache-2.0
o:openssl
D:so:libc.musl-x86_64.so.1 so:libcrypto.so.3

P:zlib
V:1.2.13-r1
A:x86_64
T:A compression/decompression Library
U:https://zlib.net/
L:Zlib
o:zlib
D:so:libc.musl-x86_64.so.1

`

const debianOSRelease = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
`

const dpkgStatus = `Package: libc6
Status: install ok installed
Priority: optional
Section: libs
Installed-Size: 12985
Maintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>
Architecture: amd64
Multi-Arch: same
Source: glibc
Version: 2.36-9+deb12u1
Description: GNU C Library: Shared libraries
 Contains the standard libraries that are used by nearly all programs on
 the system.

Package: libssl3
Status: install ok installed
Priority: optional
Section: libs
Installed-Size: 6166
Maintainer: Debian OpenSSL Team <pkg-openssl-devel@alioth-lists.debian.net>
Architecture: amd64
Multi-Arch: same
Source: openssl
Version: 3.0.9-1
Depends: libc6 (>= 2.34)
Description: Secure Sockets Layer toolkit - shared libraries
 This package is part of the OpenSSL project's implementation of the SSL
 and TLS cryptographic protocols for secure communication over the Internet.

Package: openssl
Status: install ok installed
Priority: optional
Section: utils
Installed-Size: 2302
Maintainer: Debian OpenSSL Team <pkg-openssl-devel@alioth-lists.debian.net>
Architecture: amd64
Version: 3.0.9-1
Depends: libc6 (>= 2.34), libssl3 (>= 3.0.9)
Description: Secure Sockets Layer toolkit - cryptographic utility
 This package is part of the OpenSSL project's implementation of the SSL
 and TLS cryptographic protocols for secure communication over the Internet.

Package: zlib1g
Status: install ok installed
Priority: required
Section: libs
Installed-Size: 168
Maintainer: Mark Brown <broonie@debian.org>
Architecture: amd64
Multi-Arch: same
Source: zlib
Version: 1:1.2.13.dfsg-1
Provides: libz1
Depends: libc6 (>= 2.14)
Description: compression library - runtime
 zlib is a library implementing the deflate compression method found
 in gzip and PKZIP.

`
