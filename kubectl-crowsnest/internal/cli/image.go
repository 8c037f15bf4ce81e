package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsclient"
)

type imageOptions struct {
	*options
	container   string
	minSeverity string
}

func newImageCommand(o *options) *cobra.Command {
	io := &imageOptions{options: o}
	cmd := &cobra.Command{
		Use:   "image (DIGEST | REPOSITORY@DIGEST | pod/NAME [-c CONTAINER])",
		Short: "Show one image's report and its findings",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return io.run(cmd.Context(), args[0]) },
	}
	cmd.Flags().StringVarP(&io.container, "container", "c", "", "with pod/NAME: the container whose image to show (needed when the Pod has several)")
	cmd.Flags().StringVar(&io.minSeverity, "min-severity", "", "only findings of this severity or worse")
	return cmd
}

func (o *imageOptions) run(ctx context.Context, arg string) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	if err := checkSeverity(o.minSeverity); err != nil {
		return err
	}
	digest, ns, err := o.resolve(ctx, arg)
	if err != nil {
		return err
	}
	rc, err := o.results()
	if err != nil {
		return err
	}
	rep, err := rc.Report(ctx, digest, ns)
	if resultsclient.IsNotFound(err) {
		return fmt.Errorf("no report for %s: not scanned yet, or your credentials cannot read it", digest)
	}
	if err != nil {
		return err
	}
	rep.Findings = atLeast(rep.Findings, o.minSeverity)
	if format == output.JSON || format == output.YAML {
		rep.Findings = output.List(rep.Findings)
		return output.Data(o.streams.Out, format, rep)
	}
	return o.print(format, rep)
}

// resolve turns the argument into a digest, and the namespace it was found
// in for pod/NAME.
func (o *imageOptions) resolve(ctx context.Context, arg string) (digest, ns string, err error) {
	name, isPod := podName(arg)
	if !isPod {
		d, ok := inventory.Digest(arg)
		if !ok || !strings.Contains(arg, "sha256:") {
			return "", "", fmt.Errorf("%q is neither an image digest (sha256:…, or repository@sha256:…) nor pod/NAME", arg)
		}
		return d, "", nil
	}
	pod, ns, err := o.getPod(ctx, name)
	if err != nil {
		return "", "", err
	}
	var started []inventory.Container
	for _, c := range inventory.Containers(pod) {
		if o.container != "" && c.Name == o.container {
			if c.Digest == "" {
				return "", "", fmt.Errorf("container %s of pod %s/%s reports no image digest yet (not started)", c.Name, ns, name)
			}
			return c.Digest, ns, nil
		}
		if c.Kind == "container" && c.Digest != "" {
			started = append(started, c)
		}
	}
	if o.container != "" {
		return "", "", fmt.Errorf("pod %s/%s has no container %q", ns, name, o.container)
	}
	switch len(started) {
	case 0:
		return "", "", fmt.Errorf("no container of pod %s/%s reports an image digest yet (not started)", ns, name)
	case 1:
		return started[0].Digest, ns, nil
	}
	names := make([]string, len(started))
	for i, c := range started {
		names[i] = c.Name
	}
	return "", "", fmt.Errorf("pod %s/%s has %d containers (%s): choose one with -c, or see them all with `kubectl crowsnest why pod/%s`",
		ns, name, len(started), strings.Join(names, ", "), name)
}

func (o *imageOptions) print(f output.Format, rep *resultsapi.ReportDetail) error {
	w := o.streams.Out
	now := o.now()
	_, _ = fmt.Fprintf(w, "Image:     %s\nDigest:    %s\nScanned:   %s (%s ago) with Grype %s, DB built %s\nFindings:  %d (%s), %d fixable\n",
		output.Clean(rep.Image), output.Clean(rep.Digest), rep.ScannedAt.UTC().Format("2006-01-02T15:04:05Z"), output.Age(rep.ScannedAt, now),
		output.Clean(rep.GrypeVersion), output.Clean(orNone(rep.DbBuilt)), rep.FindingCount, counts(rep.Counts), rep.Fixable)
	if rep.RunningIn != nil {
		_, _ = fmt.Fprintf(w, "Running in: %s\n", output.Clean(orNone(output.Workloads(rep.RunningIn, true))))
	}
	if len(rep.Findings) == 0 {
		return nil
	}
	_, _ = fmt.Fprintln(w)
	rows := make([]findingRow, len(rep.Findings))
	for i, f := range rep.Findings {
		rows[i] = findingRow{Finding: f}
	}
	return printFindings(w, f, rows, false)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// podName accepts pod/NAME and pods/NAME, as kubectl does.
func podName(arg string) (string, bool) {
	for _, p := range []string{"pod/", "pods/", "po/"} {
		if name, ok := strings.CutPrefix(arg, p); ok && name != "" {
			return name, true
		}
	}
	return "", false
}
