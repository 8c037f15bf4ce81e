package resultsclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Origin says who refused a request.
type Origin int

// Who answered.
const (
	// FromResultsAPI: results-api's JSON error ({"error":{code,message}}).
	FromResultsAPI Origin = iota
	// FromAPIServer: the Kubernetes API server's Status (the service proxy
	// itself refused: authentication, RBAC, no Service, no endpoints).
	FromAPIServer
	// FromUnknown: neither, e.g. an ingress or proxy in between.
	FromUnknown
)

// DefaultAudience is the audience results-api's read tokens must carry
// unless its --token-audience says otherwise.
const DefaultAudience = "crowsnest-results-api"

// Error is a non-2xx answer, with a message that says what to do.
type Error struct {
	Status  int
	Origin  Origin
	Code    string // results-api's error code, or the API server's reason
	Message string // what the server said
	Path    string

	namespace string
	client    *Client
}

// IsNotFound reports whether err is results-api's 404 for a resource (a
// report or vulnerability it does not have, or that the caller may not
// read: out-of-scope reads are 404).
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Origin == FromResultsAPI && e.Status == http.StatusNotFound && !e.routeMissing()
}

// IsRouteMissing reports whether err is results-api's 404 for a route it
// does not serve (an older results-api).
func IsRouteMissing(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.routeMissing()
}

func (e *Error) routeMissing() bool {
	return e.Origin == FromResultsAPI && e.Status == http.StatusNotFound && e.Message == "no such route"
}

type statusBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Details struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
	} `json:"details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *Client) newError(req Request, status int, body []byte) *Error {
	e := &Error{Status: status, Origin: FromUnknown, Path: req.Path, namespace: req.Namespace, client: c}
	var b statusBody
	if json.Unmarshal(body, &b) == nil {
		switch {
		case b.Kind == "Status":
			e.Origin, e.Code, e.Message = FromAPIServer, b.Reason, b.Message
		case b.Error != nil:
			e.Origin, e.Code, e.Message = FromResultsAPI, b.Error.Code, b.Error.Message
		}
	}
	if e.Origin == FromUnknown {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "…"
		}
	}
	return e
}

func (e *Error) scope() string {
	if e.namespace == "" {
		return "cluster-wide"
	}
	return "in namespace " + e.namespace
}

// Error says what went wrong and how to fix it.
func (e *Error) Error() string {
	svc := e.client.svc
	if e.Origin == FromAPIServer && svc != nil {
		return e.apiServerMessage(*svc)
	}
	switch e.Status {
	case http.StatusUnauthorized:
		if svc != nil {
			// The API server drops the caller's Authorization header
			// before proxying, so results-api never sees who asks.
			return fmt.Sprintf("results-api refused the request without credentials (401 %s %s): the API server's service proxy does not pass "+
				"your credentials on to results-api, so a results-api with --read-auth=kubernetes (the chart's default) cannot be read through it; "+
				"use `kubectl port-forward -n %s svc/%s 8080:%s` and `kubectl crowsnest --server http://127.0.0.1:8080 --token TOKEN …` "+
				"with a token for results-api's audience (e.g. `kubectl create token SERVICE-ACCOUNT --audience %s`)",
				e.Code, e.Message, svc.Namespace, svc.Name, svc.Port, DefaultAudience)
		}
		return fmt.Sprintf("results-api at %s refused the credentials (401 %s %s): pass --token with a token for results-api's audience "+
			"(e.g. `kubectl create token SERVICE-ACCOUNT --audience %s`)", e.client.Target(), e.Code, e.Message, DefaultAudience)
	case http.StatusForbidden:
		return fmt.Sprintf("your credentials cannot read Crowsnest reports %s (403 %s); ask your cluster admin for the crowsnest-view role", e.scope(), e.Message)
	case http.StatusNotFound:
		if e.routeMissing() {
			return fmt.Sprintf("results-api (%s) does not serve %s: it is older than this plugin; upgrade results-api", e.client.Target(), e.Path)
		}
		return fmt.Sprintf("not found %s (404 %s): it does not exist, or your credentials cannot read it", e.scope(), e.Message)
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return fmt.Sprintf("results-api is busy or unavailable (%d %s %s); retry later", e.Status, e.Code, e.Message)
	case http.StatusBadRequest:
		return fmt.Sprintf("results-api refused the request %s (400 %s: %s)", e.Path, e.Code, e.Message)
	}
	return fmt.Sprintf("results-api (%s) answered %s with HTTP %d: %s", e.client.Target(), e.Path, e.Status, e.Message)
}

func (e *Error) apiServerMessage(svc Service) string {
	switch e.Status {
	case http.StatusUnauthorized:
		return fmt.Sprintf("the Kubernetes API server rejected your credentials (401 %s): log in again, or check --kubeconfig and --context", e.Message)
	case http.StatusForbidden:
		return fmt.Sprintf("your credentials cannot read Crowsnest reports %s: the API server refused to proxy to service %s/%s (403: %s); "+
			"reading through kubectl needs `get` on `services/proxy` for that Service — ask your cluster admin for the crowsnest-view role",
			e.scope(), svc.Namespace, svc.Name, e.Message)
	case http.StatusNotFound:
		return fmt.Sprintf("service %s/%s not found (%s): point --service and --service-namespace at results-api's Service "+
			"(find it with `kubectl get services -A -l app.kubernetes.io/component=results-api`), or use --server URL",
			svc.Namespace, svc.Name, e.Message)
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return fmt.Sprintf("the API server cannot reach results-api through service %s/%s port %q (%d: %s): check that results-api is running "+
			"and ready, and that --service-port names the Service's port (the chart's is http, or https with TLS)",
			svc.Namespace, svc.Name, svc.Port, e.Status, e.Message)
	}
	return fmt.Sprintf("the API server answered %s for service %s/%s with HTTP %d: %s", e.Path, svc.Namespace, svc.Name, e.Status, e.Message)
}
