package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// An export that fails after its first byte must not look complete: the
// connection is cut without the final chunk and the client reads an
// error, never a short file that parses. Before the first byte, the
// failure is an ordinary JSON error. The store's failure is played by
// handing endExport an error (a store cannot be made to fail between two
// pages from outside the process without racing it).
func TestExportFailureCutsTheStream(t *testing.T) {
	s := New(Config{Logger: slog.New(slog.DiscardHandler)})
	for _, sent := range []int{0, 100 << 10} {
		h := s.recoverer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ew := &exportWriter{w: w, contentType: "text/csv", filename: "x.csv"}
			if sent > 0 {
				_, _ = ew.Write(make([]byte, sent))
				http.NewResponseController(w).Flush()
			}
			s.endExport(ew, r, errors.New("store gone"))
		}))
		srv := httptest.NewServer(h)
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		srv.Close()
		switch {
		case sent == 0:
			var e errorBody
			if err != nil || resp.StatusCode != http.StatusInternalServerError || json.Unmarshal(body, &e) != nil || e.Error.Code != "internal" {
				t.Errorf("failure before the first byte: %d %v %s", resp.StatusCode, err, body)
			}
		case err == nil:
			t.Errorf("failure after %d bytes: the client read %d bytes and no error", sent, len(body))
		}
	}
}
