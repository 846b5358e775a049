package e2e

import (
	"errors"
	"strings"
	"testing"

	"github.com/sessionbox/sessionbox/pkg/session"
)

// hijackWalker plants, as the sandbox's user may, every way the checkpoint
// walker's python3 could be swapped for one that floods the listing with 3
// million entries: a usercustomize.py and a sitecustomize.py in the user's
// site dir, a .pth file, a python3 earlier on PATH set from ~/.profile, and
// a shell function in ~/.bash_profile. Each leaves a mark in /tmp if it runs.
const hijackWalker = `
import os, site, stat
flood = '''
import sys
if any(a.startswith('/tmp/.sessionbox-walk-') for a in sys.argv):
    open('/tmp/hijacked-MARK', 'w').close()
    with open([a for a in sys.argv if a.startswith('/tmp/.sessionbox-walk-')][0], 'w') as o:
        for i in range(3000000):
            o.write('{"path": "f%d", "type": "f", "size": 1, "mode": 420, "mtimeNs": 1, "sha256": "%s"}\\n' % (i, 'a' * 64))
    sys.exit(0)
'''
sp = site.getusersitepackages()
os.makedirs(sp, exist_ok=True)
open(os.path.join(sp, 'usercustomize.py'), 'w').write(flood.replace('MARK', 'usercustomize'))
open(os.path.join(sp, 'sitecustomize.py'), 'w').write(flood.replace('MARK', 'sitecustomize'))
open(os.path.join(sp, 'zz-hijack.pth'), 'w').write('import usercustomize\n')
os.makedirs('.local/bin', exist_ok=True)
open('.local/bin/python3', 'w').write('#!/bin/sh\ntouch /tmp/hijacked-path\nexec /usr/bin/python3 -c "$(cat <<\'EOF\'\n' + flood.replace('MARK', 'path') + '\nEOF\n)" "$@"\n')
os.chmod('.local/bin/python3', 0o755)
open('.profile', 'w').write('export PATH="$HOME/.local/bin:$PATH"\n')
open('.bash_profile', 'w').write('. ~/.profile\npython3() { touch /tmp/hijacked-function; command python3 "$@"; }\nenv() { touch /tmp/hijacked-env; command env "$@"; }\n')
'ok'
`

// TestWorkspaceWalkIsolated: with every hijack of hijackWalker planted, a
// checkpoint lists the real workspace (none of the hijacks ran, no flood),
// and a workspace past the entries cap gets a 429 naming the cap while the
// session stays usable and its last good checkpoint is what a fresh
// sandbox gets back.
func TestWorkspaceWalkIsolated(t *testing.T) {
	t.Parallel()
	r := newWSRig(t, session.Config{MaxWorkspaceEntries: 200}, "ws-hijack")
	ctx := t.Context()
	if got := r.text(hijackWalker); got != "ok" {
		t.Fatalf("planting the hijacks: %q", got)
	}
	r.exec("open('keep.txt', 'w').write('last good')")
	info, err := r.m.Checkpoint(ctx, r.key)
	if err != nil {
		t.Fatalf("checkpoint with the hijacks planted: %v", err)
	}
	if info.Files > 20 {
		t.Fatalf("checkpoint listed %d files: a hijack flooded the listing", info.Files)
	}
	if got := r.text("import glob\n','.join(sorted(glob.glob('/tmp/hijacked-*')))"); got != "" {
		t.Fatalf("hijacks ran in the walker: %s", got)
	}

	// Past the entries cap: a clear limit, the session still works.
	r.exec("import os\nos.makedirs('many', exist_ok=True)\nfor i in range(300): open('many/%d' % i, 'w').close()")
	_, err = r.m.Checkpoint(ctx, r.key)
	var e *session.Error
	if !errors.As(err, &e) || e.Kind != session.ErrLimit || !strings.Contains(e.Detail, "MaxWorkspaceEntries") {
		t.Fatalf("checkpoint past the entries cap: %v, want ErrLimit naming MaxWorkspaceEntries", err)
	}
	st, err := r.m.Status(ctx, r.key)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.CheckpointProblem, "MaxWorkspaceEntries") {
		t.Errorf("status checkpointProblem %q does not name the cap", st.CheckpointProblem)
	}
	if got := r.text("1+1"); got != "2" {
		t.Fatalf("session after the refused checkpoint: %q", got)
	}
	// Stop checkpoints first, fails the same way, and stops anyway; the
	// next call gets the last good checkpoint back.
	if _, err := r.m.Stop(ctx, r.key); err != nil {
		t.Fatalf("stop with an oversized workspace: %v", err)
	}
	res := r.exec("open('keep.txt').read()")
	if res.Restored == nil || len(res.Results) == 0 || strings.Trim(res.Results[0].Text, "'") != "last good" {
		t.Fatalf("after stop: restored %+v, results %+v", res.Restored, res.Results)
	}
}
