package main

import (
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// TestWithout: --exclude drops an advisory by its id or its CVE alias (every
// record of that id: NVD's and each distro's), keeps the rest, and refuses
// an id that matches nothing.
func TestWithout(t *testing.T) {
	all := advisory.All(0)
	count := func(advs []advisory.Advisory, id string) int {
		n := 0
		for _, a := range advs {
			if a.ID == id || strings.Contains(strings.Join(a.Aliases, ","), id) {
				n++
			}
		}
		return n
	}
	got, err := without(all, "CVE-2024-5535, CVE-2021-44906")
	if err != nil {
		t.Fatal(err)
	}
	dropped := count(all, "CVE-2024-5535") + count(all, "CVE-2021-44906")
	if dropped < 3 || len(got) != len(all)-dropped || count(got, "CVE-2024-5535") != 0 || count(got, "CVE-2021-44906") != 0 {
		t.Fatalf("kept %d of %d (dropped %d records of the two ids)", len(got), len(all), dropped)
	}
	if _, err := without(all, "CVE-0000-0000"); err == nil || !strings.Contains(err.Error(), "CVE-0000-0000") {
		t.Fatalf("unknown id: err = %v", err)
	}
	if same, _ := without(all, ""); len(same) != len(all) {
		t.Fatal("no --exclude changed the list")
	}
}
