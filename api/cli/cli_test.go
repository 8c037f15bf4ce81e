package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestEnvDefaults(t *testing.T) {
	if EnvDuration("90s", time.Second) != 90*time.Second || EnvDuration("", time.Second) != time.Second || EnvDuration("soon", time.Second) != time.Second {
		t.Error("EnvDuration")
	}
	if EnvInt("12", 3) != 12 || EnvInt("", 3) != 3 || EnvInt("1e3", 3) != 3 {
		t.Error("EnvInt")
	}
	if !EnvBool("true", false) || EnvBool("0", true) || !EnvBool("", true) || EnvBool("maybe", false) {
		t.Error("EnvBool")
	}
}

func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	l, err := NewLogger("warn", "text", &b)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown", "k", "v")
	if got := b.String(); strings.Contains(got, "hidden") || !strings.Contains(got, "level=WARN msg=shown k=v") {
		t.Errorf("text log %q", got)
	}
	b.Reset()
	l, err = NewLogger("info", "json", &b)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("x")
	if !strings.HasPrefix(b.String(), `{"time":`) || !strings.Contains(b.String(), `"msg":"x"`) {
		t.Errorf("json log %q", b.String())
	}
	if _, err := NewLogger("loud", "json", &b); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("bad level: %v", err)
	}
	if _, err := NewLogger("info", "xml", &b); err == nil || !strings.Contains(err.Error(), `--log-format "xml"`) {
		t.Errorf("bad format: %v", err)
	}
}
