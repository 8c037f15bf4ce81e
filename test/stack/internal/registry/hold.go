package registry

import (
	"net/http"
	"strings"
	"sync"
)

// holds is the registry's own way to hold a scan mid-way, as a slow or
// stalled registry does in a cluster: a GET of a held manifest (Grype
// pulls the scanned image by digest) waits until its release. The kubelet
// never pulls the scanned images (only Grype does), so holding them stalls
// exactly the scan Pod's Grype while its Pod, token and Job are live.
type holds struct {
	mu      sync.Mutex
	gates   map[string]chan struct{} // digest → closed on release
	waiting map[string]int           // digest → requests waiting now
}

// Hold makes GETs of the manifest with digest wait until release is
// called (release is idempotent; Close releases every hold).
func (r *Registry) Hold(digest string) (release func()) {
	r.holds.mu.Lock()
	defer r.holds.mu.Unlock()
	if r.holds.gates == nil {
		r.holds.gates = map[string]chan struct{}{}
	}
	gate, ok := r.holds.gates[digest]
	if !ok {
		gate = make(chan struct{})
		r.holds.gates[digest] = gate
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			r.holds.mu.Lock()
			defer r.holds.mu.Unlock()
			if r.holds.gates[digest] == gate {
				delete(r.holds.gates, digest)
				close(gate)
			}
		})
	}
}

// Held tells how many manifest requests wait on a hold of digest right now
// (a test waits for Grype to be stalled there before it acts).
func (r *Registry) Held(digest string) int {
	r.holds.mu.Lock()
	defer r.holds.mu.Unlock()
	return r.holds.waiting[digest]
}

func (r *Registry) releaseAll() {
	r.holds.mu.Lock()
	defer r.holds.mu.Unlock()
	for d, g := range r.holds.gates {
		close(g)
		delete(r.holds.gates, d)
	}
}

// holding wraps the registry handler with the holds.
func (r *Registry) holding(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			if i := strings.LastIndex(req.URL.Path, "/manifests/"); i >= 0 {
				digest := req.URL.Path[i+len("/manifests/"):]
				r.holds.mu.Lock()
				gate := r.holds.gates[digest]
				if gate != nil {
					if r.holds.waiting == nil {
						r.holds.waiting = map[string]int{}
					}
					r.holds.waiting[digest]++
				}
				r.holds.mu.Unlock()
				if gate != nil {
					select {
					case <-gate:
					case <-req.Context().Done():
					}
					r.holds.mu.Lock()
					r.holds.waiting[digest]--
					r.holds.mu.Unlock()
				}
			}
		}
		next.ServeHTTP(w, req)
	})
}
