package main

import (
	"fmt"
	"io"

	"github.com/crowsnest-dev/crowsnest/api/buildinfo"
)

// printVersion prints the build to w when args are just --version (or the
// version subcommand) and reports whether it did. The uploader has one flag
// set per subcommand, so the version is asked for on its own.
func printVersion(args []string, w io.Writer) bool {
	if len(args) != 1 || (args[0] != "--version" && args[0] != "-version" && args[0] != "version") {
		return false
	}
	fmt.Fprintln(w, buildinfo.String("uploader"))
	return true
}
