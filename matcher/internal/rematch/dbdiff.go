package rematch

import (
	"fmt"
	"strings"

	"gorm.io/gorm"

	v6 "github.com/anchore/grype/grype/db/v6"
)

// DBDiff is what changed between two builds of a Grype v6 DB, as the
// footprint keys (footprint.go) of the rows added, removed or changed:
// a report whose footprint holds none of them makes the same lookups with
// the same answers against both builds, so its findings are the same.
//
// It is computed with SQL over the two files (the new one opened, the old
// one attached), comparing rows by value, never by id (ids differ between
// builds): a row whose values are not in the other build is a change, and
// its keys go into the diff. Blobs are compared as stored, so a blob that
// only changed its serialization counts as a change (the diff may name more
// than changed, never less). Grype's own differ (grype/db/v6/diff) is not
// used: it is written for people, leaving out rows without blobs, EPSS
// changes under a threshold and CWE rows, any of which can change findings.
type DBDiff struct {
	// Full, when not empty, says why every report must be matched: the
	// builds differ in what every answer depends on.
	Full string
	// Keys are the footprint keys of the changed rows (always with keyAll).
	Keys map[string]struct{}
}

// globalTables are the tables that change every answer, or might: the
// operating systems a package query resolves and their aliases, the
// ecosystem overrides applied to every package query, the architecture
// aliases the provider loads, and the providers (by id: the only column
// that reaches a report, as a namespace). A difference in any makes the
// diff Full.
var globalTables = map[string]string{
	"operating_systems":                    "",
	"operating_system_specifier_overrides": "",
	"package_specifier_overrides":          "",
	"architecture_aliases":                 "",
	"providers":                            "id",
}

// keyedDiff is a relation compared between the builds: its rows by value,
// and the footprint keys of a changed row (its first columns: prefixes
// name them in order).
type keyedDiff struct {
	name     string
	prefixes []string // for the first len(prefixes) columns
	query    string   // {db} is main or old
	// expand: the vulnerabilities named by changed rows are part of other
	// rows (expand).
	expand bool
}

var keyedDiffs = []keyedDiff{
	{"package handles", []string{keyPackage, keyVuln}, `
		SELECT p.name, v.name, h.kind, p.ecosystem, v.provider_id, os.name, os.release_id, os.major_version,
			os.minor_version, os.label_version, os.codename, os.channel, b.value
		FROM (SELECT 'a' AS kind, package_id, vulnerability_id, operating_system_id, blob_id FROM {db}.affected_package_handles
			UNION ALL SELECT 'u', package_id, vulnerability_id, operating_system_id, blob_id FROM {db}.unaffected_package_handles) h
		JOIN {db}.packages p ON p.id = h.package_id
		JOIN {db}.vulnerability_handles v ON v.id = h.vulnerability_id
		LEFT JOIN {db}.operating_systems os ON os.id = h.operating_system_id
		LEFT JOIN {db}.blobs b ON b.id = h.blob_id`, false},
	{"package CPEs", []string{keyPackage, keyCPE}, `
		SELECT p.name, c.product, p.ecosystem, c.part, c.vendor, c.edition, c.language, c.software_edition,
			c.target_hardware, c.target_software, c.other
		FROM {db}.packages p JOIN {db}.package_cpes pc ON pc.package_id = p.id JOIN {db}.cpes c ON c.id = pc.cpe_id`, false},
	{"CPE handles", []string{keyCPE, keyVuln}, `
		SELECT c.product, v.name, h.kind, c.part, c.vendor, c.edition, c.language, c.software_edition,
			c.target_hardware, c.target_software, c.other, v.provider_id, b.value
		FROM (SELECT 'a' AS kind, cpe_id, vulnerability_id, blob_id FROM {db}.affected_cpe_handles
			UNION ALL SELECT 'u', cpe_id, vulnerability_id, blob_id FROM {db}.unaffected_cpe_handles) h
		JOIN {db}.cpes c ON c.id = h.cpe_id
		JOIN {db}.vulnerability_handles v ON v.id = h.vulnerability_id
		LEFT JOIN {db}.blobs b ON b.id = h.blob_id`, false},
	{"vulnerabilities", []string{keyVuln}, `
		SELECT v.name, v.provider_id, v.status, v.published_date, v.modified_date, v.withdrawn_date, b.value
		FROM {db}.vulnerability_handles v LEFT JOIN {db}.blobs b ON b.id = v.blob_id`, true},
	{"vulnerability aliases", []string{keyVuln, keyVuln}, `SELECT name, alias FROM {db}.vulnerability_aliases`, true},
	{"KEV", []string{keyVuln}, `
		SELECT k.cve, b.value FROM {db}.known_exploited_vulnerability_handles k LEFT JOIN {db}.blobs b ON b.id = k.blob_id`, false},
	{"EPSS", []string{keyVuln}, `SELECT cve, epss, percentile FROM {db}.epss_handles`, false},
	{"CWE", []string{keyVuln}, `SELECT cve, cwe, source, type FROM {db}.cwe_handles`, false},
}

