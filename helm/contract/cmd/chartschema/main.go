// Command chartschema writes helm/crowsnest/values.schema.json from the Go
// types in package values (make generate).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/crowsnest-dev/crowsnest/helm/contract/values"
)

func main() {
	out := flag.String("o", "", "write the schema to this file instead of stdout")
	flag.Parse()
	data, err := values.Schema()
	if err == nil && *out != "" {
		err = os.WriteFile(*out, data, 0o644)
	} else if err == nil {
		_, err = os.Stdout.Write(data)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartschema:", err)
		os.Exit(1)
	}
}
