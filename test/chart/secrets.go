package charttest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var (
	// secretName matches names of settings that hold secrets.
	secretName = regexp.MustCompile(`(?i)(password|passwd|token|secret|credential|apikey|api_key|private_?key|database_url|dsn)`)
	// userinfoURL matches a URL carrying a password: scheme://user:password@host.
	userinfoURL = regexp.MustCompile(`[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@`)
	// refName matches settings that only name a Secret or a key, which is fine.
	refName = regexp.MustCompile(`(?i)^(\w*secretname|existingsecret(key)?|name|key)$`)
	// secretFileEnv matches variables that name a file holding a secret:
	// POSTGRES_PASSWORD_FILE, CROWSNEST_NATS_PASSWORD_FILE, CROWSNEST_NATS_CREDS.
	secretFileEnv = regexp.MustCompile(`(?i)((password|passwd|token|secret|credentials?|nkey|seed|private_?key|database_url|dsn)_FILE|_CREDS)$`)
)

// minSecretLen is the shortest Secret value CheckManifestSecrets looks for
// elsewhere: shorter ones (user names, database names) appear legitimately.
const minSecretLen = 12

// CheckManifestSecrets returns a problem for every secret value that would
// be readable outside a Secret: env values of secret-named variables, URLs
// with passwords in env, args or ConfigMaps, Secrets written with stringData
// (plain text in the manifest), any value of a rendered Secret that shows up
// in another object (a ConfigMap, an env value, an argument, an annotation),
// and secret files (…_PASSWORD_FILE, …_CREDS) that are not on a read-only
// Secret mount.
func CheckManifestSecrets(objs []*unstructured.Unstructured, pods []PodTemplate) []string {
	problems := checkSecretValuesLeak(objs)
	for _, p := range pods {
		problems = append(problems, checkSecretFiles(p)...)
	}
	for _, o := range objs {
		id := o.GetKind() + "/" + o.GetName()
		switch o.GetKind() {
		case "Secret":
			if _, ok := o.Object["stringData"]; ok {
				problems = append(problems, id+" uses stringData: secret values in plain text")
			}
		case "ConfigMap":
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for k, v := range data {
				if userinfoURL.MatchString(v) {
					problems = append(problems, fmt.Sprintf("%s key %s holds a URL with a password", id, k))
				}
			}
		}
	}
	for _, p := range pods {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			where := fmt.Sprintf("%s container %s", p.Object, c.Name)
			for _, e := range c.Env {
				if e.Value != "" && secretName.MatchString(e.Name) && !strings.HasSuffix(e.Name, "_FILE") {
					problems = append(problems, fmt.Sprintf("%s env %s has a literal value; use valueFrom.secretKeyRef", where, e.Name))
				}
				if userinfoURL.MatchString(e.Value) {
					problems = append(problems, fmt.Sprintf("%s env %s holds a URL with a password", where, e.Name))
				}
			}
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				if userinfoURL.MatchString(a) || argHoldsSecret(a) {
					problems = append(problems, fmt.Sprintf("%s argument %q holds a secret; pass it as a file or from a Secret", where, a))
				}
			}
		}
	}
	return problems
}

// checkSecretValuesLeak looks for the decoded values of every rendered
// Secret in every other rendered object.
func checkSecretValuesLeak(objs []*unstructured.Unstructured) []string {
	secrets := map[string]string{} // value → Secret/name key
	for _, o := range objs {
		if o.GetKind() != "Secret" {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for k, v := range data {
			b, err := base64.StdEncoding.DecodeString(v)
			// Multi-line values (a whole configuration file) are containers
			// of secrets, not secrets; their parts are checked on their own.
			if err != nil || len(b) < minSecretLen || strings.ContainsAny(string(b), "\n") {
				continue
			}
			secrets[string(b)] = fmt.Sprintf("Secret/%s key %s", o.GetName(), k)
		}
	}
	var problems []string
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			continue
		}
		raw, err := json.Marshal(o.Object)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s/%s: %v", o.GetKind(), o.GetName(), err))
			continue
		}
		for v, from := range secrets {
			if strings.Contains(string(raw), v) {
				problems = append(problems, fmt.Sprintf("%s/%s holds the value of %s in plain text", o.GetKind(), o.GetName(), from))
			}
		}
	}
	return problems
}

// checkSecretFiles: every variable naming a secret file points into a
// read-only mount of a Secret volume (secret, or projected from Secrets only).
func checkSecretFiles(p PodTemplate) []string {
	secretVolumes := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			secretVolumes[v.Name] = true
		case v.Projected != nil:
			only := len(v.Projected.Sources) > 0
			for _, src := range v.Projected.Sources {
				only = only && src.Secret != nil
			}
			secretVolumes[v.Name] = only
		}
	}
	var problems []string
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		for _, e := range c.Env {
			if !secretFileEnv.MatchString(e.Name) {
				continue
			}
			onSecret := false
			for _, m := range c.VolumeMounts {
				if m.ReadOnly && secretVolumes[m.Name] && strings.HasPrefix(e.Value, strings.TrimSuffix(m.MountPath, "/")+"/") {
					onSecret = true
				}
			}
			if !onSecret {
				problems = append(problems, fmt.Sprintf("%s container %s env %s = %q is not a file on a read-only Secret mount", p.Object, c.Name, e.Name, e.Value))
			}
		}
	}
	return problems
}

// argHoldsSecret: --password=x, --write-token=x, --database-url=x; but not
// --token-file=x or --token-audience=x, whose last word says what they hold.
func argHoldsSecret(arg string) bool {
	name, value, ok := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	if !ok || value == "" || !strings.HasPrefix(arg, "-") {
		return false
	}
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	last := words[len(words)-1]
	return secretWord[last] || strings.HasSuffix(strings.ToLower(name), "database-url") || strings.HasSuffix(strings.ToLower(name), "dsn")
}

// secretWord: a flag whose name ends in one of these holds a secret.
var secretWord = map[string]bool{"password": true, "passwd": true, "token": true, "secret": true,
	"credential": true, "credentials": true, "key": true, "apikey": true, "dsn": true}

// CheckValuesSecrets walks a values tree and returns a problem for every
// secret-named setting with a non-empty literal value: secrets belong in
// Secrets, referenced by name.
func CheckValuesSecrets(values map[string]any) []string {
	var problems []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, sub := range t {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, sub)
			}
		case []any:
			for i, sub := range t {
				walk(fmt.Sprintf("%s[%d]", path, i), sub)
			}
		case string:
			last := path[strings.LastIndex(path, ".")+1:]
			if userinfoURL.MatchString(t) {
				problems = append(problems, fmt.Sprintf("value %s holds a URL with a password", path))
			} else if t != "" && secretName.MatchString(last) && !refName.MatchString(last) {
				problems = append(problems, fmt.Sprintf("value %s looks like a plain-text secret", path))
			}
		}
	}
	walk("", values)
	return problems
}
