package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/results-api/apitest"
)

func TestCRDDefaultsValidationAndSample(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "crowsnest_v1alpha1_scanner.yaml"))
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
	api := apitest.Start(t)
	putReport(t, api, testDigest(31))
	runPod(t, ns, "web", nil, "nginx@"+testDigest(31))
	newScanner(t, ns)
	startOperator(t, ns, api.URL, "", testOptions())
	eventually(t, 10*time.Second, "up to date", readyReason(t, ns, crowsnestv1alpha1.ReasonUpToDate))

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
}
