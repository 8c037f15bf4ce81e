package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

func TestCRDDefaultsValidationAndSample(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "samples", "crowsnest_v1alpha1_scanner.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var sample crowsnestv1alpha1.Scanner
	if err := yaml.UnmarshalStrict(raw, &sample); err != nil {
		t.Fatal(err)
	}
	sample.Namespace = ns
	if err := k8s.Create(ctx, &sample); err != nil {
		t.Fatalf("sample rejected: %v", err)
	}
	bare := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns}}
	if err := k8s.Create(ctx, bare); err != nil {
		t.Fatal(err)
	}
	sp := bare.Spec
	if sp.IgnoreLabel != crowsnestv1alpha1.DefaultIgnoreLabel || sp.MaxConcurrentScans != 2 || sp.RescanInterval.Duration != 24*time.Hour || sp.ScanTimeout.Duration != 10*time.Minute {
		t.Errorf("defaults not applied: %+v", sp)
	}
	for name, s := range map[string]*crowsnestv1alpha1.Scanner{
		"cap too high": {ObjectMeta: metav1.ObjectMeta{Name: "high", Namespace: ns}, Spec: crowsnestv1alpha1.ScannerSpec{MaxConcurrentScans: 51}},
		"long name":    {ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("x", 64), Namespace: ns}},
	} {
		if err := k8s.Create(ctx, s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPrintColumns reads `kubectl get scanners` as the API server renders it
// (a meta.k8s.io Table).
func TestPrintColumns(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	putReport(t, api, testDigest(31))
	runPod(t, ns, "web", nil, "nginx@"+testDigest(31))
	newScanner(t, ns)
	startOperator(t, ns, api.URL, "", testOptions())
	eventually(t, 10*time.Second, "up to date", conditions(t, ns, upToDate...))

	hc, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, strings.TrimRight(restConfig.Host, "/")+"/apis/crowsnest.dev/v1alpha1/namespaces/"+ns+"/scanners", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("%v: %s (%s)", err, body, req.URL)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if got := strings.Join(cols, ","); got != "Name,Ready,Images,Scanned,Scanning,Failed,Age" {
		t.Errorf("columns = %s", got)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows = %d", len(table.Rows))
	}
	if got := fmt.Sprint(table.Rows[0].Cells[:6]); got != "[default True 1 1 0 0]" {
		t.Errorf("row = %s", got)
	}
	// -o wide adds why Ready is what it is, how the scans stand and whether
	// some image failed.
	var wide []string
	for i, c := range table.ColumnDefinitions {
		if c.Priority == 1 {
			wide = append(wide, fmt.Sprintf("%s=%v", c.Name, table.Rows[0].Cells[i]))
		}
	}
	if got := strings.Join(wide, ","); got != "Reason=Reconciled,Scans=UpToDate,Degraded=False" {
		t.Errorf("wide columns = %s", got)
	}
}

// Messages of the CEL rules on ScannerSpec, as a user reads them.
const (
	msgRescanInterval = "rescanInterval must be 0s (off) or at least 1h; Go duration units: s, m, h (no d)"
	msgScanTimeout    = "scanTimeout must be between 1m and 24h; Go duration units: s, m, h (no d)"
	msgGrypeImage     = "grypeImage must be an image reference"
	msgIgnoreLabel    = "ignoreLabel must be a label key"
)

// rawScanner is a Scanner as a tenant can write it with kubectl: any JSON,
// not only what the Go types can express (metav1.Duration cannot hold "1d").
func rawScanner(ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(crowsnestv1alpha1.GroupVersion.WithKind("Scanner"))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestCRDTenantCannotBreakTheScannerList plays a tenant who tries to store a
// Scanner the operator cannot decode. Every such write must be refused at
// admission with a message that says what is allowed, so the operator's
// cluster-wide Scanner list keeps decoding for every other namespace.
func TestCRDTenantCannotBreakTheScannerList(t *testing.T) {
	ctx := context.Background()
	tenant, other := newNamespace(t), newNamespace(t)
	rejected := []struct {
		field, value, want string
	}{
		{"rescanInterval", "1d", msgRescanInterval},
		{"rescanInterval", "-5m", msgRescanInterval},
		{"rescanInterval", "banana", msgRescanInterval},
		{"rescanInterval", "30s", msgRescanInterval},
		{"rescanInterval", "59m59s", msgRescanInterval},
		{"rescanInterval", "", msgRescanInterval},
		{"rescanInterval", "9999999999999999999h", "spec.rescanInterval"}, // fits the pattern, overflows time.Duration
		{"rescanInterval", strings.Repeat("1", 40) + "h", "Too long"},
		{"scanTimeout", "30s", msgScanTimeout},
		{"scanTimeout", "25h", msgScanTimeout},
		{"scanTimeout", "0s", msgScanTimeout},
		{"scanTimeout", "1d", msgScanTimeout},
		{"grypeImage", "bad image", msgGrypeImage},
		{"grypeImage", "anchore/grype:v1;rm -rf /", msgGrypeImage},
		{"grypeImage", "anchore/grype@sha256:abc", msgGrypeImage},
		{"ignoreLabel", "-x", msgIgnoreLabel},
		{"ignoreLabel", "crowsnest.dev/", msgIgnoreLabel},
		{"ignoreLabel", "a/b/c", msgIgnoreLabel},
		{"ignoreLabel", strings.Repeat("a", 64), msgIgnoreLabel},
		{"ignoreLabel", strings.Repeat("a.", 127) + "a/x", msgIgnoreLabel}, // 255-character prefix
	}
	for i, c := range rejected {
		err := k8s.Create(ctx, rawScanner(tenant, fmt.Sprintf("bad-%d", i), map[string]any{c.field: c.value}))
		if err == nil {
			t.Errorf("%s %q: accepted", c.field, c.value)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: got %v, want an Invalid error saying %q", c.field, c.value, err, c.want)
		}
	}

	// The same values through an update of a valid Scanner.
	s := newScanner(t, tenant)
	for _, patch := range []string{`{"spec":{"rescanInterval":"1d"}}`, `{"spec":{"scanTimeout":"2d"}}`} {
		err := k8s.Patch(ctx, s.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "(no d)") {
			t.Errorf("patch %s: got %v, want Invalid", patch, err)
		}
	}

	valid := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: other}}
	if err := k8s.Create(ctx, valid); err != nil {
		t.Fatal(err)
	}
	var list crowsnestv1alpha1.ScannerList
	if err := k8s.List(ctx, &list); err != nil {
		t.Fatalf("the cluster-wide Scanner list no longer decodes: %v", err)
	}
	seen := map[string]bool{}
	for _, item := range list.Items {
		seen[item.Namespace+"/"+item.Name] = true
	}
	if !seen[other+"/default"] || !seen[tenant+"/default"] {
		t.Errorf("list misses the valid Scanners of %s and %s", other, tenant)
	}
	for i := range rejected {
		if seen[fmt.Sprintf("%s/bad-%d", tenant, i)] {
			t.Errorf("rejected Scanner bad-%d was stored", i)
		}
	}
}

// TestCRDAcceptsValidSpecs: the values a user means are stored and decode
// back through the typed client to the same durations.
func TestCRDAcceptsValidSpecs(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	durations := []struct {
		field, value string
		want         time.Duration
	}{
		{"rescanInterval", "0s", 0},
		{"rescanInterval", "0", 0},
		{"rescanInterval", "1h", time.Hour},
		{"rescanInterval", "24h", 24 * time.Hour},
		{"rescanInterval", "90m", 90 * time.Minute},
		{"rescanInterval", "1h30m", 90 * time.Minute},
		{"rescanInterval", "1.5h", 90 * time.Minute},
		{"rescanInterval", "168h", 7 * 24 * time.Hour},
		{"scanTimeout", "1m", time.Minute},
		{"scanTimeout", "90s", 90 * time.Second},
		{"scanTimeout", "24h", 24 * time.Hour},
		{"scanTimeout", "2h0m0s", 2 * time.Hour},
	}
	for i, c := range durations {
		name := fmt.Sprintf("ok-%d", i)
		if err := k8s.Create(ctx, rawScanner(ns, name, map[string]any{c.field: c.value})); err != nil {
			t.Errorf("%s %q rejected: %v", c.field, c.value, err)
			continue
		}
		var s crowsnestv1alpha1.Scanner
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			t.Fatal(err)
		}
		got := s.Spec.ScanTimeout.Duration
		if c.field == "rescanInterval" {
			got = s.Spec.RescanInterval.Duration
		}
		if got != c.want {
			t.Errorf("%s %q decoded as %v, want %v", c.field, c.value, got, c.want)
		}
	}
	digest := "@sha256:" + strings.Repeat("ab", 32)
	strs := map[string][]string{
		"grypeImage": {"anchore/grype:v0.121.2", "anchore/grype", "grype", "docker.io/anchore/grype:latest" + digest,
			"localhost:5000/mirror/grype" + digest, "registry.example.com/team_a/grype-mirror__x:v1.2.3-rc.1"},
		"ignoreLabel": {"crowsnest.dev/ignore", "skip", "Skip_Me.v2", "example.com/" + strings.Repeat("x", 63),
			strings.Repeat("a.", 126) + "a/x"},
	}
	for field, values := range strs {
		for i, v := range values {
			if err := k8s.Create(ctx, rawScanner(ns, fmt.Sprintf("%s-%d", strings.ToLower(field), i), map[string]any{field: v})); err != nil {
				t.Errorf("%s %q rejected: %v", field, v, err)
			}
		}
	}
}

