// Package e2blocal is a local E2B-compatible sandbox runtime: E2B's
// control-plane REST API on one address, every sandbox's envd and code
// interpreter behind one routing address, and sandboxes as bubblewrap
// process trees whose init is this binary re-executed as the agent
// (RunAgentIfRequested, package agent).
//
// A sandbox is one bwrap tree: new user, pid, net, ipc, uts, mount and
// cgroup namespaces; uid 1000 "user" inside, an unprivileged host uid
// outside (its own per sandbox when the runtime is root); a generated /etc;
// read-only /usr and merged-usr symlinks; a private /home/user on the host
// and a size-capped /tmp; no network. Limits: memory, tasks and CPU through
// cgroups (v1 or v2) when the runtime can manage them, and always rlimits
// (core 0, file size, open files, processes; data size without cgroups).
// Pause freezes the tree (cgroup freezer, else SIGSTOP); kill kills it and
// removes its data; the runtime dying takes every tree with it.
//
// Facts about the host this relies on, checked on Debian bookworm with
// kernel 6.18 and bubblewrap 0.8 (each is repeated where the code uses it):
//   - Unprivileged user namespaces work for non-root uids, so bwrap (not
//     setuid) runs as the sandbox's host uid and maps it to 1000 inside.
//     Started as root it would map the sandbox user to host root instead.
//   - bwrap resolves bind sources with realpath as that uid, so bound
//     paths must be traversable by it (layout.go); --bind-fd does not help.
//   - cgroup v1 here (memory, pids, cpu, freezer); root may create groups
//     below its own. Attaching a task costs ~1.5 ms (RCU grace period), so
//     bwrap is born in its group (v1 "tasks" on the spawning thread, v2
//     CLONE_INTO_CGROUP) and trees are spawned ahead into a warm pool.
//   - RLIMIT_NPROC is counted per user namespace (ucounts), so it bounds
//     one sandbox even when all share the runtime's uid.
//   - Go aborts when it cannot create a thread; the agent reserves its
//     threads before sandboxed code can exhaust task or memory limits.
//   - No pasta/slirp4netns is installed, so there is no safe way to give a
//     sandbox internet access without exposing the host's loopback:
//     allow_internet_access=true is refused with 400.
package e2blocal
