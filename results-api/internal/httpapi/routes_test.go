package httpapi_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/httpapi"
)

// TestRoutesMatchOpenAPI fails when a chi route is missing from
// api/openapi.yaml or the document names a path and method the router does
// not serve.
func TestRoutesMatchOpenAPI(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := yaml.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			if m == "parameters" {
				continue
			}
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	served := map[string]bool{}
	r := httpapi.New(httpapi.Config{}).Routes()
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route != "/" {
			route = strings.TrimSuffix(strings.ReplaceAll(route, "/*", ""), "/")
		}
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing, extra []string
	for k := range served {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes not in openapi.yaml: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("openapi.yaml paths the router does not serve: %v", extra)
	}
	if len(served) < 12 {
		t.Errorf("walked only %d routes: %v", len(served), served)
	}
}