// DiffDBs compares the DB in oldDir with the one in newDir (each holding a
// vulnerability.db).
func DiffDBs(oldDir, newDir string) (*DBDiff, error) {
	newPath := newDir + "/" + v6.VulnerabilityDBFileName
	db, err := v6.NewLowLevelDB(newPath, false, false, false)
	if err != nil {
		return nil, fmt.Errorf("open DB %s: %w", newPath, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open DB %s: %w", newPath, err)
	}
	defer sqlDB.Close()
	// ATTACH and temporary tables are per connection.
	sqlDB.SetMaxOpenConns(1)
	oldPath := oldDir + "/" + v6.VulnerabilityDBFileName
	if err := db.Exec("ATTACH DATABASE ? AS old", oldPath).Error; err != nil {
		return nil, fmt.Errorf("attach DB %s: %w", oldPath, err)
	}
	d := &DBDiff{Keys: map[string]struct{}{keyAll: {}}}
	if d.Full, err = fullReason(db); err != nil || d.Full != "" {
		return d, err
	}
	var vulns []string
	for _, k := range keyedDiffs {
		vs, err := k.run(db, d.Keys)
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", k.name, err)
		}
		vulns = append(vulns, vs...)
	}
	if err := expand(db, d.Keys, vulns); err != nil {
		return nil, err
	}
	return d, nil
}

// fullReason says why the builds differ in what every answer depends on:
// schema, or a global table; "" when they do not.
func fullReason(db *gorm.DB) (string, error) {
	var schemas []string
	for _, s := range []string{"main", "old"} {
		var v string
		err := db.Raw("SELECT model || '.' || revision || '.' || addition FROM " + s + ".db_metadata").Row().Scan(&v)
		if err != nil {
			return "", fmt.Errorf("read schema: %w", err)
		}
		schemas = append(schemas, v)
	}
	if schemas[0] != schemas[1] {
		return fmt.Sprintf("schema changed from %s to %s", schemas[1], schemas[0]), nil
	}
	for table, cols := range globalTables {
		if cols == "" {
			var err error
			if cols, err = columnsBut(db, table, "id"); err != nil {
				return "", err
			}
		}
		n, err := countExcept(db, "SELECT "+cols+" FROM {db}."+table)
		if err != nil {
			return "", fmt.Errorf("diff %s: %w", table, err)
		}
		if n > 0 {
			return fmt.Sprintf("table %s changed (%d rows)", table, n), nil
		}
	}
	return "", nil
}

// columnsBut lists table's columns without skip, comma-separated.
func columnsBut(db *gorm.DB, table, skip string) (string, error) {
	rows, err := db.Raw("SELECT name FROM pragma_table_info(?)", table).Rows()
	if err != nil {
		return "", fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return "", err
		}
		if c != skip {
			cols = append(cols, `"`+c+`"`)
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(cols) == 0 {
		return "", fmt.Errorf("table %s has no columns", table)
	}
	return strings.Join(cols, ", "), nil
}

func sides(query string) (newQ, oldQ string) {
	return strings.ReplaceAll(query, "{db}", "main"), strings.ReplaceAll(query, "{db}", "old")
}

// countExcept counts the rows of query in one build and not the other.
func countExcept(db *gorm.DB, query string) (int64, error) {
	n, o := sides(query)
	var count int64
	err := db.Raw("SELECT (SELECT count(*) FROM (" + n + " EXCEPT " + o + ")) + (SELECT count(*) FROM (" + o + " EXCEPT " + n + "))").
		Row().Scan(&count)
	return count, err
}
