//go:build linux

package e2blocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionbox/sessionbox/pkg/e2blocal/jail"
)

func (c *Config) setDefaults() {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Bwrap == "" {
		c.Bwrap = "/usr/bin/bwrap"
	}
	if c.Python == "" {
		c.Python = "/usr/bin/python3"
	}
	if c.UIDBase == 0 {
		c.UIDBase = 200000
	}
	if c.UIDCount == 0 {
		c.UIDCount = 50000
	}
	def(&c.MemoryBytes, 512<<20)
	def(&c.Pids, 512)
	def(&c.TmpBytes, 256<<20)
	def(&c.MaxFileBytes, 1<<30)
	if c.CPUPercent == 0 {
		c.CPUPercent = 100
	}
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = 4096
	}
	if c.WarmPool == 0 {
		c.WarmPool = 2
	}
	if c.WarmPoolMax == 0 {
		c.WarmPoolMax = 10
	}
	c.WarmPoolMax = max(c.WarmPoolMax, c.WarmPool)
	if c.WarmPoolWindow == 0 {
		c.WarmPoolWindow = 10 * time.Minute
	}
	if c.DiskMB == 0 {
		c.DiskMB = defaultDiskMB
	}
	if c.MaxSandboxes == 0 {
		c.MaxSandboxes = 500
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 15 * time.Second
	}
	if c.DefaultV1Timeout == 0 {
		c.DefaultV1Timeout = 15 * time.Second
	}
	if c.DefaultV2Timeout == 0 {
		c.DefaultV2Timeout = 300 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.OrphanTTL <= 0 {
		c.OrphanTTL = defaultOrphanTTL
	}
	if c.metricsInterval == 0 {
		c.metricsInterval = defaultMetricsInterval
	}
}

// Runtime is a running local E2B runtime.
type Runtime struct {
	cfg     Config
	log     *slog.Logger // cfg.Logger
	envdVer string
	fs      *jail.Layout
	spawn   *jail.Spawner
	cgroups jail.CgroupDriver // nil when cgroups are not manageable
	uids    *jail.UIDPool     // nil when not root: sandboxes run as our own uid
	net     netTools          // slirp4netns, nsenter and nft for internet access
	egress  string            // the nft rules every online sandbox gets (egress.go)
	homes   *jail.HomeImages  // nil when homes are plain, unlimited dirs
	budget  homeBudget        // image homes admitted against Config.HomeFloor
	noNet   error             // why internet access is unavailable, nil when it is
	kernel  string            // host path of the compiled kernel; "" when kernels compile their source
	seccomp []byte            // the sandboxes' seccomp program; nil with Config.NoSeccomp

	ctx    context.Context // ends at Close; parent of timers' work
	cancel context.CancelFunc

	pool       chan *sandbox // warm, unconfigured trees; nil when disabled
	poolWG     sync.WaitGroup
	creating   atomic.Int32 // creates in flight; the pool filler yields to them
	lastCreate atomic.Int64 // unix nanos of the last create's end
	demand     demandMeter  // recent bursts of creates, sizing the pool
	supply     treeSupply   // creates waiting for a tree when the pool is empty
	busy       atomic.Int32 // creates and teardowns under way

	signed *signedRouter // routes signed file URLs that name no sandbox

	// orphanMu keeps an orphan from expiring while a create takes it: a
	// dir half removed must not become a home.
	orphanMu sync.Mutex

	templates templateSet // what creates may name (templates.go)

	mu        sync.Mutex
	sandboxes map[string]*sandbox
	admitted  int // creates past the MaxSandboxes check, not registered yet
	closed    bool

	apiLn, sbLn   net.Listener
	apiSrv, sbSrv *http.Server
	api           http.Handler // what apiSrv serves, for Transport
	serveWG       sync.WaitGroup
	samplerWG     sync.WaitGroup
}