// crdPatterns reads the OpenAPI patterns and CEL rules of spec's fields from
// the generated CRD, the file envtest installs.
func crdPatterns(t *testing.T) (patterns map[string]*regexp.Regexp, rules map[string][]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "crd", "bases", "crowsnest.dev_scanners.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type field struct {
		Pattern     string `json:"pattern"`
		Validations []struct {
			Rule string `json:"rule"`
		} `json:"x-kubernetes-validations"`
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties map[string]field `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	patterns, rules = map[string]*regexp.Regexp{}, map[string][]string{}
	for name, f := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties {
		if f.Pattern != "" {
			patterns[name] = regexp.MustCompile(f.Pattern)
		}
		for _, v := range f.Validations {
			rules[name] = append(rules[name], v.Rule)
		}
	}
	return patterns, rules
}

// TestCRDRulesRepeatThePatterns: the API server runs CEL rules even when a
// pattern fails, so each patterned field has one rule that starts with the
// same pattern. Then duration() never sees a string Go cannot parse, and
// every rejection carries the rule's readable message.
func TestCRDRulesRepeatThePatterns(t *testing.T) {
	patterns, rules := crdPatterns(t)
	for _, field := range []string{"ignoreLabel", "rescanInterval", "scanTimeout", "grypeImage"} {
		re := patterns[field]
		if re == nil || len(rules[field]) != 1 || !strings.HasPrefix(rules[field][0], "self.matches('"+re.String()+"')") {
			t.Errorf("%s: pattern %v and rules %q disagree", field, re, rules[field])
		}
	}
}

// TestCRDDurationPatternIsGoDuration holds the duration pattern to Go's
// time.ParseDuration (what metav1.Duration decodes with): it matches exactly
// the strings that parse to a value that is not negative.
func TestCRDDurationPatternIsGoDuration(t *testing.T) {
	patterns, _ := crdPatterns(t)
	checked := map[string]bool{}
	for _, field := range []string{"rescanInterval", "scanTimeout"} {
		re := patterns[field]
		if checked[re.String()] {
			continue
		}
		checked[re.String()] = true
		check := func(s string) {
			_, err := time.ParseDuration(s)
			if want := err == nil && !strings.HasPrefix(s, "-"); re.MatchString(s) != want {
				t.Fatalf("%s: pattern matches %q = %v, ParseDuration: %v", field, s, !want, err)
			}
		}
		enumerate([]string{"0", "1", ".", "5", "h", "m", "s", "ms", "us", "µs", "μs", "ns", "d", "-", "+", "x"}, 4, check)
		rng := rand.New(rand.NewPCG(1, 2))
		for range 2000 {
			check(time.Duration(rng.Int64N(int64(1) << rng.IntN(63))).String())
		}
	}
}

// TestCRDIgnoreLabelIsALabelKey holds ignoreLabel's pattern, prefix rule and
// maximum length to Kubernetes' own label-key validation.
func TestCRDIgnoreLabelIsALabelKey(t *testing.T) {
	patterns, rules := crdPatterns(t)
	re := patterns["ignoreLabel"]
	if r := rules["ignoreLabel"]; re == nil || len(r) != 1 || !strings.HasSuffix(r[0], " && (!self.contains('/') || self.indexOf('/') <= 253)") {
		t.Fatalf("ignoreLabel's prefix rule changed: %q", rules["ignoreLabel"])
	}
	admitted := func(s string) bool {
		prefixOK := !strings.Contains(s, "/") || strings.Index(s, "/") <= 253 // the CEL rule
		return len(s) <= 317 && re.MatchString(s) && prefixOK
	}
	enumerate([]string{"a", "Z", "0", "-", "_", ".", "/", " ", strings.Repeat("b", 62), strings.Repeat("c.", 126) + "c"}, 4, func(s string) {
		if errs := validation.IsQualifiedName(s); admitted(s) != (len(errs) == 0) {
			t.Fatalf("%q: admitted = %v, IsQualifiedName: %v", s, admitted(s), errs)
		}
	})
}

// enumerate calls fn with every concatenation of up to depth tokens.
func enumerate(tokens []string, depth int, fn func(string)) {
	var build func(prefix string, depth int)
	build = func(prefix string, depth int) {
		fn(prefix)
		if depth == 0 {
			return
		}
		for _, tok := range tokens {
			build(prefix+tok, depth-1)
		}
	}
	build("", depth)
}
