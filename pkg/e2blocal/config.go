package e2blocal

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/sessionbox/sessionbox/pkg/diskspace"
	"github.com/sessionbox/sessionbox/pkg/httplimits"
)

// Config configures a runtime. Zero values take the defaults named per field.
type Config struct {
	APIAddr     string // control plane, e.g. "127.0.0.1:3000"; ":0" picks a port
	SandboxAddr string // sandbox routing address, e.g. "127.0.0.1:3002"
	DataDir     string // sandbox homes and runtime state
	APIKey      string // when set, the only accepted X-API-Key
	// Templates names templates beside the built-in base and
	// code-interpreter-v1: name -> the built-in one it runs as (templates.go),
	// or the path of its definition file (templatedef.go).
	Templates map[string]string
	// HTTPLimits bound the control API's and the sandbox proxy's clients
	// (header and body read times, header size, open connections).
	HTTPLimits httplimits.Limits

	// Agent is the executable each sandbox runs as its init (and as its
	// sudo): cmd/sessionbox-agent, whose main calls agentinit.RunIfRequested.
	// Default "": this process's own binary, re-executed, whose main must
	// then call RunAgentIfRequested.
	Agent       string
	Bwrap       string // bubblewrap binary, default /usr/bin/bwrap
	Python      string // interpreter inside sandboxes, default /usr/bin/python3
	Slirp4netns string // user-mode network for allowInternetAccess, default slirp4netns from PATH
	Nft         string // nftables' nft, which enforces the egress policy, default nft from PATH
	// InternetAllow opens these prefixes to sandboxes with internet
	// access, which otherwise reach public addresses only (egress.go,
	// pkg/netpolicy): an internal mirror or proxy, say.
	InternetAllow  []netip.Prefix
	UIDBase        int    // first host uid for sandboxes when running as root, default 200000
	UIDCount       int    // size of that range, default 50000; user's uids are the next UIDCount (root inside runs as the leased uid)
	MemoryBytes    int64  // per-sandbox memory limit (cgroup), default 512 MiB
	Pids           int64  // per-sandbox task limit (cgroup), default 512
	CPUPercent     int    // per-sandbox CPU quota, 100 = one core, default 100
	TmpBytes       int64  // size of the private /tmp, default 256 MiB
	MaxFileBytes   int64  // RLIMIT_FSIZE, default 1 GiB
	MaxOpenFiles   uint64 // RLIMIT_NOFILE, default 4096
	MaxOutputBytes int64  // per process / execution output cap, default envd's and kernel's own
	DiskMB         int    // size of each sandbox's /home/user image (when root with mkfs.ext4 and loop devices), default 10240; negative keeps homes plain, unlimited dirs
	WarmPool       int    // sandbox trees spawned ahead of demand, default 2; negative disables
	// WarmPoolMax is the most trees the pool grows to after a burst of
	// creates: it keeps as many as the largest burst (creates within one
	// second) of the last WarmPoolWindow, between WarmPool and this;
	// default 10 (never less than WarmPool). Each idle tree is ~22 MB RSS
	// with the dedicated agent (Agent), ~32 MB when this binary is the agent.
	WarmPoolMax int
	// WarmPoolWindow is how long a burst keeps the pool grown, default
	// 10 minutes.
	WarmPoolWindow time.Duration
	MaxSandboxes   int // live (running or paused) sandboxes at once, default 500; creates past it get E2B's 429
	// MaxLifetime is the plan's maximum sandbox timeout (E2B: 1 h on Base,
	// 24 h on Pro): a create, connect, resume or set-timeout asking for
	// more gets E2B's 400. Default 24 h.
	MaxLifetime time.Duration
	// CreateRate caps creates per second over both create endpoints (E2B:
	// 1 on Base, 5 on Pro); past it a create gets E2B's 429 with
	// Retry-After. Default 0: no cap.
	CreateRate float64
	// OldAPI makes the control plane an older E2B's: OldAPIV1 or
	// OldAPIResume (apilimits.go). Default "": the current API.
	OldAPI string
	// StartTimeout bounds the steps of a sandbox's start: a create's wait
	// for a spawned tree when the pool is empty, its agent's configuration,
	// its network. A create that runs out of it gets 503 with Retry-After
	// (the host is overloaded). Default 15 s.
	StartTimeout     time.Duration
	DefaultV1Timeout time.Duration // create v1 without timeout, default 15 s
	DefaultV2Timeout time.Duration // create v2 and connect v2 without timeout, default 300 s
	// NoSeccomp starts sandboxes without their seccomp filter (jail/seccomp.go);
	// it exists to measure the filter's cost and to diagnose a workload it
	// refuses, never for production.
	NoSeccomp bool
	// SpaceCheck, when set, is asked before each create and each upload
	// to a sandbox's envd; while it fails they get 507 Insufficient Storage
	// with its message, so a full host disk refuses new work instead of
	// being filled (`sessionbox runtime` keeps a free-space floor on its
	// data dir with it).
	SpaceCheck func() error
	// HomeFloor, when set, admits a new image home only while the file
	// system the homes are on (Dir is ignored: the runtime measures where
	// it keeps them, which may be the system temp dir) keeps the floor
	// after every home, the new one included, grew to DiskMB. Past it a
	// create gets 507 naming the floor. Nil admits every home.
	HomeFloor *diskspace.Floor
	// RecoverHomes, when set, is a metadata key: a runtime that starts
	// after one that died (SIGKILL, a crash) keeps the homes its created
	// sandboxes left (images, or plain dirs when homes are not images),
	// and a create whose metadata names one of their sandbox ids under
	// this key gets that home, its files given to the new sandbox's user,
	// instead of an empty one; its metadata keeps the key only then, so a
	// GET of the sandbox says whether it did. "" removes them at start.
	RecoverHomes string
	// OrphanTTL is how long a home kept under RecoverHomes waits for its
	// create (default 24 h): the runtime knows nothing of the sessions
	// that may ask, so past it the home goes, and with it what an image
	// counts against HomeFloor. Homes nobody adopted go at Close too.
	OrphanTTL time.Duration
	// Logger receives what the runtime reports about the host (limits it
	// cannot enforce) and sandboxes that die on their own; default
	// slog.Default().
	Logger *slog.Logger

	cgroupV2Root    string        // a unified hierarchy to use instead of the host's own (tests on hybrid hosts)
	metricsInterval time.Duration // how often running sandboxes are sampled, default 5 s (tests shorten it)
}

// Old API generations the runtime can pretend to be (Config.OldAPI).
const (
	// OldAPIV1 serves no POST /v2/sandboxes nor /v2/sandboxes/{id}/connect:
	// creates go to POST /sandboxes, connects to /sandboxes/{id}/connect.
	OldAPIV1 = "v1"
	// OldAPIResume also drops POST /sandboxes/{id}/connect, leaving the
	// deprecated resume, as E2B's API before connect existed.
	OldAPIResume = "resume"
)
