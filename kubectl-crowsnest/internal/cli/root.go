package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsclient"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/version"
)

// Defaults of the flags that find results-api: the chart's Service for a
// release named crowsnest in namespace crowsnest.
const (
	DefaultService          = "crowsnest-results-api"
	DefaultServiceNamespace = "crowsnest-system" // the README's and docs/deploy.md's helm install -n
	DefaultServicePort      = "http"
)

// options is what every command shares.
type options struct {
	streams genericiooptions.IOStreams
	kube    *genericclioptions.ConfigFlags
	svc     resultsclient.Service
	server  string
	output  string
	now     func() time.Time
}

// NewCommand builds `kubectl crowsnest`. getenv supplies the CROWSNEST_*
// defaults of its own flags (os.Getenv in main).
func NewCommand(streams genericiooptions.IOStreams, getenv func(string) string) *cobra.Command {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	o := &options{streams: streams, now: time.Now}
	o.kube = genericclioptions.NewConfigFlags(true)
	// --server talks to results-api directly (a port-forward); the API
	// server's address comes from the kubeconfig.
	o.kube.APIServer = nil

	root := &cobra.Command{
		Use:   "kubectl-crowsnest",
		Short: "Read Crowsnest's vulnerability reports of the images running in your cluster",
		Long: `kubectl crowsnest reads results-api through the Kubernetes API server's service proxy
with your kubeconfig's credentials (RBAC: get on services/proxy for results-api's Service),
or directly with --server (e.g. after kubectl port-forward).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl runs the binary as `kubectl crowsnest`; help says so.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl crowsnest"},
		// --version (cobra's flag) prints the line `version` prints.
		Version: version.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// Defined here so cobra does not take -v, which kubectl users know as
	// log verbosity.
	root.Flags().Bool("version", false, "print the plugin's version (as kubectl crowsnest version does)")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	fs := root.PersistentFlags()
	o.kube.AddFlags(fs)
	fs.Lookup("token").Usage = "bearer token for the API server, or for results-api with --server"
	fs.StringVar(&o.svc.Name, "service", env("CROWSNEST_SERVICE", DefaultService), "results-api's Service (env CROWSNEST_SERVICE)")
	fs.StringVar(&o.svc.Namespace, "service-namespace", env("CROWSNEST_SERVICE_NAMESPACE", DefaultServiceNamespace), "namespace of results-api's Service (env CROWSNEST_SERVICE_NAMESPACE)")
	fs.StringVar(&o.svc.Port, "service-port", env("CROWSNEST_SERVICE_PORT", DefaultServicePort), "name or number of the Service's port: the chart names it http, or https when results-api serves TLS (env CROWSNEST_SERVICE_PORT)")
	fs.StringVar(&o.server, "server", env("CROWSNEST_SERVER", ""), "results-api's URL, to reach it directly instead of through the API server (e.g. http://127.0.0.1:8080 after kubectl port-forward), with --token as its bearer token; the kubeconfig's credentials are not sent there (env CROWSNEST_SERVER)")
	fs.StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml (default: a table)")

	root.AddCommand(newImagesCommand(o), newImageCommand(o), newCVECommand(o), newChangesCommand(o), newWhyCommand(o), newVersionCommand(o))
	return root
}

func (o *options) format() (output.Format, error) { return output.ParseFormat(o.output) }

// results returns the client for results-api: direct with --server,
// otherwise through the API server.
func (o *options) results() (*resultsclient.Client, error) {
	if o.server != "" {
		return resultsclient.NewDirect(o.server, o.token())
	}
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig (results-api is reached through the API server; or use --server): %w", err)
	}
	return resultsclient.NewProxy(cfg, o.svc)
}

// token is --token. The kubeconfig's own credentials are never sent to
// --server: they are the API server's, a --server URL may point anywhere,
// and results-api only accepts tokens made for its audience anyway.
func (o *options) token() string {
	if o.kube.BearerToken != nil {
		return *o.kube.BearerToken
	}
	return ""
}

func (o *options) kubeClient() (kubernetes.Interface, error) {
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return kubernetes.NewForConfig(rest.CopyConfig(cfg))
}

// namespace is -n, or the kubeconfig context's namespace; explicit says
// whether -n was given.
func (o *options) namespace() (ns string, explicit bool, err error) {
	if o.kube.Namespace != nil && *o.kube.Namespace != "" {
		return *o.kube.Namespace, true, nil
	}
	ns, _, err = o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", false, fmt.Errorf("namespace from kubeconfig: %w", err)
	}
	return ns, false, nil
}

func (o *options) warn(format string, args ...any) {
	_, _ = fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", output.CleanLines(fmt.Sprintf(format, args...)))
}

// checkSeverity validates a --min-severity value.
func checkSeverity(s string) error {
	if s == "" || resultsclient.SeverityRank(s) < len(resultsclient.Severities) {
		return nil
	}
	return fmt.Errorf("--min-severity %q: want one of %v", s, resultsclient.Severities)
}
