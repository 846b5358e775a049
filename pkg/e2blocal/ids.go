package e2blocal

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
)

// idAlphabet is what E2B uses for sandbox IDs: lower-case letters and digits
// only, because the sandbox host `<port>-<id>.<domain>` is split on '-'.
const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// idLen matches E2B's 20-character sandbox IDs.
const idLen = 20

var validID = regexp.MustCompile(`^[a-z0-9]{1,64}$`)

// newSandboxID returns a random 20-character [a-z0-9] ID. The modulo bias
// of 256 % 36 is irrelevant for identifiers that only need to be unique.
func newSandboxID() (string, error) {
	var raw [idLen]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("read random bytes for sandbox id: %w", err)
	}
	out := make([]byte, idLen)
	for i, b := range raw {
		out[i] = idAlphabet[int(b)%len(idAlphabet)]
	}
	return string(out), nil
}

// newHostKey names a sandbox's host-side files and cgroup (sandbox.hostKey).
func newHostKey() (string, error) {
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("read random bytes for sandbox host key: %w", err)
	}
	return "s" + hex.EncodeToString(raw[:]), nil
}

// newAccessToken returns the envd access token handed out for secured sandboxes.
func newAccessToken() (string, error) {
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("read random bytes for access token: %w", err)
	}
	return hex.EncodeToString(raw[:]), nil
}

// NewAPIKey returns a fresh control-API key of E2B's shape (e2b_ and 40 hex
// digits), for a runtime whose caller did not choose one.
func NewAPIKey() (string, error) {
	var raw [20]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("read random bytes for API key: %w", err)
	}
	return "e2b_" + hex.EncodeToString(raw[:]), nil
}