// Start builds the runtime and serves both addresses until Close.
func Start(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Agent == "" && !agentHookCalled.Load() {
		return nil, errNoAgentHook
	}
	cfg.setDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("e2blocal: DataDir is required")
	}
	if _, err := os.Stat(cfg.Bwrap); err != nil {
		return nil, fmt.Errorf("e2blocal: bubblewrap not found: %w", err)
	}
	templates, err := newTemplateSet(cfg.Templates, cfg.Python)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rt := &Runtime{cfg: cfg, log: cfg.Logger, envdVer: envdVersion, ctx: rctx, cancel: cancel, sandboxes: map[string]*sandbox{}, signed: newSignedRouter()}
	rt.templates = templates
	rt.supply.limit = spawnLimit()
	if err := rt.init(); err != nil {
		rt.shutdown()
		return nil, err
	}
	if err := rt.listen(ctx); err != nil {
		rt.shutdown()
		return nil, err
	}
	rt.loadDemand(time.Now())
	rt.startPool()
	rt.samplerWG.Go(func() { rt.sampleMetrics(rt.cfg.metricsInterval) })
	if rt.cfg.RecoverHomes != "" {
		rt.samplerWG.Go(rt.sweepOrphans)
	}
	return rt, nil
}

func (rt *Runtime) init() error {
	// Descriptors this process inherited without close-on-exec (a shell's,
	// the test runner's) would otherwise pass through bwrap into every
	// sandbox (seen: a pipe of `go test` readable at /proc/1/fd inside).
	// Go opens everything else close-on-exec, and exec.Cmd's ExtraFiles
	// are dup'ed past this, so marking them all is safe.
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("mark inherited descriptors close-on-exec: %w", err)
	}
	if _, err := hiddenRoutes(rt.cfg.OldAPI); err != nil {
		return err
	}
	if !rt.cfg.NoSeccomp {
		prog, err := jail.SeccompProgram()
		if err != nil {
			return err
		}
		rt.seccomp = prog
	}
	root := os.Geteuid() == 0
	suffix, err := newSandboxID()
	if err != nil {
		return err
	}
	tag := fmt.Sprintf("%d-%s", os.Getpid(), suffix[:8])
	fs, err := jail.NewLayout(rt.cfg.DataDir, rt.cfg.Agent, tag, root, rt.cfg.RecoverHomes != "", rt.log)
	if err != nil {
		return err
	}
	rt.fs = fs
	for name, t := range rt.templates {
		if err := t.prepareRootfs(fs); err != nil {
			return err
		}
		rt.templates[name] = t
	}
	rt.spawn = jail.NewSpawner()
	// Kernels run bytecode compiled once here rather than compiling their
	// source at every start.
	if rt.kernel, err = fs.CompileKernel(rt.cfg.Python); err != nil {
		rt.log.Warn("e2blocal: kernels compile their source at every start", "error", err)
	}
	rt.net, rt.noNet = netSupport(rt.cfg)
	rt.egress = egressRules(rt.cfg.InternetAllow)
	var why string
	if rt.cfg.DiskMB < 0 {
		rt.log.Warn("e2blocal: sandbox homes are not size-limited", "reason", "DiskMB < 0")
	} else if rt.homes, why = jail.DetectHomeImages(root, rt.cfg.DiskMB, rt.fs.HomeTemplate(), rt.log); rt.homes == nil {
		rt.log.Warn("e2blocal: sandbox homes are not size-limited: a sandbox can fill the file system holding the data dir", "reason", why, "dataDir", rt.cfg.DataDir)
	}
	if root {
		dir, err := jail.UIDLockDir()
		if err != nil {
			return err
		}
		if rt.uids, err = jail.NewUIDPool(rt.cfg.UIDBase, rt.cfg.UIDCount, dir); err != nil {
			return err
		}
	}
	// One parent group per runtime; several runtimes may share a process.
	if cg, err := jail.DetectCgroups(tag, rt.cfg.cgroupV2Root, rt.log); err != nil {
		rt.log.Warn("e2blocal: sandboxes get no cgroup limits: rlimits bound them and pause stops them with SIGSTOP", "error", err)
	} else {
		rt.cgroups = cg
	}
	return nil
}

