package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateSessionID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id string
		ok bool
	}{
		{"chat-1", true},
		{"A.b_c-9", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"a#b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		err := ValidateSessionID(tt.id)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("ValidateSessionID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
	}
}

func TestValidatePackageSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		ok   bool
	}{
		{"pandas", true},
		{"pandas==2.2.2", true},
		{"Django>=4,<5", true},
		{"requests[socks,security]~=2.31", true},
		{"numpy!=1.0.*", true},
		{"zope.interface===5.0+local", true},
		{"pkg==1!2.0", true},
		{"a", true},
		{"", false},
		{"x; rm -rf /", false},
		{"x;rm", false},
		{"--index-url=http://evil", false},
		{"-e", false},
		{"-r requirements.txt", false},
		{"git+https://github.com/x/y", false},
		{"https://evil/x.whl", false},
		{"../path", false},
		{"./local", false},
		{"/abs/pkg", false},
		{"pkg @ file:///etc/passwd", false},
		{"pkg@file:///x", false},
		{"pandas >= 2", false},
		{"pkg; python_version<'3.8'", false},
		{"$(id)", false},
		{"`id`", false},
		{"pkg|cat", false},
		{"pkg&&x", false},
		{"pkg\nx", false},
		{"pkg==", false},
		{"pkg[", false},
		{"-pkg", false},
		{"pkg-", false},
		{strings.Repeat("a", 201), false},
	}
	for _, tt := range tests {
		err := ValidatePackageSpec(tt.spec)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("ValidatePackageSpec(%q) = %v, want ok=%v", tt.spec, err, tt.ok)
		}
	}
}

func TestCleanPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"a.txt", "/home/user/a.txt", true},
		{"./dir/../b.txt", "/home/user/b.txt", true},
		{"/tmp/x/", "/tmp/x", true},
		{"/", "/", true},
		{"../../etc/passwd", "/etc/passwd", true}, // the sandbox is the user's own
		{"", "", false},
		{"a\x00b", "", false},
		{"a\nb", "", false},
		{"\xff", "", false},
		{strings.Repeat("a", 4097), "", false},
	}
	for _, tt := range tests {
		got, err := CleanPath(tt.in)
		if (err == nil) != tt.ok || got != tt.want || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("CleanPath(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestValidateIndexURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://pypi.example.com/simple/", true},
		{"http://127.0.0.1:8080/simple", true},
		{"ftp://x/simple", false},
		{"file:///srv/wheels", false},
		{"https:///nohost", false},
		{"https://x/simple; rm -rf /", false},
		{"https://x/$(id)", false},
		{"https://x/`id`", false},
		{"https://x/a'b", false},
		{"--index-url", false},
		{"https://x/a\nb", false},
	}
	for _, tt := range tests {
		if err := ValidateIndexURL(tt.url); (err == nil) != tt.ok {
			t.Errorf("ValidateIndexURL(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

func TestStartOptionsValidation(t *testing.T) {
	t.Parallel()
	r := newRig(t, Config{})
	ctx := context.Background()
	bad := []StartOptions{
		{Type: "vm"},
		{Type: TypeCustom},
		{Template: "a b"},
		{IdleTimeoutSecs: -1},
		{IdleTimeoutSecs: int((3 * time.Hour).Seconds())},
		{Envs: map[string]string{"1X": "y"}},
		{Metadata: map[string]string{"k": strings.Repeat("v", 4097)}},
	}
	for _, o := range bad {
		if _, err := r.m.Start(ctx, testKey, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
	s, err := r.m.Start(ctx, testKey, StartOptions{Type: TypeCustom, Template: "my-tpl", IdleTimeoutSecs: 60, Envs: map[string]string{"A": "1"}})
	if err != nil || s.Type != TypeCustom || s.Template != "my-tpl" || s.IdleTimeout != time.Minute {
		t.Fatalf("%+v %v", s, err)
	}
	if spec := r.sbx.specs[0]; spec.Envs["A"] != "1" || spec.Timeout != 3*time.Minute {
		t.Fatalf("spec %+v", spec)
	}
}

func TestNewManagerConfig(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	deps := Deps{Store: newFakeStore(clock), Sandboxes: newFakeSandboxes(clock)}
	if _, err := NewManager(Config{}, Deps{}); err == nil {
		t.Fatal("no deps accepted")
	}
	if _, err := NewManager(Config{LeaseDuration: time.Hour}, deps); err == nil {
		t.Fatal("lease longer than the orphan grace accepted")
	}
	if _, err := NewManager(Config{IdleTimeout: 3 * time.Hour}, deps); err == nil {
		t.Fatal("idle timeout past the lifetime accepted")
	}
	m, err := NewManager(Config{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	if _, err := NewManager(Config{Lifetime: 2 * time.Hour}, deps); err == nil || !strings.Contains(err.Error(), "MaxSandboxLifetime") {
		t.Fatalf("a lifetime past the provider's cap: %v", err)
	}
	if c := newRig(t, Config{MaxSandboxLifetime: 24 * time.Hour}).m.Config(); c.Lifetime != 24*time.Hour {
		t.Fatalf("the lifetime follows the cap by default: %s", c.Lifetime)
	}
	if c.IdleTimeout != 30*time.Minute || c.Lifetime != time.Hour || c.MaxSandboxLifetime != time.Hour || c.ExecTimeout != 5*time.Minute ||
		c.MaxOutputBytes != 200<<10 || c.MaxInlineFileBytes != 4_500_000 || c.ActivityWriteInterval != 30*time.Second ||
		c.TransferTTL != 15*time.Minute || c.DefaultTemplate != "code-interpreter-v1" {
		t.Fatalf("defaults %+v", c)
	}
}
