package dbserve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

// ImportPath is the admin endpoint for uploading a DB archive.
const ImportPath = "/api/v1/vulndb/import"

// DefaultMaxUpload caps an uploaded archive unless told otherwise.
const DefaultMaxUpload = 2 << 30

// Errors an Authorizer returns.
var (
	// ErrUnauthenticated: the token is not valid (401).
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: the token is valid but may not import DBs (403).
	ErrForbidden = errors.New("forbidden")
)

// Authorizer decides whether a bearer token may import DBs: results-api's
// admin token, or a TokenReview and SubjectAccessReview. It returns nil,
// ErrUnauthenticated, ErrForbidden, or another error when it cannot decide
// (answered 503).
type Authorizer interface {
	AuthorizeImport(ctx context.Context, token string) error
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, token string) error

// AuthorizeImport calls f.
func (f AuthorizerFunc) AuthorizeImport(ctx context.Context, token string) error {
	return f(ctx, token)
}

// Importer imports an archive (a *vulndb.Store).
type Importer interface {
	CreateTemp() (*os.File, error)
	Import(ctx context.Context, path string, o vulndb.ImportOptions) (vulndb.DB, error)
	Active() (vulndb.DB, bool)
}

// ImportHandler accepts POST ImportPath with a DB archive as the body
// (application/octet-stream) from an authorized admin. Query parameters:
// force=true activates a build that is not newer; checksum=sha256:<hex>
// must match the body. It answers 200 with the active DB as JSON, 401/403,
// 409 for a build not newer than the active one, 413 over the size cap and
// 422 for an archive that is not a usable DB.
type ImportHandler struct {
	Store Importer
	// Auth is required: a nil Auth refuses every request.
	Auth Authorizer
	// MaxBytes caps the body; zero means DefaultMaxUpload.
	MaxBytes int64
	Logger   *slog.Logger
}

// ImportResponse is the body of a successful import.
type ImportResponse struct {
	DB        vulndb.DB `json:"db"`
	Activated bool      `json:"activated"`
}

func (h *ImportHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if !h.authorize(w, r) {
		return
	}
	limit := h.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxUpload
	}
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, "archive over "+strconv.FormatInt(limit, 10)+" bytes")
		return
	}
	force, _ := strconv.ParseBool(r.URL.Query().Get("force"))
	path, err := h.receive(w, r, limit)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "archive over "+strconv.FormatInt(limit, 10)+" bytes")
			return
		}
		h.logger().Warn("receive DB upload", "error", err)
		writeError(w, http.StatusBadRequest, "could not read the upload")
		return
	}
	defer os.Remove(path) // moved away once imported
	before, _ := h.Store.Active()
	db, err := h.Store.Import(r.Context(), path, vulndb.ImportOptions{
		Checksum: r.URL.Query().Get("checksum"),
		Force:    force,
		Source:   "upload",
		Move:     true,
	})
	if err != nil {
		code := statusOf(err)
		if code == http.StatusInternalServerError {
			h.logger().Error("import uploaded DB", "error", err)
			writeError(w, code, "import failed")
			return
		}
		writeError(w, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ImportResponse{DB: db, Activated: db.ID != before.ID})
}

func (h *ImportHandler) authorize(w http.ResponseWriter, r *http.Request) bool {
	token, ok := bearer(r)
	if !ok || h.Auth == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="crowsnest-matcher"`)
		writeError(w, http.StatusUnauthorized, "bearer token required")
		return false
	}
	err := h.Auth.AuthorizeImport(r.Context(), token)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrUnauthenticated):
		w.Header().Set("WWW-Authenticate", `Bearer realm="crowsnest-matcher", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "invalid token")
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, "not allowed to import vulnerability DBs")
	default:
		h.logger().Error("authorize DB upload", "error", err)
		writeError(w, http.StatusServiceUnavailable, "cannot check the token now")
	}
	return false
}

func (h *ImportHandler) receive(w http.ResponseWriter, r *http.Request, limit int64) (string, error) {
	f, err := h.Store.CreateTemp()
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, http.MaxBytesReader(w, r.Body, limit))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, vulndb.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, vulndb.ErrNotNewer):
		return http.StatusConflict
	case vulndb.Refused(err):
		return http.StatusUnprocessableEntity
	default:
		return http.StatusInternalServerError
	}
}

func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (h *ImportHandler) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}
