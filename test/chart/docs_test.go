package charttest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// docValues is one Helm values example of a document: a ```yaml block
// under a `<!-- values -->` comment (the whole block), or under
// `<!-- values: a.b.c -->` (that field of the block's document that has it,
// e.g. an Argo CD Application's spec.source.helm.valuesObject).
type docValues struct {
	line int
	path string
	body string
}

// valuesKeys are the top-level keys of values.yaml: a ```yaml block made of
// these only is a values example and must be tagged.
var valuesKeys = map[string]bool{"global": true, "operator": true, "matcher": true, "notifier": true, "resultsApi": true,
	"nats": true, "postgres": true, "monitoring": true, "defaultScanner": true}

// TestDeployDocValues: every Helm values example in docs/deploy.md renders
// with the chart (the schema rejects unknown keys and bad values, the
// templates refuse settings that cannot work), on top of one scan
// namespace, with cert-manager and the Prometheus Operator announced. A
// ```yaml block made only of values keys must carry the tag, so a new
// example cannot skip the check.
func TestDeployDocValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const doc = "docs/deploy.md"
	blocks, untagged, err := readDocValues(filepath.Join(repoRoot, doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range untagged {
		t.Errorf("%s:%d: a values example without <!-- values -->", doc, u)
	}
	if len(blocks) < 9 {
		t.Fatalf("%s: %d tagged values examples, want at least 9", doc, len(blocks))
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "base.yaml")
	if err := os.WriteFile(base, []byte("global: {scan: {namespaces: [team-a]}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		t.Run(fmt.Sprintf("line %d", b.line), func(t *testing.T) {
			values, err := b.values()
			if err != nil {
				t.Fatalf("%s:%d: %v", doc, b.line, err)
			}
			file := filepath.Join(dir, fmt.Sprintf("values-%d.yaml", b.line))
			if err := os.WriteFile(file, values, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Template(ctx, repoRoot, releaseNS, "-f", base, "-f", file,
				"--api-versions", "cert-manager.io/v1", "--api-versions", "monitoring.coreos.com/v1"); err != nil {
				t.Errorf("%s:%d: the chart refuses the example: %v", doc, b.line, err)
			}
		})
	}
}

// TestDocValuesCatchMistakes: the extraction finds a values field inside a
// manifest and an untagged example, and the render fails on a misspelt key
// there, so a passing example is valid, not merely unchecked.
func TestDocValuesCatchMistakes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	md := filepath.Join(dir, "doc.md")
	doc := "Text.\n\n<!-- values: spec.values -->\n```yaml\nkind: Other\n---\nkind: HelmRelease\nspec:\n  values:\n" +
		"    global: {scan: {namespaces: [team-a]}}\n    resultsApi:\n      podDisruptionBudget: {maxUnavailible: 1}\n```\n\n" +
		"```yaml\noperator: {replicas: 2}\n```\n\n```yaml\napiVersion: v1\nkind: ConfigMap\n```\n"
	if err := os.WriteFile(md, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	blocks, untagged, err := readDocValues(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 || len(untagged) != 1 || untagged[0] != 15 {
		t.Fatalf("blocks %+v, untagged %v; want one tagged, the untagged values block at line 15", blocks, untagged)
	}
	values, err := blocks[0].values()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(file, values, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Template(ctx, repoRoot, releaseNS, "-f", file); err == nil || !strings.Contains(err.Error(), "maxUnavailible") {
		t.Errorf("misspelt key: err = %v, want a schema error naming it", err)
	}
}

// values returns the example as a values file.
func (b docValues) values() ([]byte, error) {
	if b.path == "" {
		return []byte(b.body), nil
	}
	for _, d := range strings.Split(b.body, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			return nil, err
		}
		var v any = m
		for _, k := range strings.Split(b.path, ".") {
			mm, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = mm[k]
		}
		if v != nil {
			return yaml.Marshal(v)
		}
	}
	return nil, fmt.Errorf("no document has %s", b.path)
}

// readDocValues returns the tagged values examples of a Markdown file and
// the lines of ```yaml blocks that look like values but carry no tag.
func readDocValues(file string) ([]docValues, []int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var (
		blocks   []docValues
		untagged []int
		tag      *docValues // the tag just seen
		cur      *docValues // the block being read
		indent   string
		body     bytes.Buffer
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur != nil && trimmed == "```":
			cur.body = body.String()
			if cur.line > 0 {
				blocks = append(blocks, *cur)
			} else if looksLikeValues(cur.body) {
				untagged = append(untagged, -cur.line)
			}
			cur = nil
		case cur != nil:
			body.WriteString(strings.TrimPrefix(line, indent) + "\n")
		case strings.HasPrefix(trimmed, "<!-- values"):
			p := strings.TrimSuffix(strings.TrimPrefix(trimmed, "<!-- values"), "-->")
			p = strings.TrimSpace(strings.TrimPrefix(p, ":"))
			tag = &docValues{line: n + 1, path: p}
		case trimmed == "```yaml":
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
			body.Reset()
			if tag != nil {
				cur = tag
			} else {
				cur = &docValues{line: -n}
			}
			tag = nil
		case trimmed != "" && tag != nil:
			return nil, nil, fmt.Errorf("%s:%d: <!-- values --> not followed by a ```yaml block", file, tag.line-1)
		}
	}
	return blocks, untagged, sc.Err()
}

// looksLikeValues: a YAML document whose top-level keys are all values.yaml's.
func looksLikeValues(body string) bool {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(body), &m); err != nil || len(m) == 0 {
		return false
	}
	for k := range m {
		if !valuesKeys[k] {
			return false
		}
	}
	return true
}
