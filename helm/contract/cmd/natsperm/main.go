// Command natsperm writes helm/crowsnest/charts/nats/files/permissions.json,
// the bundled NATS's per-user subject permissions, from api/events/v1
// (make generate-chart).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/crowsnest-dev/crowsnest/helm/contract/natsperm"
)

func main() {
	out := flag.String("o", "", "write the file here instead of stdout")
	flag.Parse()
	data, err := natsperm.Generate()
	if err == nil && *out != "" {
		err = os.WriteFile(*out, data, 0o644)
	} else if err == nil {
		_, err = os.Stdout.Write(data)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsperm:", err)
		os.Exit(1)
	}
}
