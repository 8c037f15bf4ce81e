package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/httpapi"
)

// paddedBOM is a valid BOM of at least size bytes with one finding; the
// bulk is a top-level property whose text compresses as JSON does.
func paddedBOM(size int) []byte {
	bom := bomtest.BOM(bomtest.Vuln{ID: "CVE-2026-0100", Severity: "high", Package: "musl", Version: "1.2"})
	var pad strings.Builder
	for i := 0; pad.Len() < size; i++ {
		fmt.Fprintf(&pad, "pkg:apk/alpine/lib%d@1.%d.%d-r%d ", i%97, i%13, i%7, i%5)
	}
	return append([]byte(`{"properties":[{"name":"padding","value":"`+pad.String()+`"}],`), bom[1:]...)
}

// The BOM download streams: the server allocates a small fraction of the
// BOM to send it (the compressed bytes and the decoder's window), not the
// BOM itself as it did when it decompressed into memory first. Counting
// allocated bytes (TotalAlloc, which no GC timing changes) over the whole
// download makes this deterministic; the bytes still arrive identical.
func TestBOMDownloadStreams(t *testing.T) {
	c := newClient(t)
	bom := paddedBOM(24 << 20)
	d := bomtest.Digest(1)
	if code, b := c.put(d, bom); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, b)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.Get(c.srv.URL + "/api/v1/reports/" + d + "/bom")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	_ = resp.Body.Close()
	runtime.ReadMemStats(&after)
	if err != nil || n != int64(len(bom)) || resp.ContentLength != n {
		t.Fatalf("read %d of %d bytes (Content-Length %d): %v", n, len(bom), resp.ContentLength, err)
	}
	if sum := sha256.Sum256(bom); !bytes.Equal(h.Sum(nil), sum[:]) {
		t.Fatal("downloaded BOM differs from the upload")
	}
	// Client and server share this process: the count covers both, from
	// before the request to the last byte. Decompressing into memory
	// allocated at least the whole BOM; streaming holds the compressed
	// bytes (1.5 MiB here) and a 1 MiB window.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(bom))/3 {
		t.Fatalf("the download allocated %d MiB for a %d MiB BOM: not streamed", alloc>>20, len(bom)>>20)
	} else {
		t.Logf("the download allocated %.1f MiB for a %d MiB BOM", float64(alloc)/(1<<20), len(bom)>>20)
	}
}

// A download the read budget cannot admit within the wait gets 503 busy
// with Retry-After while another holds the budget; it succeeds after.
func TestReadBudgetRefuses(t *testing.T) {
	c := newClient(t, withLimits(httpapi.Limits{ReadMemory: 1 << 20, MemoryWait: 200 * time.Millisecond}))
	bom := paddedBOM(24 << 20)
	d := bomtest.Digest(1)
	if code, b := c.put(d, bom); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, b)
	}
	// A client that stops reading: the download stays in flight.
	stalled, err := http.Get(c.srv.URL + "/api/v1/reports/" + d + "/bom")
	if err != nil {
		t.Fatal(err)
	}
	code, b := c.do(http.MethodGet, "/api/v1/reports/"+d+"/bom", nil)
	if code != http.StatusServiceUnavailable || errorCode(t, b) != "busy" {
		t.Fatalf("second download while the first holds the budget: %d %.200s", code, b)
	}
	if code, b := c.do(http.MethodGet, "/api/v1/reports/"+d, nil); code != http.StatusServiceUnavailable {
		t.Fatalf("report detail while a download holds the budget: %d %.200s", code, b)
	}
	_ = stalled.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, raw := c.do(http.MethodGet, "/api/v1/reports/"+d+"/bom", nil)
		if code == http.StatusOK && bytes.Equal(raw, bom) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("download after the stalled one closed: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Per-route deadlines: a body that stalls is cut off at its route's
// deadline (short for the lookup, longer for an upload); a slow reader of
// a BOM download gets all of it past the ordinary deadline, and a
// WebSocket outlives every deadline.
func TestRouteDeadlines(t *testing.T) {
	const short, upload = 300 * time.Millisecond, 1500 * time.Millisecond
	c := newClient(t, withLimits(httpapi.Limits{RequestTimeout: short, UploadTimeout: upload, DownloadTimeout: time.Minute}))
	addr := strings.TrimPrefix(c.srv.URL, "http://")

	stall := func(req string) time.Duration {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, _ = io.Copy(io.Discard, conn) // until the server closes
		return time.Since(start)
	}
	lookup := "POST /api/v1/reports/lookup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"digests\":"
	if d := stall(lookup); d < short || d > short+3*time.Second {
		t.Errorf("stalled lookup body closed after %v, want about %v", d, short)
	}
	put := "PUT /api/v1/reports/" + bomtest.Digest(9) + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + c.srv.Token +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"bomFormat\":"
	if d := stall(put); d < upload || d > upload+3*time.Second {
		t.Errorf("stalled upload body closed after %v, want about %v", d, upload)
	}

	// A second server, with the default upload deadline: storing a 24 MiB
	// BOM takes longer than 1.5 s with the race detector on.
	c = newClient(t, withLimits(httpapi.Limits{RequestTimeout: short, DownloadTimeout: time.Minute}))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.srv.URL, "http")+"/api/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	time.Sleep(2 * short)

	// The BOM: bigger than the socket buffers, so the server's writes
	// block while the client waits longer than the ordinary deadline.
	bom := paddedBOM(24 << 20)
	d := bomtest.Digest(1)
	if code, b := c.put(d, bom); code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", code, b)
	}
	resp, err := http.Get(c.srv.URL + "/api/v1/reports/" + d + "/bom")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(4 * short)
	got, err := io.ReadAll(bufio.NewReader(resp.Body))
	if err != nil || !bytes.Equal(got, bom) {
		t.Fatalf("slow download: %d of %d bytes, %v", len(got), len(bom), err)
	}

	// The WebSocket, opened before the upload, still receives its event.
	_, msg, err := ws.Read(ctx)
	if err != nil || !strings.Contains(string(msg), d) {
		t.Fatalf("WebSocket after %v: %v %.200s", 6*short, err, msg)
	}
}
