package session

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// InstallRequest asks for Python packages in a session's sandbox.
type InstallRequest struct {
	Packages []string
	// IndexURL replaces PyPI: an http(s) URL of a package index.
	IndexURL string
}

// InstallResult is how a pip install ended.
type InstallResult struct {
	Success    bool
	ExitCode   int
	Stdout     string
	Stderr     string
	DurationMs int64
	Truncated  bool
	Restarted  bool
	// Restored is set when this call's fresh sandbox got files back.
	Restored *RestoreInfo
}

// maxPackages bounds one install.
const maxPackages = 100

// Install pip-installs packages into the sandbox, streaming pip's output to
// onEvent. Every spec is validated and every argument shell-quoted, so
// nothing a caller sends can become an option or a shell word. Where the
// system interpreter is externally managed (PEP 668), it installs for the
// sandbox user instead; pip's refusal is then replaced, in the stream and
// the result, by a one-line note. A failed install from PyPI in a
// deployment whose sandboxes are offline ends with a note saying so.
func (m *Manager) Install(ctx context.Context, key Key, req InstallRequest, onEvent func(Event)) (*InstallResult, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	if err := validateInstall(req); err != nil {
		return nil, err
	}
	var out *InstallResult
	var restored *RestoreInfo
	restarted, err := m.withSandbox(ctx, key, nil, func(ctx context.Context, s *Session) (bool, error) {
		restored = cmpOr(s.Restored, restored)
		sink := m.newOutputSink(onEvent)
		sink.begin()
		start := m.clock.Now()
		first := &pep668Filter{next: sink.event}
		res, err := m.runPip(ctx, s.SandboxID, installCommand(req, false), first.event)
		first.flush()
		note := ""
		if err == nil && res.ExitCode != 0 && strings.Contains(res.Stderr, pep668Marker) {
			note = pep668Note
			sink.event(Event{Stderr: note})
			res, err = m.runPip(ctx, s.SandboxID, installCommand(req, true), sink.event)
		}
		if err != nil {
			return !sink.started(), fmt.Errorf("pip install in sandbox %s: %w", s.SandboxID, err)
		}
		hint := ""
		if res.ExitCode != 0 && req.IndexURL == "" && !m.cfg.AllowInternetAccess {
			// pip's own words are retries and name-resolution errors.
			hint = offlineNote
			sink.event(Event{Stderr: hint})
		}
		r := sink.finish(&ExecResult{Stdout: res.Stdout, Stderr: note + res.Stderr + hint})
		out = &InstallResult{Success: res.ExitCode == 0, ExitCode: res.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr,
			DurationMs: m.clock.Now().Sub(start).Milliseconds(), Truncated: r.Truncated}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	out.Restarted = restarted
	out.Restored = restored
	return out, nil
}

// runPip runs one pip command. The provider enforces the time limit
// itself; the context's deadline is the backstop for a provider that stops
// answering.
func (m *Manager) runPip(ctx context.Context, id, cmd string, onEvent func(Event)) (ShellOutcome, error) {
	cctx, cancel := context.WithTimeout(ctx, m.cfg.ExecTimeout+m.cfg.CallBackstopSlack)
	defer cancel()
	res, err := m.sandboxes.RunCommand(cctx, id, cmd, m.cfg.ExecTimeout, onEvent)
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
		err = &Error{Kind: ErrTimeout, Detail: fmt.Sprintf("pip install did not finish within %s", m.cfg.ExecTimeout), Err: err}
	}
	return res, err
}

// installCommand is the shell command for req. Specs are validated already;
// quoting them anyway keeps the command safe even if validation loosens.
// user installs into the sandbox user's site-packages, overriding PEP 668's
// guard (the sandbox is the user's own, nothing of the system is at stake).
func installCommand(req InstallRequest, user bool) string {
	var b strings.Builder
	if user {
		b.WriteString("PIP_BREAK_SYSTEM_PACKAGES=1 ")
	}
	b.WriteString("python3 -m pip install --no-input --disable-pip-version-check")
	if user {
		b.WriteString(" --user")
	}
	if req.IndexURL != "" {
		b.WriteString(" --index-url " + shellQuote(req.IndexURL))
	}
	b.WriteString(" --")
	for _, p := range req.Packages {
		b.WriteString(" " + shellQuote(p))
	}
	return b.String()
}

// shellQuote makes s one literal POSIX shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func validateInstall(req InstallRequest) error {
	if len(req.Packages) == 0 {
		return Errorf(ErrInvalid, "packages is empty")
	}
	if len(req.Packages) > maxPackages {
		return Errorf(ErrInvalid, "at most %d packages per install", maxPackages)
	}
	for _, p := range req.Packages {
		if err := ValidatePackageSpec(p); err != nil {
			return err
		}
	}
	if req.IndexURL != "" {
		return ValidateIndexURL(req.IndexURL)
	}
	return nil
}

// ValidateIndexURL accepts an http or https URL of a package index with a
// host, and nothing a shell would read specially.
func ValidateIndexURL(raw string) error {
	if len(raw) > 2048 || strings.ContainsAny(raw, shellChars+" \t\r\n") {
		return Errorf(ErrInvalid, "indexUrl must be a plain http(s) URL without spaces or shell characters")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Errorf(ErrInvalid, "indexUrl must be an http(s) URL with a host")
	}
	return nil
}

// pip's first line of stderr when PEP 668 guards the interpreter, and the
// line the live stream and the result get in its place.
const (
	pep668Marker = "externally-managed-environment"
	pep668Note   = "note: the system Python is externally managed; installing for the sandbox user\n"
	offlineNote  = "note: sandboxes here have no internet access, so PyPI is out of reach; " +
		"pass an indexUrl the sandbox can reach, or turn internet access on\n"
	// maxHeldStderr bounds the stderr held back before a first newline.
	maxHeldStderr = 4 << 10
)

// pep668Filter holds back the first attempt's stderr until its first line
// shows whether pip refused an externally managed interpreter. A refusal
// is dropped (the retry follows, announced by a note), so it neither
// reaches the caller nor uses the output budget; anything else goes on.
type pep668Filter struct {
	mu      sync.Mutex
	next    func(Event)
	held    strings.Builder
	decided bool
	refused bool
}

func (f *pep668Filter) event(e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case e.Stderr == "":
		f.next(e)
	case f.refused:
	case f.decided:
		f.next(e)
	default:
		f.held.WriteString(e.Stderr)
		if strings.Contains(f.held.String(), "\n") || f.held.Len() >= maxHeldStderr {
			f.decide()
		}
	}
}

// flush settles stderr still held when the attempt ends.
func (f *pep668Filter) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.decided {
		f.decide()
	}
}

// decide drops held stderr that starts with the refusal and passes on any
// other; the caller holds mu.
func (f *pep668Filter) decide() {
	f.decided = true
	h := f.held.String()
	f.held.Reset()
	if first, _, _ := strings.Cut(h, "\n"); strings.Contains(first, pep668Marker) {
		f.refused = true
		return
	}
	if h != "" {
		f.next(Event{Stderr: h})
	}
}
