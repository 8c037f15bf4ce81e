package rematch

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// run adds the keys of k's rows that are in one build and not the other,
// and returns the vulnerabilities to expand (k.expand).
func (k keyedDiff) run(db *gorm.DB, keys map[string]struct{}) ([]string, error) {
	var vulns []string
	n, o := sides(k.query)
	for _, q := range []string{n + " EXCEPT " + o, o + " EXCEPT " + n} {
		rows, err := db.Raw(q).Rows()
		if err != nil {
			return nil, err
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return nil, err
		}
		vals := make([]any, len(cols))
		strs := make([]*string, len(k.prefixes))
		for i := range vals {
			if i < len(strs) {
				strs[i] = new(string)
				vals[i] = strs[i]
			} else {
				vals[i] = new(any)
			}
		}
		for rows.Next() {
			if err := rows.Scan(vals...); err != nil {
				rows.Close()
				return nil, err
			}
			for i, p := range k.prefixes {
				keys[nameKey(p, *strs[i])] = struct{}{}
				if k.expand && p == keyVuln {
					vulns = append(vulns, *strs[i])
				}
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return vulns, nil
}

// expand adds the keys a changed row reaches through another table, in
// both builds: a changed vulnerability is part of every package and CPE
// row of it (Grype fills the rows it returns with their vulnerability), so
// its rows' packages and products are changed too; and a package query by
// CPE selects the rows of the packages that have the CPE, so a changed
// package's products are changed.
func expand(db *gorm.DB, keys map[string]struct{}, vulns []string) error {
	for _, s := range []string{"main", "old"} {
		err := lookup(db, keys, vulns, keyPackage, `SELECT DISTINCT p.name FROM {db}.vulnerability_handles v
			JOIN {db}.affected_package_handles h ON h.vulnerability_id = v.id JOIN {db}.packages p ON p.id = h.package_id
			WHERE v.name = ? COLLATE NOCASE
			UNION SELECT DISTINCT p.name FROM {db}.vulnerability_handles v
			JOIN {db}.unaffected_package_handles h ON h.vulnerability_id = v.id JOIN {db}.packages p ON p.id = h.package_id
			WHERE v.name = ? COLLATE NOCASE`, s)
		if err == nil {
			err = lookup(db, keys, vulns, keyCPE, `SELECT DISTINCT c.product FROM {db}.vulnerability_handles v
				JOIN {db}.affected_cpe_handles h ON h.vulnerability_id = v.id JOIN {db}.cpes c ON c.id = h.cpe_id
				WHERE v.name = ? COLLATE NOCASE
				UNION SELECT DISTINCT c.product FROM {db}.vulnerability_handles v
				JOIN {db}.unaffected_cpe_handles h ON h.vulnerability_id = v.id JOIN {db}.cpes c ON c.id = h.cpe_id
				WHERE v.name = ? COLLATE NOCASE`, s)
		}
		if err != nil {
			return fmt.Errorf("diff: rows of changed vulnerabilities: %w", err)
		}
	}
	var pkgs []string
	for k := range keys {
		if p, ok := strings.CutPrefix(k, keyPackage); ok {
			pkgs = append(pkgs, p)
		}
	}
	for _, s := range []string{"main", "old"} {
		err := lookup(db, keys, pkgs, keyCPE, `SELECT DISTINCT c.product FROM {db}.packages p
			JOIN {db}.package_cpes pc ON pc.package_id = p.id JOIN {db}.cpes c ON c.id = pc.cpe_id
			WHERE p.name = ? COLLATE NOCASE`, s)
		if err != nil {
			return fmt.Errorf("diff: CPEs of changed packages: %w", err)
		}
	}
	return nil
}

// lookup runs query (on schema s) for every name and adds prefix+each
// value it returns to keys. Every parameter of the query is the name.
func lookup(db *gorm.DB, keys map[string]struct{}, names []string, prefix, query, s string) error {
	q := strings.ReplaceAll(query, "{db}", s)
	args := make([]any, strings.Count(q, "?"))
	for _, n := range names {
		for i := range args {
			args[i] = n
		}
		rows, err := db.Raw(q, args...).Rows()
		if err != nil {
			return err
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			keys[nameKey(prefix, v)] = struct{}{}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
