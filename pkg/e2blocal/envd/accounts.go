//go:build linux

package envd

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem/filesystemconnect"
)

// Account is one user of the sandbox that requests may name.
type Account struct {
	UID, GID uint32
	Home     string
}

type accountKey struct{}

// lockedKey marks a request whose goroutine holds its thread with the
// account's file system identity (asAccount), the only place asServer may
// switch it.
type lockedKey struct{}

// actsAsAccount reports a request running with its account's fsuid on a
// locked thread.
func actsAsAccount(ctx context.Context) bool {
	locked, _ := ctx.Value(lockedKey{}).(bool)
	return locked
}

// account is the user a request acts as: the Basic user of a Connect call
// or the username of a /files call, the default user when it names none.
// ok is false when the server has no accounts (a single-user sandbox).
func (s *Server) account(ctx context.Context) (name string, a Account, ok bool) {
	name, _ = ctx.Value(accountKey{}).(string)
	if name == "" {
		name = s.cfg.User
	}
	a, ok = s.cfg.Accounts[name]
	return name, a, ok
}

// requestUser is the user name a request carries, "" for the default.
func requestUser(r *http.Request) string {
	if name, _, ok := r.BasicAuth(); ok {
		return name
	}
	return r.URL.Query().Get("username")
}

// asAccount runs each request with the file system identity of the account
// it names, so files it creates are that account's and its permission
// checks are that account's: the server runs as root inside the sandbox
// when the sandbox has accounts. fsuid and fsgid are per thread, so the
// request's goroutine is locked to its thread meanwhile; moving fsuid off 0
// also drops the file capabilities, and moving it back restores them. If
// they cannot be restored the goroutine ends locked, which retires the
// thread.
func (s *Server) asAccount(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := requestUser(r)
		if name == "" {
			name = s.cfg.User
		}
		a, ok := s.cfg.Accounts[name]
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), accountKey{}, name))
		if !touchesFiles(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), lockedKey{}, true))
		runtime.LockOSThread()
		setfs(a.UID, a.GID)
		defer func() {
			setfs(uint32(unix.Geteuid()), uint32(unix.Getegid()))
			gid, gerr := unix.SetfsgidRetGid(-1)
			uid, uerr := unix.SetfsuidRetUid(-1)
			if gerr == nil && uerr == nil && gid == unix.Getegid() && uid == unix.Geteuid() {
				runtime.UnlockOSThread()
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// touchesFiles tells the requests that act on files, all short: process
// calls only need the account (their processes get its credentials), and
// long streams would each hold a locked thread.
func touchesFiles(path string) bool {
	if path == "/files" {
		return true
	}
	return strings.HasPrefix(path, "/"+filesystemconnect.FilesystemName+"/") &&
		path != filesystemconnect.FilesystemWatchDirProcedure
}

// setfs sets the calling thread's fsgid and fsuid; the syscalls cannot
// fail, they only report the previous values.
func setfs(uid, gid uint32) {
	_ = unix.Setfsgid(int(gid))
	_ = unix.Setfsuid(int(uid))
}

// asServer runs f with the server's own file system identity (root in a
// sandbox with accounts) and then returns the thread to account a. Only for
// a request that actsAsAccount: its thread is locked, so the switch cannot
// leak to another goroutine.
func asServer(a Account, f func() error) error {
	setfs(uint32(unix.Geteuid()), uint32(unix.Getegid()))
	defer setfs(a.UID, a.GID)
	return f()
}

// credential is what a process started for the named account runs as; nil
// keeps the server's own identity (single-user sandboxes).
func (s *Server) credential(ctx context.Context) (*syscall.Credential, string, string) {
	name, a, ok := s.account(ctx)
	if !ok {
		return nil, s.cfg.User, s.cfg.Home
	}
	return &syscall.Credential{Uid: a.UID, Gid: a.GID, Groups: []uint32{}}, name, a.Home
}
