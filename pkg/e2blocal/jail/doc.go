// Package jail is the local runtime's Linux isolation engine: it builds and
// launches one sandbox as a bubblewrap process tree with the agent as its
// init (launch.go: namespaces, binds, capabilities, rlimits), maps the
// sandbox's ids (idmap.go, with host uids leased from a pool shared by
// runtimes, uids.go), confines it with a seccomp filter (seccomp.go) and a
// cgroup of its own (cgroup.go over v1 or v2), gives it a generated /etc
// (etcgen.go) and, when it can, an ext4 image as its home (homeimg.go), and
// lays out the runtime's files on the host (layout.go). Trees are started
// from one locked OS thread (spawner.go), so a death signal follows the
// runtime and a v1 cgroup can be entered before exec.
//
// It knows nothing of sandboxes' lifecycles, the E2B API or the warm pool:
// package e2blocal drives it. It exports what e2blocal calls, and what
// e2blocal's runtime tests inspect (the concrete cgroup groups, mount
// parsing, the /etc lists); tests of jail alone live here. Only this package
// implements Cgroup (its startIn is unexported). Everything here but this
// file is Linux-only.
package jail
