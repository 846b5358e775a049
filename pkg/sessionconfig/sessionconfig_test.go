package sessionconfig_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/sessionconfig"
)

func TestKnobNamesAreUnique(t *testing.T) {
	t.Parallel()
	envs, flags := map[string]bool{}, map[string]bool{}
	for _, k := range sessionconfig.Knobs() {
		if !strings.HasPrefix(k.Env, "SESSIONBOX_") || envs[k.Env] || flags[k.Flag] || k.Flag == "" || k.Usage == "" {
			t.Errorf("knob %+v: a variable SESSIONBOX_*, a flag and a usage, each its own", k)
		}
		envs[k.Env], flags[k.Flag] = true, true
	}
}

// TestLookups: a flag given wins over the environment and is named in
// errors as a flag; unset knobs fall through to the next lookup.
func TestLookups(t *testing.T) {
	t.Parallel()
	env := map[string]string{sessionconfig.EnvIdleSecs: "600", sessionconfig.EnvLifetimeSecs: "7200", sessionconfig.EnvInternet: "true"}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	knobs := sessionconfig.AddFlags(fs)
	if err := fs.Parse([]string{"--idle-timeout-secs", "60", "--internet=false"}); err != nil {
		t.Fatal(err)
	}
	c, err := sessionconfig.Load(knobs.Over(sessionconfig.FromEnv(func(k string) string { return env[k] })), sessionconfig.Lambda)
	if err != nil || c.IdleTimeout != time.Minute || c.Lifetime != 2*time.Hour || c.AllowInternetAccess {
		t.Fatalf("%+v %v", c, err)
	}
	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	knobs = sessionconfig.AddFlags(fs)
	if err := fs.Parse([]string{"--reap-batch", "many"}); err != nil {
		t.Fatal(err)
	}
	_, err = sessionconfig.Load(knobs.Over(sessionconfig.FromEnv(func(string) string { return "" })), sessionconfig.Local)
	if err == nil || !strings.Contains(err.Error(), `--reap-batch: "many"`) {
		t.Fatalf("err %v", err)
	}
	for d, want := range map[sessionconfig.Deployment]bool{sessionconfig.Lambda: true, sessionconfig.Local: false} {
		c, err := sessionconfig.Load(sessionconfig.FromEnv(func(string) string { return "" }), d)
		if err != nil || c.AllowInternetAccess != want || d.InternetByDefault() != want {
			t.Errorf("deployment %d: internet %v, want %v (%v)", d, c.AllowInternetAccess, want, err)
		}
	}
}
