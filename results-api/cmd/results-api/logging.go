package main

import (
	"flag"
	"fmt"
)

// errVersion ends parseFlags after --version printed the build; it wraps
// flag.ErrHelp, so run returns nil (exit 0) as it does after --help.
var errVersion = fmt.Errorf("version printed: %w", flag.ErrHelp)
