package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/version"
)

// newVersionCommand is `kubectl crowsnest version`: the plugin's build, as
// one line or, with -o json|yaml, an object. It contacts no server.
func newVersionCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := o.format()
			if err != nil {
				return err
			}
			info := version.Get()
			if f == output.JSON || f == output.YAML {
				return output.Data(o.streams.Out, f, info)
			}
			_, err = fmt.Fprintln(o.streams.Out, info)
			return err
		},
	}
}
