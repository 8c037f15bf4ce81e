package rematch

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

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

// TestRowsByIDAnswers reads rows by id as Grype's fills do
// (Where("id IN (?)", ids).Find) through the store's handle with the memo
// on, and the same reads with it off: the answers are equal, in the same
// order, for ids shuffled and repeated; a read whose rows were all read
// before reaches no SQLite statement and hands out rows the caller may
// change (deep copies are TestDeepCopy's; the test DB's rows hold no
// pointer); a read naming an id never read, or shaped otherwise, runs; a
// table read into another table's type (it panicked) does not answer the
// reads of its own.
func TestRowsByIDAnswers(t *testing.T) {
	dir := writeDB(t, append(advisory.All(0), benchAdvisories(300)...), fixtureBuilt)
	db := openWith(t, dir, Options{CacheBytes: -1}).memo.db
	plain := openWith(t, dir, Options{CacheBytes: -1, MemoBytes: -1}).gdb
	statements := func(f func()) int64 {
		before := work.sqlStatements.Load()
		f()
		return work.sqlStatements.Load() - before
	}
	someIDs := func(table, where string) []v6.ID {
		t.Helper()
		var ids []v6.ID
		if err := plain.Raw("SELECT id FROM " + table + " WHERE " + where + " ORDER BY id LIMIT 6").Scan(&ids).Error; err != nil {
			t.Fatal(err)
		}
		if len(ids) < 3 {
			t.Fatalf("%s: %d rows", table, len(ids))
		}
		// shuffled and repeated, as fillRefs and attachBlobValue may ask
		return []v6.ID{ids[2], ids[0], ids[len(ids)-1], ids[0], ids[1]}
	}
	check := func(name string, ids []v6.ID, read func(db *gorm.DB, ids []v6.ID) (any, error), change func(any)) {
		t.Helper()
		want, err := read(plain, ids)
		if err != nil {
			t.Fatal(err)
		}
		var first, again any
		if n := statements(func() { first, err = read(db, ids) }); err != nil || n != 1 {
			t.Fatalf("%s first read: %d statements, err %v; want 1", name, n, err)
		}
		if !reflect.DeepEqual(first, want) {
			t.Fatalf("%s first read:\n%+v\nwant\n%+v", name, first, want)
		}
		change(first)
		if n := statements(func() { again, err = read(db, ids[1:]) }); err != nil || n != 0 {
			t.Fatalf("%s read again: %d statements, err %v; want 0", name, n, err)
		}
		if w, _ := read(plain, ids[1:]); !reflect.DeepEqual(again, w) {
			t.Fatalf("%s read again:\n%+v\nwant\n%+v", name, again, w)
		}
		missing := append([]v6.ID{1 << 40}, ids...)
		if n := statements(func() { _, err = read(db, missing) }); err != nil || n != 1 {
			t.Fatalf("%s with an id never read: %d statements, err %v; want 1", name, n, err)
		}
	}
	check("vulnerability handles", someIDs("vulnerability_handles", "true"), func(db *gorm.DB, ids []v6.ID) (any, error) {
		var rows []v6.VulnerabilityHandle
		err := db.Where("id IN (?)", ids).Find(&rows).Error
		return rows, err
	}, func(rows any) { rows.([]v6.VulnerabilityHandle)[0].Name = "changed by the caller" })
	check("blobs", someIDs("blobs", "true"), func(db *gorm.DB, ids []v6.ID) (any, error) {
		var rows []v6.Blob
		err := db.Where("id IN ?", ids).Find(&rows).Error
		return rows, err
	}, func(rows any) { rows.([]v6.Blob)[0].Value = "changed by the caller" })
	check("packages", someIDs("packages", "true"), func(db *gorm.DB, ids []v6.ID) (any, error) {
		var rows []v6.Package
		err := db.Where("id IN (?)", ids).Find(&rows).Error
		return rows, err
	}, func(rows any) { rows.([]v6.Package)[0].Name = "changed by the caller" })

	// a table read into another table's type is kept apart: the packages
	// read (and kept) above stay packages
	pkgIDs := someIDs("packages", "true")
	var odd []v6.Blob
	if err := db.Table("packages").Where("id IN (?)", pkgIDs).Find(&odd).Error; err != nil {
		t.Fatal(err)
	}
	var pkgs, want []v6.Package
	if err := db.Where("id IN (?)", pkgIDs).Find(&pkgs).Error; err != nil {
		t.Fatal(err)
	}
	if err := plain.Where("id IN (?)", pkgIDs).Find(&want).Error; err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pkgs, want) {
		t.Fatalf("packages after a read of them into blobs:\n%+v\nwant\n%+v", pkgs, want)
	}

	ids := someIDs("vulnerability_handles", "true")
	if n := statements(func() {
		var rows []v6.VulnerabilityHandle
		if err := db.Where("id IN (?)", ids).Order("id DESC").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("an ordered read: %d statements, want 1 (it runs)", n)
	}
}

