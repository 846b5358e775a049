package agent

import (
	"errors"
	"net/http"
)

// healthOnly answers envd's liveness probe until the envd server is wired in.
type healthOnly struct{}

func (healthOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.NotFound(w, r)
}

func (healthOnly) Close() error { return nil }

func newEnvd(Config) (backend, error) { return healthOnly{}, nil }

func newKernel(Config) (backend, error) {
	return nil, errors.New("not available in this build")
}
