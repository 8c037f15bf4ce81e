package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

func TestPrintVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		var out bytes.Buffer
		if !printVersion([]string{arg}, &out) {
			t.Fatalf("%s: not taken as a version request", arg)
		}
		got := strings.TrimSpace(out.String())
		if !strings.HasPrefix(got, "uploader dev (revision ") || !strings.HasSuffix(got, ", "+runtime.Version()+")") {
			t.Errorf("%s printed %q", arg, got)
		}
	}
	for _, args := range [][]string{nil, {"--bom-file=x"}, {"--version", "extra"}, {"docker-config"}} {
		var out bytes.Buffer
		if printVersion(args, &out) || out.Len() > 0 {
			t.Errorf("%q taken as a version request", args)
		}
	}
}
