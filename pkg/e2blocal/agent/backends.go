package agent

import (
	"fmt"
	"os"
	"sort"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/envd"
	"github.com/sessionbox/sessionbox/pkg/e2blocal/kernel"
)

func newEnvd(cfg Config) (backend, error) {
	srv, err := envd.New(envd.Config{
		User: cfg.User, Home: cfg.Home, Env: cfg.Env, AccessToken: cfg.AccessToken,
		Shell: cfg.Shell, MaxOutputBytes: cfg.MaxOutputBytes,
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
	env := os.Environ()
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+cfg.Env[k])
	}
	srv, err := kernel.New(kernel.Config{
		Python: cfg.Python, Workdir: cfg.Home, Env: env, MaxOutputBytes: cfg.MaxOutputBytes,
		AccessToken: cfg.AccessToken, Compiled: cfg.KernelCompiled,
	})
	if err != nil {
		return nil, fmt.Errorf("build kernel server: %w", err)
	}
	return srv, nil
}
