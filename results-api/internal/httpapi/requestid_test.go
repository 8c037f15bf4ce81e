package httpapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
)

// syncBuffer is a log destination the server's goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRequestIDFromClientIsBounded plays a client that sends hostile
// X-Request-Id values (the header reaches every log line of the request,
// the response header and error bodies): kilobytes, a C1 control sequence,
// a bidirectional override, forged log fields. Each is replaced by a
// generated ID; a well-formed one is kept, so callers can still correlate.
func TestRequestIDFromClientIsBounded(t *testing.T) {
	logs := &syncBuffer{}
	c := newClient(t, apitest.WithLogger(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	safe := regexp.MustCompile(`^[A-Za-z0-9._~:/+=-]{1,64}$`)

	for name, sent := range map[string]string{
		"10 KB":            strings.Repeat("A", 10<<10),
		"65 characters":    strings.Repeat("a", 65),
		"C1 CSI":           "id\u009b2J\u009b31m",
		"bidi override":    "id\u202egnp.exe",
		"forged log field": `id" level=ERROR msg="admin token leaked`,
		"spaces":           "two words",
	} {
		t.Run(name, func(t *testing.T) {
			code, body, got := c.requestWithID(sent)
			if code != http.StatusNotFound {
				t.Fatalf("GET a missing route: %d", code)
			}
			if got == sent || !safe.MatchString(got) {
				t.Fatalf("X-Request-Id answered %.80q for %.80q sent: want a generated one", got, sent)
			}
			var e struct {
				Error struct {
					RequestID string `json:"requestId"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.RequestID != got {
				t.Fatalf("error body %s: want requestId %q", body, got)
			}
			if strings.Contains(logs.String(), sent) {
				t.Fatalf("the sent ID %.80q reached the logs", sent)
			}
			if !strings.Contains(logs.String(), `"request_id":"`+got+`"`) {
				t.Fatalf("the generated ID %q is not in the logs:\n%s", got, logs.String())
			}
		})
	}
	for _, sent := range []string{"4bf92f3577b34da6a3ce929d0e0e4736", "trace-01:span/2+x=~y_z.1", strings.Repeat("b", 64)} {
		if _, _, got := c.requestWithID(sent); got != sent {
			t.Errorf("well-formed ID %q answered as %q", sent, got)
		}
	}
}

// requestWithID GETs a route that does not exist (an error body carries the
// request ID) with the given X-Request-Id.
func (c *client) requestWithID(id string) (code int, body []byte, answered string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.srv.URL+"/api/v1/no-such-route", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("X-Request-Id", id)
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes(), resp.Header.Get("X-Request-Id")
}