// TestVulnerabilityBlobsDecodedOnce plays Grype's fill of a lookup's
// vulnerabilities (fillVulnerabilityHandles): the rows read by id, then
// their blobs, each decoded into a VulnerabilityBlob (setBlob). Once a
// blob has been read, every later read of its row hands the row back with
// the blob decoded — equal to Grype's own decode of it — so Grype's
// attachBlobValue skips it; the blob is decoded once per DB build, and each
// read gets a copy the caller may change. Without rowsByID attaching blobs
// the rows come back without them, and every package that meets the
// vulnerability decodes its blob again.
func TestVulnerabilityBlobsDecodedOnce(t *testing.T) {
	dir := writeDB(t, append(advisory.All(0), benchAdvisories(300)...), fixtureBuilt)
	db := openWith(t, dir, Options{CacheBytes: -1}).memo.db
	plain := openWith(t, dir, Options{CacheBytes: -1, MemoBytes: -1}).gdb

	var ids []v6.ID
	if err := plain.Raw("SELECT id FROM vulnerability_handles WHERE blob_id IS NOT NULL AND blob_id != 0 ORDER BY id LIMIT 8").Scan(&ids).Error; err != nil {
		t.Fatal(err)
	}
	if len(ids) < 3 {
		t.Fatalf("%d vulnerability rows with a blob", len(ids))
	}
	// Grype's decode of each row's blob, on the plain store
	var rows []v6.VulnerabilityHandle
	if err := plain.Where("id IN (?)", ids).Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	want := map[v6.ID]*v6.VulnerabilityBlob{}
	var blobIDs []v6.ID
	for _, r := range rows {
		var b v6.Blob
		if err := plain.Where("id = ?", r.BlobID).First(&b).Error; err != nil {
			t.Fatal(err)
		}
		var v v6.VulnerabilityBlob
		if err := json.Unmarshal([]byte(b.Value), &v); err != nil {
			t.Fatal(err)
		}
		want[r.ID] = &v
		blobIDs = append(blobIDs, r.BlobID)
	}

	read := func() []v6.VulnerabilityHandle {
		t.Helper()
		var got []v6.VulnerabilityHandle
		if err := db.Where("id IN (?)", ids).Find(&got).Error; err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ids) {
			t.Fatalf("%d rows, want %d", len(got), len(ids))
		}
		return got
	}
	decodes := func(f func()) int64 {
		before := work.blobDecodes.Load()
		f()
		return work.blobDecodes.Load() - before
	}

	// the first read: no blob read yet, so Grype decodes them
	if first := read(); first[0].BlobValue != nil {
		t.Fatalf("a blob attached before it was ever read: %+v", first[0].BlobValue)
	}
	var blobs []v6.Blob
	if err := db.Where("id IN ?", blobIDs).Find(&blobs).Error; err != nil {
		t.Fatal(err)
	}

	var second []v6.VulnerabilityHandle
	if n := decodes(func() { second = read() }); n != int64(len(ids)) {
		t.Errorf("second read: %d decodes, want %d (each blob once, here)", n, len(ids))
	}
	for _, r := range second {
		if !reflect.DeepEqual(r.BlobValue, want[r.ID]) {
			t.Fatalf("row %d's blob:\n%+v\nwant Grype's decode\n%+v", r.ID, r.BlobValue, want[r.ID])
		}
	}
	// the caller changes what it got, as Grype may
	second[0].BlobValue.ID = "changed by the caller"
	second[0].BlobValue.References = append(second[0].BlobValue.References, v6.Reference{URL: "https://example.invalid"})
	if len(second[0].BlobValue.Severities) > 0 {
		second[0].BlobValue.Severities[0].Value = "changed by the caller"
	}

	var third []v6.VulnerabilityHandle
	if n := decodes(func() { third = read() }); n != 0 {
		t.Errorf("third read: %d decodes, want 0", n)
	}
	for _, r := range third {
		if !reflect.DeepEqual(r.BlobValue, want[r.ID]) {
			t.Fatalf("row %d's blob after a caller changed its copy:\n%+v\nwant\n%+v", r.ID, r.BlobValue, want[r.ID])
		}
	}
}

// TestCopyProvidersIsADeepCopy: copyProviders gives rows equal to the
// table's, sharing no memory with it or with another copy (a caller that
// changes its copy's date changes nothing else), and v6.Provider still
// has the fields it was written for: a Grype whose Provider gains a
// pointer, slice or map would otherwise be copied shallowly.
func TestCopyProvidersIsADeepCopy(t *testing.T) {
	var fields []string
	pt := reflect.TypeFor[v6.Provider]()
	for i := range pt.NumField() {
		fields = append(fields, pt.Field(i).Name+" "+pt.Field(i).Type.String())
	}
	want := []string{"ID string", "Version string", "Processor string", "DateCaptured *time.Time", "InputDigest string"}
	if !reflect.DeepEqual(fields, want) {
		t.Fatalf("v6.Provider has fields %q, copyProviders was written for %q: revisit it (or use copyOut)", fields, want)
	}
	d1, d2 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)
	src := []v6.Provider{
		{ID: "alpine", Version: "1", Processor: "vunnel@0.1", DateCaptured: &d1, InputDigest: "sha256:aa"},
		{ID: "nvd", Version: "2", Processor: "vunnel@0.1"},
		{ID: "wolfi", Version: "3", DateCaptured: &d2},
	}
	a, b := copyProviders(src), copyProviders(src)
	if !reflect.DeepEqual(a, src) || !reflect.DeepEqual(b, src) {
		t.Fatalf("copies %+v / %+v differ from %+v", a, b, src)
	}
	if !reflect.DeepEqual(copyProviders(src), copyOut(src)) {
		t.Fatal("copyProviders and copyOut disagree")
	}
	*a[0].DateCaptured = a[0].DateCaptured.Add(time.Hour)
	a[2].DateCaptured = nil
	if !src[0].DateCaptured.Equal(d1) || !b[0].DateCaptured.Equal(d1) || src[2].DateCaptured == nil || b[2].DateCaptured == nil {
		t.Errorf("changing one copy's dates changed the table's or another copy's: src %v, b %v", src[0].DateCaptured, b[0].DateCaptured)
	}
	if a[1].DateCaptured != nil || copyProviders(nil) != nil {
		t.Error("a row without a date got one, or no rows gave a slice")
	}
}
