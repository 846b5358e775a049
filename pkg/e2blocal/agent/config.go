//go:build linux

// Package agent is the in-sandbox init process of an e2blocal sandbox: the
// sessionbox binary re-executed inside bubblewrap. It serves envd's protocol
// and the code interpreter on one unix socket that the runtime proxies to.
package agent

import (
	"encoding/json"
	"fmt"
	"io"
)

// Config is what the runtime hands the agent over an inherited pipe (never
// the command line or the environment, which sandboxed code could read).
type Config struct {
	User           string            `json:"user"`           // default user, "user"
	Home           string            `json:"home"`           // its home and default cwd
	Shell          string            `json:"shell"`          // "/bin/bash"
	Python         string            `json:"python"`         // kernel interpreter
	Env            map[string]string `json:"env"`            // sandbox-global env vars
	AccessToken    string            `json:"accessToken"`    // envd and interpreter token; empty = open
	MaxOutputBytes int64             `json:"maxOutputBytes"` // per process / execution
	Rlimits        []Rlimit          `json:"rlimits"`        // applied to the agent, inherited by everything it starts
	PrewarmKernel  bool              `json:"prewarmKernel"`  // start Python once ready (code-interpreter templates)
	KernelCompiled string            `json:"kernelCompiled"` // the kernel as a .pyc; "" feeds Python its source
	// ServeLoopback also serves envd and the interpreter on their ports of
	// the sandbox's own loopback, as E2B does, so commands inside reach them.
	ServeLoopback bool `json:"serveLoopback"`
	// WithRoot says the agent runs as root inside the sandbox, which also
	// has `user` (uid and gid UserID): commands and kernels run as user
	// unless a request names root, and sudo works.
	WithRoot bool `json:"withRoot"`
}

// UserID is `user`'s uid and gid inside every sandbox.
const UserID = 1000

// Rlimit is one resource limit (resource number from golang.org/x/sys/unix).
type Rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// ReadConfig decodes the config the runtime wrote.
func ReadConfig(r io.Reader) (Config, error) {
	var cfg Config
	if err := json.NewDecoder(r).Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("decode agent config: %w", err)
	}
	return cfg, nil
}
