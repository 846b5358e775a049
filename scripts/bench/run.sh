#!/usr/bin/env bash
# The headline benchmarks of sessionbox, each beside the baseline it is
# judged against, measured in the same run. Go benchmarks report p50/p99 as
# custom metrics where latency matters; see each benchmark's doc comment.
#
#   scripts/bench/run.sh            every group
#   scripts/bench/run.sh kernel     one group: kernel runtime e2b api session-start calls session store blob lambda jupyter rss
set -euo pipefail
cd "$(dirname "$0")/../.."

count=${BENCH_COUNT:-3}

# Sandboxes run the dedicated agent, as under `make run`, unless
# SESSIONBOX_TEST_AGENT names another; set to "" they re-execute the test binary.
if [ -z "${SESSIONBOX_TEST_AGENT+set}" ]; then
  agent_dir=$(mktemp -d)
  trap 'rm -rf "$agent_dir"' EXIT
  CGO_ENABLED=0 go build -o "$agent_dir/sessionbox-agent" ./cmd/sessionbox-agent
  export SESSIONBOX_TEST_AGENT=$agent_dir/sessionbox-agent
fi
echo "== sandboxes' agent: ${SESSIONBOX_TEST_AGENT:-the test binary}"
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(kernel runtime e2b api session-start calls session store blob lambda jupyter rss)

bench() { # package, regexp
  echo "== go test -bench '$2' $1"
  go test -run '^$' -bench "$2" -benchmem -count "$count" "$1" | grep -E '^(Benchmark|ok|FAIL)'
}

for g in "${groups[@]}"; do
  case "$g" in
    kernel)  bench ./pkg/e2blocal/kernel/ 'RoundTrip|SpawnPython|KernelStart' ;;
    runtime) bench ./pkg/e2blocal/ 'CreateToFirstCommand|FirstExecute|IdleSandboxMemory|InterpreterRoundTrip' ;;
    e2b)     bench ./pkg/e2b/ 'RunCode|FileWrite|FileRead' ;;
    api)     bench ./e2e/ 'ExecuteRoundTrip|SpawnIsolatedInterpreter|Transfer24MiB'
             bench ./pkg/api/ 'ExecuteOverhead' ;;
    session-start)
             # New sessions paced and in bursts, and 20 sessions x 20 executes at once.
             echo "== go test -bench 'NewSession|Load20x20|SpawnIsolatedInterpreter' ./e2e/ (load $(cut -d' ' -f1-3 /proc/loadavg))"
             go test -run '^$' -bench 'NewSession|Load20x20|SpawnIsolatedInterpreter' -benchtime 20x -count "$count" ./e2e/ | grep -E '^(Benchmark|ok|FAIL)' ;;
    calls)   # Remote calls per operation, held to docs/performance.md.
             go test -count=1 -run 'TestRemoteCallsPerOperation' -v ./e2e/ | grep -E '^\s*\||^(ok|FAIL|---)' ;;
    session) bench ./pkg/session/ 'Execute' ;;
    store)   bench ./pkg/store/ '.' ;;
    blob)    bench ./pkg/blob/ '.' ;;
    lambda)  bench ./e2e/ 'Init' ;;
    rss)     scripts/bench/transfer_rss.sh ;;
    jupyter)
      # Baseline for the interpreter round trip: a Jupyter kernel over ZeroMQ.
      if ! /usr/bin/python3 -c 'import jupyter_client, ipykernel' 2>/dev/null; then
        echo "== installing python3-ipykernel for the Jupyter baseline"
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-ipykernel python3-jupyter-client >/dev/null
      fi
      echo "== Jupyter kernel round trip (baseline)"
      /usr/bin/python3 scripts/bench/jupyter_rtt.py 1000 2>/dev/null
      ;;
    *) echo "unknown group $g" >&2; exit 2 ;;
  esac
done
