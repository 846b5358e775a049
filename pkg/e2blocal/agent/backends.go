//go:build linux

package agent

import (
	"fmt"
	"os"
	"sort"
	"syscall"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/envd"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/kernel"
)

// userCredential is who kernels and default commands run as; nil keeps
// the agent's own identity (sandboxes without root).
func userCredential(cfg Config) *syscall.Credential {
	if !cfg.WithRoot {
		return nil
	}
	return &syscall.Credential{Uid: UserID, Gid: UserID, Groups: []uint32{}}
}

func newEnvd(cfg Config) (*envd.Server, error) {
	var accounts map[string]envd.Account
	if cfg.WithRoot {
		accounts = map[string]envd.Account{
			cfg.User: {UID: UserID, GID: UserID, Home: cfg.Home},
			"root":   {UID: 0, GID: 0, Home: "/root"},
		}
	}
	srv, err := envd.New(envd.Config{
		User: cfg.User, Home: cfg.Home, Env: cfg.Env, AccessToken: cfg.AccessToken,
		Shell: cfg.Shell, MaxOutputBytes: cfg.MaxOutputBytes, Accounts: accounts,
		Workdir: cfg.Template.Workdir,
	})
	if err != nil {
		return nil, fmt.Errorf("build envd server: %w", err)
	}
	return srv, nil
}

// newKernel builds the interpreter server; it starts Python on first use.
// Kernel processes get the agent's clean environment plus the sandbox's
// global env vars, like commands started through envd.
func newKernel(cfg Config) (*kernel.Server, error) {
	srv, err := kernel.New(kernelConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("build kernel server: %w", err)
	}
	return srv, nil
}

func kernelConfig(cfg Config) kernel.Config {
	env := os.Environ()
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+cfg.Env[k])
	}
	return kernel.Config{
		Python: cfg.Python, Workdir: cfg.Home, Env: env, MaxOutputBytes: cfg.MaxOutputBytes,
		AccessToken: cfg.AccessToken, Compiled: cfg.KernelCompiled, Credential: userCredential(cfg),
	}
}

// Standby applies base's rlimits and, when base asks for it, starts the
// default kernel ahead of the sandbox's assignment; nil when it does not.
func Standby(base Config) (*kernel.Standby, error) {
	if err := applyRlimits(base.Rlimits); err != nil {
		return nil, err
	}
	if !base.StandbyKernel {
		return nil, nil
	}
	base.Env, base.AccessToken = nil, ""
	return kernel.StartStandby(kernelConfig(base)), nil
}
