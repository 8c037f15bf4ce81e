package output

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Clean makes a string that came from a report (package names, versions,
// vulnerability ids, descriptions, image names, server messages) safe to
// print to a terminal: every rune that is not printable — control
// characters such as ESC, CR, backspace and the C1 controls, bidirectional
// overrides and other invisible format characters — and every byte that is
// not valid UTF-8 is written as its Go escape (\x1b, \r, \u202e). A report
// is written by whatever built the image, so without this a package named
// "\x1b[2J" would clear the reader's screen, and worse sequences can retitle
// the window, rewrite what is on screen or hide a finding.
func Clean(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\r', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// CleanLines is Clean for text of several lines: it keeps the line breaks.
func CleanLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Clean(l)
	}
	return strings.Join(lines, "\n")
}

func clean(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// escapeJSONControls escapes, in JSON that encoding/json wrote, the
// controls it leaves raw: DEL and the C1 controls U+0080–U+009F (U+009B is
// a one-character CSI to some terminals). They can only occur inside JSON
// strings, where \u escapes are equivalent, so the document means the same.
func escapeJSONControls(b []byte) []byte {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r >= 0x7f && r <= 0x9f }) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b) + 16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r >= 0x7f && r <= 0x9f {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[:size])
		}
		b = b[size:]
	}
	return out.Bytes()
}
