package main

import (
	"flag"
	"slices"
	"testing"
)

// TestInventoryFlag: the inventory is on by default, CROWSNEST_INVENTORY or
// --inventory turn it off; it leaves the operator's own namespace out and
// reads namespace labels only when the operator watches every namespace
// (a namespaced install cannot list Namespaces).
func TestInventoryFlag(t *testing.T) {
	parse := func(env map[string]string, args ...string) *Options {
		t.Helper()
		var o Options
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		o.BindFlags(fs)
		if err := applyEnv(fs, func(k string) string { return env[k] }); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(append([]string{"--results-api-url=http://x", "--uploader-image=u"}, args...)); err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		return &o
	}
	o := parse(nil, "--operator-namespace=crowsnest")
	inv := o.controllerOptions().Inventory
	if !inv.Enabled || !inv.NamespaceLabels || !slices.Equal(inv.Exclude, []string{"crowsnest"}) || inv.RetryBase != o.PublishRetry {
		t.Errorf("default inventory options = %+v", inv)
	}
	if inv := parse(map[string]string{"CROWSNEST_INVENTORY": "false"}).controllerOptions().Inventory; inv.Enabled || inv.Exclude != nil {
		t.Errorf("CROWSNEST_INVENTORY=false: %+v", inv)
	}
	if inv := parse(map[string]string{"CROWSNEST_INVENTORY": "false"}, "--inventory").controllerOptions().Inventory; !inv.Enabled {
		t.Errorf("--inventory does not win over the environment: %+v", inv)
	}
	if inv := parse(nil, "--inventory=false").controllerOptions().Inventory; inv.Enabled {
		t.Errorf("--inventory=false: %+v", inv)
	}
	if inv := parse(nil, "--watch-namespaces=a,b").controllerOptions().Inventory; inv.NamespaceLabels {
		t.Errorf("--watch-namespaces: namespace labels read anyway: %+v", inv)
	}
}