func (rt *Runtime) listen(ctx context.Context) error {
	var lc net.ListenConfig
	var err error
	if rt.apiLn, err = lc.Listen(ctx, "tcp", rt.cfg.APIAddr); err != nil {
		return fmt.Errorf("listen on API address: %w", err)
	}
	if rt.sbLn, err = lc.Listen(ctx, "tcp", rt.cfg.SandboxAddr); err != nil {
		return fmt.Errorf("listen on sandbox address: %w", err)
	}
	// A stalled client holds a connection only so long, and only so many
	// connections are open at once, so stalls cannot starve real calls.
	rt.api = rt.apiHandler()
	rt.apiSrv = rt.cfg.HTTPLimits.Server(rt.api)
	rt.sbSrv = rt.cfg.HTTPLimits.Server(rt.proxyHandler())
	for _, p := range []struct {
		srv *http.Server
		ln  net.Listener
	}{{rt.apiSrv, rt.apiLn}, {rt.sbSrv, rt.sbLn}} {
		rt.serveWG.Add(1)
		go func() {
			defer rt.serveWG.Done()
			_ = p.srv.Serve(rt.cfg.HTTPLimits.Listener(p.ln))
		}()
	}
	return nil
}

// InternetAccess says why sandboxes cannot be given internet access (the
// runtime is not root, or slirp4netns is missing), nil when they can.
func (rt *Runtime) InternetAccess() error { return rt.noNet }

// APIURL is the control plane's base URL (E2B_API_URL).
func (rt *Runtime) APIURL() string { return "http://" + rt.apiLn.Addr().String() }

// SandboxURL is the sandbox routing base URL (E2B_SANDBOX_URL).
func (rt *Runtime) SandboxURL() string { return "http://" + rt.sbLn.Addr().String() }

// Close kills every sandbox and stops serving.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil
	}
	rt.closed = true
	rt.mu.Unlock()
	if err := rt.saveDemand(); err != nil {
		rt.log.Warn("e2blocal: the next runtime on this data dir will not know the recent bursts", "error", err)
	}
	return rt.shutdown()
}

func (rt *Runtime) shutdown() error {
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range []*http.Server{rt.apiSrv, rt.sbSrv} {
		if srv != nil {
			// Streams to sandboxes may be open; they end when sandboxes die.
			_ = srv.Close()
		}
	}
	rt.serveWG.Wait()
	rt.cancel()
	rt.samplerWG.Wait()
	rt.drainPool()
	errs = append(errs, rt.killAll(ctx))
	// Expiries and creates that were under way when Close began end on
	// their own; their cgroups and dirs must be gone before ours go.
	errs = append(errs, jail.WaitFor(ctx, "sandbox teardowns", func() bool { return rt.busy.Load() == 0 }))
	if rt.spawn != nil {
		rt.spawn.Stop()
	}
	if rt.cgroups != nil {
		errs = append(errs, rt.cgroups.Close())
	}
	if rt.fs != nil {
		errs = append(errs, rt.fs.Close())
	}
	return errors.Join(errs...)
}

func (rt *Runtime) killAll(ctx context.Context) error {
	rt.mu.Lock()
	all := make([]*sandbox, 0, len(rt.sandboxes))
	for _, s := range rt.sandboxes {
		all = append(all, s)
	}
	rt.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.kill(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// diskMB is the disk size sandboxes are told they have; homes kept plain
// on purpose (DiskMB < 0) advertise the default.
func (rt *Runtime) diskMB() int {
	if rt.cfg.DiskMB < 0 {
		return defaultDiskMB
	}
	return rt.cfg.DiskMB
}

const defaultDiskMB = 10240

// defaultOrphanTTL is Config.OrphanTTL's default: a session started again
// within a day of a crash gets its home back; later, its last checkpoint.
const defaultOrphanTTL = 24 * time.Hour

func (rt *Runtime) lookup(id string) *sandbox {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.sandboxes[id]
}

func (rt *Runtime) forget(id string) {
	rt.mu.Lock()
	s := rt.sandboxes[id]
	delete(rt.sandboxes, id)
	rt.mu.Unlock()
	if s != nil {
		rt.rebalance(s.share)
	}
}
