//go:build linux

package sudo

import (
	"slices"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args    []string
		argv    []string
		login   bool
		shell   bool
		keepEnv bool
		user    string
		noop    bool
		err     string
	}{
		{args: []string{"whoami"}, argv: []string{"whoami"}, user: "root"},
		{args: []string{"-E", "env"}, argv: []string{"env"}, keepEnv: true, user: "root"},
		{args: []string{"-n", "-H", "--", "-x"}, argv: []string{"-x"}, user: "root"},
		{args: []string{"-i"}, login: true, user: "root"},
		{args: []string{"-s", "echo", "$HOME"}, argv: []string{"echo", "$HOME"}, shell: true, user: "root"},
		{args: []string{"-u", "root", "id"}, argv: []string{"id"}, user: "root"},
		{args: []string{"-uroot", "id"}, argv: []string{"id"}, user: "root"},
		{args: []string{"-nE", "ls", "-l"}, argv: []string{"ls", "-l"}, keepEnv: true, user: "root"},
		{args: []string{"-k"}, noop: true, user: "root"},
		{args: []string{"-u"}, err: "requires an argument"},
		{args: []string{"-Z", "x"}, err: "-Z is not supported"},
		{args: []string{"--login"}, err: "--login is not supported"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			o, err := parseArgs(c.args)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.argv, c.argv) || o.login != c.login || o.shell != c.shell ||
				o.keepEnv != c.keepEnv || o.user != c.user || o.noop != c.noop {
				t.Fatalf("got %+v", o)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	env := []string{"PATH=/bin", "HOME=/home/user", "USER=user", "SECRET=x", "LC_ALL=C", "TERM=xterm"}
	cases := []struct {
		name    string
		o       options
		argv    []string
		dir     string
		has     []string
		hasNot  []string
		errPart string
	}{
		{name: "plain", o: options{user: "root", argv: []string{"id"}}, argv: []string{"id"}, dir: "/tmp",
			has: []string{"HOME=/root", "USER=root", "PATH=/bin", "LC_ALL=C", "TERM=xterm"}, hasNot: []string{"SECRET=x", "HOME=/home/user"}},
		{name: "keep env", o: options{user: "root", keepEnv: true, argv: []string{"id"}}, argv: []string{"id"}, dir: "/tmp",
			has: []string{"SECRET=x", "HOME=/root"}, hasNot: []string{"USER=user"}},
		{name: "login", o: options{user: "root", login: true, argv: []string{"pwd"}}, argv: []string{"/bin/bash", "-l", "-c", "pwd"}, dir: "/root"},
		{name: "shell", o: options{user: "root", shell: true}, argv: []string{"/bin/bash"}, dir: "/tmp"},
		{name: "no command", o: options{user: "root"}, errPart: "usage"},
		{name: "other user", o: options{user: "nobody", argv: []string{"id"}}, errPart: "unknown user"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			argv, out, dir, err := c.o.commandLine(env, "/tmp")
			if c.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), c.errPart) {
					t.Fatalf("err %v, want %q", err, c.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(argv, c.argv) || dir != c.dir {
				t.Fatalf("argv %q dir %q", argv, dir)
			}
			for _, kv := range c.has {
				if !slices.Contains(out, kv) {
					t.Errorf("env lacks %s: %q", kv, out)
				}
			}
			for _, kv := range c.hasNot {
				if slices.Contains(out, kv) {
					t.Errorf("env has %s: %q", kv, out)
				}
			}
		})
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	if p, err := lookPath("sh", []string{"PATH=/nonexistent:/bin"}); err != nil || p != "/bin/sh" {
		t.Fatalf("sh: %q %v", p, err)
	}
	if _, err := lookPath("no-such-command-e2b", []string{"PATH=/bin"}); err == nil || !strings.Contains(err.Error(), "command not found") {
		t.Fatalf("missing command: %v", err)
	}
	if p, _ := lookPath("./x", nil); p != "./x" {
		t.Fatalf("a path is kept: %q", p)
	}
}
