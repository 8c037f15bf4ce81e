package cli

import (
	"context"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsclient"
)

type imagesOptions struct {
	*options
	all         bool
	minSeverity string
	fixable     bool
}

func newImagesCommand(o *options) *cobra.Command {
	io := &imagesOptions{options: o}
	cmd := &cobra.Command{
		Use:   "images [-n NAMESPACE | -A] [--min-severity SEVERITY]",
		Short: "List the scanned images running in a namespace (or every report with -A), worst first",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return io.run(cmd.Context()) },
	}
	cmd.Flags().BoolVarP(&io.all, "all-namespaces", "A", false, "list every report, wherever its image runs")
	cmd.Flags().StringVar(&io.minSeverity, "min-severity", "", "only images with a finding of this severity or worse (critical, high, medium, low, negligible, unknown)")
	cmd.Flags().BoolVar(&io.fixable, "fixable", false, "only images with at least one fixable finding")
	return cmd
}

func (o *imagesOptions) run(ctx context.Context) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	if err := checkSeverity(o.minSeverity); err != nil {
		return err
	}
	ns := ""
	if !o.all {
		if ns, _, err = o.namespace(); err != nil {
			return err
		}
	}
	rc, err := o.results()
	if err != nil {
		return err
	}
	items, err := rc.ListReports(ctx, resultsclient.ListOptions{Namespace: ns, MinSeverity: o.minSeverity, Fixable: o.fixable})
	if err != nil {
		return err
	}
	if ns != "" && !hasRunningIn(items) {
		if items, err = o.filterByPods(ctx, ns, items); err != nil {
			return err
		}
	}
	sortWorstFirst(items)
	if format == output.JSON || format == output.YAML {
		return output.Data(o.streams.Out, format, resultsapi.ReportList{Items: output.List(items), Total: len(items)})
	}
	if len(items) == 0 {
		where := "in namespace " + ns
		if ns == "" {
			where = "in the cluster"
		}
		_, _ = fmt.Fprintf(o.streams.ErrOut, "No scanned images found %s.\n", where)
		return nil
	}
	return printImages(o.streams.Out, format, items, ns == "", o.now())
}

// hasRunningIn tells a results-api that filters by namespace (its items
// say where they run) from an older one that ignores the parameter.
func hasRunningIn(items []resultsapi.ReportSummary) bool {
	for _, it := range items {
		if it.RunningIn == nil {
			return false
		}
	}
	return true
}

// filterByPods keeps the reports of the digests that the Pods of ns run,
// for a results-api that cannot filter by namespace itself.
func (o *imagesOptions) filterByPods(ctx context.Context, ns string, items []resultsapi.ReportSummary) ([]resultsapi.ReportSummary, error) {
	kc, err := o.kubeClient()
	if err != nil {
		return nil, err
	}
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("results-api does not filter by namespace, and the Pods of namespace %s cannot be listed to filter here: %w", ns, err)
	}
	return keepRunning(items, inventory.Workloads(pods.Items)), nil
}

// keepRunning keeps the reports of the digests in running, each with the
// workloads running it.
func keepRunning(items []resultsapi.ReportSummary, running map[string][]resultsapi.RunningWorkload) []resultsapi.ReportSummary {
	var out []resultsapi.ReportSummary
	for _, it := range items {
		if ws, ok := running[it.Digest]; ok {
			it.RunningIn = &ws
			out = append(out, it)
		}
	}
	return out
}

func sortWorstFirst(items []resultsapi.ReportSummary) {
	key := func(c resultsapi.SeverityCounts) []int {
		return []int{c.Critical, c.High, c.Medium, c.Low, c.Negligible, c.Unknown}
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := key(items[i].Counts), key(items[j].Counts)
		for k := range a {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return items[i].Image < items[j].Image
	})
}
