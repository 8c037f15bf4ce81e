package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsclient"
)

// Container states in `why`.
const (
	stateScanned    = "scanned"
	stateNotScanned = "not scanned" // no report (or not one the user may read)
	stateNotStarted = "not started" // no imageID yet
	stateNoDigest   = "no digest"   // an imageID without a sha256 digest
)

// whyContainer is one container of the Pod and its report.
type whyContainer struct {
	inventory.Container
	State  string                   `json:"state"`
	Report *resultsapi.ReportDetail `json:"report,omitempty"`
}

// whyResult is `why`'s -o json/yaml document.
type whyResult struct {
	Namespace  string         `json:"namespace"`
	Pod        string         `json:"pod"`
	Containers []whyContainer `json:"containers"`
}

type whyOptions struct {
	*options
	minSeverity string
}

func newWhyCommand(o *options) *cobra.Command {
	wo := &whyOptions{options: o}
	cmd := &cobra.Command{
		Use:   "why pod/NAME",
		Short: "Show the findings of every container of a Pod (from the digests its status reports)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return wo.run(cmd.Context(), args[0]) },
	}
	cmd.Flags().StringVar(&wo.minSeverity, "min-severity", "", "only findings of this severity or worse")
	return cmd
}

func (o *whyOptions) run(ctx context.Context, arg string) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	if err := checkSeverity(o.minSeverity); err != nil {
		return err
	}
	name, ok := podName(arg)
	if !ok {
		return fmt.Errorf("%q: want pod/NAME", arg)
	}
	pod, ns, err := o.getPod(ctx, name)
	if err != nil {
		return err
	}
	rc, err := o.results()
	if err != nil {
		return err
	}
	res := whyResult{Namespace: ns, Pod: name}
	reports := map[string]*resultsapi.ReportDetail{} // containers often share an image
	for _, c := range inventory.Containers(pod) {
		wc := whyContainer{Container: c}
		switch {
		case c.ImageID == "":
			wc.State = stateNotStarted
		case c.Digest == "":
			wc.State = stateNoDigest
		default:
			rep, seen := reports[c.Digest]
			if !seen {
				rep, err = rc.Report(ctx, c.Digest, ns)
				if err != nil && !resultsclient.IsNotFound(err) {
					return fmt.Errorf("report of container %s (%s): %w", c.Name, c.Digest, err)
				}
				reports[c.Digest] = rep
			}
			wc.State = stateNotScanned
			if rep != nil {
				cp := *rep
				cp.Findings = output.List(atLeast(rep.Findings, o.minSeverity))
				wc.State, wc.Report = stateScanned, &cp
			}
		}
		res.Containers = append(res.Containers, wc)
	}
	if format == output.JSON || format == output.YAML {
		res.Containers = output.List(res.Containers)
		return output.Data(o.streams.Out, format, res)
	}
	return o.print(format, res)
}

func (o *whyOptions) print(f output.Format, res whyResult) error {
	t := output.NewTable(o.streams.Out, "CONTAINER", "IMAGE", "DIGEST", "STATE", "CRITICAL", "HIGH", "MEDIUM", "LOW", "FIXABLE")
	var rows []findingRow
	for _, c := range res.Containers {
		if c.Report == nil {
			t.Row(c.Name, c.Image, output.ShortDigest(c.Digest), c.State, "-", "-", "-", "-", "-")
			continue
		}
		n := c.Report.Counts
		t.Row(c.Name, c.Image, output.ShortDigest(c.Digest), c.State, n.Critical, n.High, n.Medium, n.Low, c.Report.Fixable)
		for _, fd := range c.Report.Findings {
			rows = append(rows, findingRow{container: c.Name, Finding: fd})
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	_, _ = fmt.Fprintln(o.streams.Out)
	return printFindings(o.streams.Out, f, rows, true)
}
