package e2btest_test

import (
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/e2b"
	"github.com/sessionbox/sessionbox/pkg/e2b/e2btest"
)

func TestCloud(t *testing.T) {
	tests := []struct {
		name, target, key string
		wantCloud         bool
		wantErr           string
	}{
		{"unset", "", "e2b_k", false, ""},
		{"local", "local", "e2b_k", false, ""},
		{"cloud", "cloud", "e2b_k", true, ""},
		{"cloud without a key", "cloud", "", false, "needs E2B_API_KEY"},
		{"unknown target", "staging", "e2b_k", false, `"staging": want local or cloud`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(e2btest.Env, tt.target)
			t.Setenv("E2B_API_KEY", tt.key)
			t.Setenv("E2B_DOMAIN", "example.test")
			t.Setenv("E2B_API_URL", "")
			t.Setenv("E2B_SANDBOX_URL", "")
			cfg, cloud, err := e2btest.Cloud()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || cloud != tt.wantCloud || cloud != e2btest.IsCloud() {
				t.Fatalf("Cloud() = %+v, %v, %v", cfg, cloud, err)
			}
			if cloud && (cfg.APIKey != tt.key || cfg.Domain != "example.test") {
				t.Errorf("config %+v", cfg)
			}
			local := e2b.Config{APIKey: "e2b_local"}
			if got := e2btest.Config(t, func() e2b.Config { return local }); got.APIKey != map[bool]string{true: tt.key, false: "e2b_local"}[cloud] {
				t.Errorf("Config() = %+v", got)
			}
		})
	}
}
