// Package lambdaenvtest holds what both pkg/lambdaenv's tests and the
// real-stack tests (e2e) use: loopback stand-ins for the AWS services the
// functions call that have no emulator here, and checks of their logs.
package lambdaenvtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// NoDuplicateKeys fails when a JSON log line names a key twice at its top
// level: readers disagree on which value wins.
func NoDuplicateKeys(t testing.TB, logs string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		if _, err := dec.Token(); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			name := k.(string)
			if seen[name] {
				t.Fatalf("log line names %q twice: %s", name, line)
			}
			seen[name] = true
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
		}
	}
}

// EventBridge is a loopback EventBridge that keeps what PutEvents sends:
// the project has no EventBridge emulator, and the functions' client must
// still go through the SDK, its endpoint variable and its wire format.
type EventBridge struct {
	// URL is the endpoint, for AWS_ENDPOINT_URL_EVENTBRIDGE.
	URL string
	mu  sync.Mutex
	put []PutEntry
}

// PutEntry is one event PutEvents received.
type PutEntry struct {
	EventBusName string
	Source       string
	DetailType   string
	Detail       string
}

// NewEventBridge serves an EventBridge until t ends.
func NewEventBridge(t testing.TB) *EventBridge {
	eb := &EventBridge{}
	srv := httptest.NewServer(awsJSON(t, map[string]func([]byte) (any, int){
		"AWSEvents.PutEvents": func(body []byte) (any, int) {
			var in struct{ Entries []PutEntry }
			if err := json.Unmarshal(body, &in); err != nil {
				return map[string]string{"__type": "ValidationException", "message": err.Error()}, http.StatusBadRequest
			}
			eb.mu.Lock()
			defer eb.mu.Unlock()
			var out []map[string]string
			for _, e := range in.Entries {
				eb.put = append(eb.put, e)
				out = append(out, map[string]string{"EventId": "ev-" + strings.Repeat("0", len(eb.put))})
			}
			return map[string]any{"Entries": out, "FailedEntryCount": 0}, http.StatusOK
		},
	}))
	t.Cleanup(srv.Close)
	eb.URL = srv.URL
	return eb
}

// Entries returns the events of one detail type put so far.
func (eb *EventBridge) Entries(detailType string) []PutEntry {
	eb.mu.Lock()
	defer eb.mu.Unlock()
	var out []PutEntry
	for _, e := range eb.put {
		if e.DetailType == detailType {
			out = append(out, e)
		}
	}
	return out
}

// SecretsManager is a loopback Secrets Manager serving fixed secrets.
type SecretsManager struct {
	// URL is the endpoint, for AWS_ENDPOINT_URL_SECRETS_MANAGER.
	URL     string
	mu      sync.Mutex
	reads   int
	secrets map[string]string
}

// NewSecretsManager serves secrets (ARN to value) until t ends.
func NewSecretsManager(t testing.TB, secrets map[string]string) *SecretsManager {
	sm := &SecretsManager{secrets: secrets}
	srv := httptest.NewServer(awsJSON(t, map[string]func([]byte) (any, int){
		"secretsmanager.GetSecretValue": func(body []byte) (any, int) {
			var in struct{ SecretId string }
			_ = json.Unmarshal(body, &in)
			sm.mu.Lock()
			sm.reads++
			v, ok := sm.secrets[in.SecretId]
			sm.mu.Unlock()
			if !ok {
				return map[string]string{"__type": "ResourceNotFoundException", "message": "no secret " + in.SecretId}, http.StatusBadRequest
			}
			return map[string]string{"ARN": in.SecretId, "Name": "e2b", "SecretString": v, "VersionId": "v1"}, http.StatusOK
		},
	}))
	t.Cleanup(srv.Close)
	sm.URL = srv.URL
	return sm
}

// Set changes a secret's value, as put-secret-value does.
func (sm *SecretsManager) Set(arn, v string) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.secrets[arn] = v
}

// Count is how many secrets were read so far.
func (sm *SecretsManager) Count() int {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.reads
}

// awsJSON serves the AWS JSON 1.1 protocol: the operation is the
// X-Amz-Target header, and requests must be signed.
func awsJSON(t testing.TB, ops map[string]func([]byte) (any, int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		body, _ := io.ReadAll(r.Body)
		op, ok := ops[r.Header.Get("X-Amz-Target")]
		switch {
		case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDLOCAL/"):
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"__type":"UnrecognizedClientException","message":"unsigned request"}`))
			return
		case !ok:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"UnknownOperationException"}`))
			return
		}
		out, status := op(body)
		w.WriteHeader(status)
		if err := json.NewEncoder(w).Encode(out); err != nil {
			t.Errorf("encode %s answer: %v", r.Header.Get("X-Amz-Target"), err)
		}
	})
}
