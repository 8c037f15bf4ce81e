package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsclient"
)

func newCVECommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "cve ID",
		Short: "Show which images carry a vulnerability (CVE-…, GHSA-…) and which workloads run them",
		Long: `Lists the images carrying the vulnerability, across the cluster (with -n NAMESPACE: only
those running in it), and the workloads running each image, from the Pods you can list.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.runCVE(cmd.Context(), args[0]) },
	}
}

func (o *options) runCVE(ctx context.Context, id string) error {
	format, err := o.format()
	if err != nil {
		return err
	}
	id = strings.TrimSpace(id)
	if id == "" || len(id) > 200 {
		return fmt.Errorf("vulnerability id %q: want an id such as CVE-2024-1234 (at most 200 characters)", id)
	}
	ns, explicit, err := o.namespace()
	if err != nil {
		return err
	}
	if !explicit {
		ns = ""
	}
	rc, err := o.results()
	if err != nil {
		return err
	}
	found, err := rc.Vulnerability(ctx, id, ns)
	if resultsclient.IsNotFound(err) {
		return fmt.Errorf("no scanned image carries %s (or none that your credentials can read)", id)
	}
	if err != nil {
		return err
	}
	v := newVulnerabilityView(found)
	o.fillRunningIn(ctx, v.Images, ns)
	if ns != "" {
		v.Images = runningIn(v.Images, ns)
	}
	v.Images = output.List(v.Images)
	if format == output.JSON || format == output.YAML {
		return output.Data(o.streams.Out, format, v)
	}
	if len(v.Images) == 0 {
		_, _ = fmt.Fprintf(o.streams.ErrOut, "No image running in namespace %s carries %s.\n", ns, id)
		return nil
	}
	headers := []string{"ID", "SEVERITY", "IMAGE", "PACKAGE", "VERSION", "FIXED-IN", "WORKLOADS"}
	if format == output.Wide {
		headers = append(headers, "DIGEST", "URL")
	}
	t := output.NewTable(o.streams.Out, headers...)
	for _, im := range v.Images {
		cells := []any{v.Id, v.Severity, repository(im.Image), im.Package, im.Version, strings.Join(im.FixedIn, ","), workloadsCell(im.RunningIn, true)}
		if format == output.Wide {
			cells = append(cells, im.Digest, deref(v.Url))
		}
		t.Row(cells...)
	}
	return t.Flush()
}

// vulnerabilityView is what cve prints: the API's Vulnerability, each of
// its images with the workloads running it.
type vulnerabilityView struct {
	resultsapi.Vulnerability
	Images []affectedImage `json:"images"`
}

// affectedImage is the API's AffectedImage and the workloads running the
// image, which the API does not say: fillRunningIn finds them from the Pods
// the user can list.
type affectedImage struct {
	resultsapi.AffectedImage
	RunningIn *[]resultsapi.RunningWorkload `json:"runningIn,omitempty"`
}

func newVulnerabilityView(v *resultsapi.Vulnerability) *vulnerabilityView {
	out := &vulnerabilityView{Vulnerability: *v, Images: make([]affectedImage, len(v.Images))}
	for i, im := range v.Images {
		out.Images[i] = affectedImage{AffectedImage: im}
	}
	out.Vulnerability.Images = nil // shadowed by out.Images
	return out
}

// fillRunningIn says where each image runs, from the Pods the user can list
// (in ns, or every namespace), when results-api did not say. Without Pods
// the images are still listed, with a warning.
func (o *options) fillRunningIn(ctx context.Context, images []affectedImage, ns string) {
	missing := false
	for _, im := range images {
		missing = missing || im.RunningIn == nil
	}
	if !missing {
		return
	}
	kc, err := o.kubeClient()
	if err != nil {
		o.warn("cannot tell which workloads run these images: %v", err)
		return
	}
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		o.warn("cannot tell which workloads run these images: list pods: %v", err)
		return
	}
	running := inventory.Workloads(pods.Items)
	for i := range images {
		if images[i].RunningIn == nil {
			ws := output.List(running[images[i].Digest])
			images[i].RunningIn = &ws
		}
	}
}

// runningIn keeps the images running in ns.
func runningIn(images []affectedImage, ns string) []affectedImage {
	var out []affectedImage
	for _, im := range images {
		if im.RunningIn == nil {
			continue
		}
		for _, w := range *im.RunningIn {
			if w.Namespace == ns {
				out = append(out, im)
				break
			}
		}
	}
	return out
}
