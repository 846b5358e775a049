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
// It comes in two parts, each a JSON value on the pipe: the runtime's
// settings as the tree is spawned (Env, AccessToken and PrewarmKernel
// empty), then the sandbox's Assignment when a create takes the tree,
// which may wait in the warm pool in between.
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
	// StandbyKernel starts the default kernel as soon as the first part
	// arrives, so it is up by the time a create takes the tree; a sandbox
	// that does not prewarm its kernel discards it.
	StandbyKernel bool `json:"standbyKernel"`
	// Template is what the sandbox's template runs at start.
	Template TemplateStart `json:"template"`
}

// TemplateStart is a template's start: E2B's startCmd, readyCmd, user and
// workdir. The agent starts StartCmd once it serves, then runs ReadyCmd
// until it exits 0, and only then reports readiness.
type TemplateStart struct {
	StartCmd string `json:"startCmd,omitempty"`
	ReadyCmd string `json:"readyCmd,omitempty"`
	User     string `json:"user,omitempty"`    // "" the default user
	Workdir  string `json:"workdir,omitempty"` // default cwd of commands; made when missing
}

// Assignment is the second part of the config: what belongs to one sandbox.
type Assignment struct {
	Env           map[string]string `json:"env"`
	AccessToken   string            `json:"accessToken"`
	PrewarmKernel bool              `json:"prewarmKernel"`
	Template      TemplateStart     `json:"template"`
}

// Assign returns the config of the sandbox a.
func (c Config) Assign(a Assignment) Config {
	c.Env, c.AccessToken, c.PrewarmKernel, c.Template = a.Env, a.AccessToken, a.PrewarmKernel, a.Template
	return c
}

// UserID is `user`'s uid and gid inside every sandbox.
const UserID = 1000

// Rlimit is one resource limit (resource number from golang.org/x/sys/unix).
type Rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// ConfigReader reads the two parts of the config from the runtime's pipe.
type ConfigReader struct{ dec *json.Decoder }

// NewConfigReader reads from r.
func NewConfigReader(r io.Reader) *ConfigReader { return &ConfigReader{dec: json.NewDecoder(r)} }

// Base reads the first part.
func (cr *ConfigReader) Base() (Config, error) {
	var cfg Config
	if err := cr.dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("decode agent config: %w", err)
	}
	return cfg, nil
}

// Assignment reads the second part, blocking until a create sends it.
func (cr *ConfigReader) Assignment() (Assignment, error) {
	var a Assignment
	if err := cr.dec.Decode(&a); err != nil {
		return Assignment{}, fmt.Errorf("decode sandbox assignment: %w", err)
	}
	return a, nil
}
