// Package e2blocal is a local E2B-compatible sandbox runtime: E2B's
// control-plane REST API on one address, every sandbox's envd and code
// interpreter behind one routing address, and sandboxes as bubblewrap
// process trees whose init is the agent (package agent): Config.Agent, a
// build of cmd/sessionbox-agent, or by default this binary re-executed
// (RunAgentIfRequested); package agentinit is the entry both run.
//
// A sandbox is one bwrap tree: new user, pid, net, ipc, uts, mount and
// cgroup namespaces; uid 1000 "user" inside, an unprivileged host uid
// outside (its own per sandbox when the runtime is root). When the runtime
// is root, the sandbox also has root: bwrap waits while the runtime maps
// the leased uid to 0 and the uid UIDCount above it to 1000 (jail/idmap.go);
// the agent runs as root with a few capabilities of that user namespace,
// starts commands and kernels as user unless a request names root, and
// serves sudo (package sudo); /root is a capped tmpfs. Root inside is still
// an unprivileged host uid, and the seccomp filter applies to it. A
// non-root runtime can map one id only, so its sandboxes have user alone.
// Also: a generated /etc; `python` and sudo in /opt/e2b; envd and the
// interpreter on the sandbox's own 127.0.0.1:49983 and :49999;
// read-only /usr and merged-usr symlinks; a read-only /dev of device nodes
// with /dev/pts and a /dev/shm capped like /tmp; a private /home/user on the
// host and a size-capped /tmp; its own network namespace with only lo, unless
// created with allowInternetAccess (below); a seccomp filter that refuses
// namespaces, mounts, io_uring, keyrings, bpf and the like with EPERM
// (jail/seccomp.go). Limits: memory, tasks and CPU through
// cgroups (v1 or v2) when the runtime can manage them, and always rlimits
// (core 0, file size, open files, processes; data size without cgroups);
// the sandboxes of one principal (metadata tenant and principal) split one
// CPU weight among them (cpushare.go);
// at most Config.MaxSandboxes live sandboxes, creates past it get E2B's 429.
// E2B's plan limits can be turned on (apilimits.go): Config.MaxLifetime
// (longer timeouts get E2B's 400), Config.CreateRate (E2B's 429 with
// Retry-After); Config.OldAPI serves an older E2B's control plane without
// the v2 create and connect endpoints.
// Disk: when the runtime is root and has mkfs.ext4 and /dev/loop-control,
// /home/user is the sandbox's own sparse ext4 image of Config.DiskMB,
// owned by its host uid and loop-mounted (nosuid, nodev) on the host dir
// bwrap binds, so filling it gets ENOSPC (507 on upload) inside the sandbox
// and leaves the host's file system alone (jail/homeimg.go). Images are made by
// the warm pool ahead of demand, unmounted and deleted with the sandbox's
// other files (once its tree is gone), at Close, and, for a runtime that
// died, by the next runtime's start. Otherwise (not root, no mkfs.ext4, no
// loop devices, or DiskMB < 0) /home/user is a plain host directory bounded
// only per file by RLIMIT_FSIZE, so a sandbox can fill the file system that
// holds DataDir; the runtime logs this once at start.
// Pause freezes the tree (cgroup freezer, else SIGSTOP); kill kills it and
// removes its data; the runtime dying takes every tree with it. Connect only
// ever extends a running sandbox's life, as E2B's does.
// Metrics: every running sandbox is sampled every 5 s into a ring holding
// the last 30 minutes (metrics_ring.go); GET /sandboxes/{id}/metrics answers
// the samples in [start, end] (unix seconds, both optional), taking a fresh
// one first when the newest is older than the interval. A home that is not
// an image is walked for its disk use at most every 30 s.
// A client in the runtime's own process (local mode's E2B client) uses
// Runtime.Transport instead of the ports: control-plane calls run the API's
// handler in process, and sandbox traffic passes the routing proxy's checks
// and goes straight to the sandbox's socket (inprocess.go).
// Signed file URLs on the bare routing address (the SDK builds them so when
// E2B_SANDBOX_URL is set) name no sandbox: they go to the sandbox whose
// access token verifies the signature, 401 when none does (signedroute.go,
// which bounds the cost of that search).
//
// Facts about the host this relies on, checked on Debian bookworm with
// kernel 6.18 and bubblewrap 0.8 (each is repeated where the code uses it):
//   - Unprivileged user namespaces work for non-root uids, so bwrap (not
//     setuid) runs as the sandbox's host uid and maps it to 1000 inside.
//     Started as root it would map the sandbox user to host root instead.
//   - bwrap resolves bind sources with realpath as that uid, so bound
//     paths must be traversable by it (jail/layout.go); --bind-fd does not help.
//   - cgroup v1 here (memory, pids, cpu, freezer); root may create groups
//     below its own. Attaching another task waits out an RCU grace period
//     (8-13 ms measured), so bwrap is born in its group (v1: the spawning
//     thread writes "0", itself, to "tasks", which skips that wait; v2
//     CLONE_INTO_CGROUP) and trees are spawned ahead into a warm pool.
//   - RLIMIT_NPROC is counted per user namespace (ucounts), so it bounds
//     one sandbox even when all share the runtime's uid.
//   - Go aborts when it cannot create a thread; the agent reserves its
//     threads before sandboxed code can exhaust task or memory limits.
//   - allowInternetAccess attaches slirp4netns (1.2.0) to the sandbox's own
//     network namespace: tap0 with 10.0.2.100/24, a default route via
//     10.0.2.2 and /etc/resolv.conf naming slirp's DNS 10.0.2.3.
//     --disable-host-loopback keeps the host's 127.0.0.1 services out of
//     reach (10.0.2.2 is refused). Before tap0 exists the runtime loads
//     nftables rules into that namespace (egress.go) refusing what
//     pkg/netpolicy refuses (private, link-local, CGNAT, metadata,
//     multicast, ... and so the host's own private addresses) unless
//     Config.InternetAllow opens a prefix; the sandbox has no
//     CAP_NET_ADMIN over its namespace to undo them. /dev/net/tun is root-only here and bwrap nests the
//     sandbox's user namespace, so slirp runs as root, confined by its own
//     --enable-sandbox and --enable-seccomp and by a bwrap of its own (a
//     private pid namespace, empty /run, only resolv.conf in /etc: see
//     slirp.go); a non-root runtime,
//     or one without slirp4netns or nft, refuses allow_internet_access=true with
//     400. Such sandboxes skip the warm pool (their resolv.conf is bound at
//     spawn); slirp is killed with the sandbox, left running across pause.
package e2blocal
