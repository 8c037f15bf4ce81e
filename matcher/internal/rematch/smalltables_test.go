package rematch

import (
	"reflect"
	"testing"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"

	v6 "github.com/anchore/grype/grype/db/v6"
)

// TestSmallTablesAnsweredOnce runs the queries Grype's store makes of its
// small global tables through the store's own gorm handle, as the store
// does, and counts the statements that reach SQLite: a repeat with the
// same arguments is answered from the first answer (equal rows, and rows
// the caller may change without changing the next answer), other
// arguments query again, and an argument that is not a plain value is never
// answered from memory.
func TestSmallTablesAnsweredOnce(t *testing.T) {
	dir := writeDB(t, advisory.All(0), fixtureBuilt)
	m := openWith(t, dir, Options{CacheBytes: -1})
	db := m.memo.db
	statements := func(f func()) int64 {
		before := work.sqlStatements.Load()
		f()
		return work.sqlStatements.Load() - before
	}
	find := func(name string) []v6.OperatingSystem {
		t.Helper()
		var oss []v6.OperatingSystem
		if err := db.Model(&v6.OperatingSystem{}).Where("name = ? collate nocase OR release_id = ? collate nocase", name, name).
			Where("channel IS NULL OR channel = ''").Find(&oss).Error; err != nil {
			t.Fatal(err)
		}
		return oss
	}
	var first, again []v6.OperatingSystem
	if n := statements(func() { first = find("alpine") }); n != 1 {
		t.Fatalf("first query: %d statements, want 1", n)
	}
	if len(first) == 0 {
		t.Fatal("the DB has no alpine operating system")
	}
	first[0].Name = "changed by the caller"
	if n := statements(func() { again = find("alpine") }); n != 0 {
		t.Fatalf("repeated query: %d statements, want 0 (answered from the first)", n)
	}
	if again[0].Name == "changed by the caller" {
		t.Fatal("the kept answer shares memory with a caller's rows")
	}
	first[0].Name = again[0].Name
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("repeated answer %+v, first %+v", again, first)
	}
	if n := statements(func() { _ = find("debian") }); n != 1 {
		t.Fatalf("other arguments: %d statements, want 1", n)
	}
	var aliases []v6.PackageSpecifierOverride
	for range 2 {
		if n := statements(func() {
			if err := db.Where("ecosystem = ? collate nocase", "apk").Find(&aliases).Error; err != nil {
				t.Fatal(err)
			}
		}); n > 1 {
			t.Fatalf("ecosystem overrides: %d statements, want at most 1", n)
		}
	}
	name := "alpine"
	for range 2 {
		if n := statements(func() {
			var oss []v6.OperatingSystem
			if err := db.Where("name = ?", &name).Find(&oss).Error; err != nil {
				t.Fatal(err)
			}
		}); n != 1 {
			t.Fatalf("a pointer argument: %d statements, want 1 each time", n)
		}
	}
}
