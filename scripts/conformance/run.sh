#!/usr/bin/env bash
# Drives the local runtime with the official E2B SDKs (npm e2b and
# @e2b/code-interpreter, pinned in scripts/package-lock.json), unmodified,
# through E2B_API_URL and E2B_SANDBOX_URL, as a user of E2B would.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

work=$(mktemp -d)
runtime_pid=""
cleanup() {
  [ -n "$runtime_pid" ] && kill "$runtime_pid" 2>/dev/null && wait "$runtime_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/sessionbox" ./cmd/sessionbox

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
api_port=$(free_port)
sandbox_port=$(free_port)

# The runtime takes exactly this key, as E2B's API takes only the account's.
export E2B_API_KEY="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"

# Templates of our own (docs/e2b-compatibility.md, "Local templates"): one
# with a root filesystem of bash and cat and the libraries they and the agent
# load, one on the host's system directories whose start command serves HTTP.
# Sandboxes run as other uids, which must reach the rootfs.
chmod 755 "$work"
tpl="$work/templates"
mkdir -p "$tpl/rootfs/usr/bin" "$tpl/rootfs/usr/lib" "$tpl/rootfs/usr/lib64" "$tpl/rootfs/etc"
for l in bin lib lib64; do ln -s "usr/$l" "$tpl/rootfs/$l"; done
cp /bin/bash /usr/bin/cat "$tpl/rootfs/usr/bin/"
for f in $({ ldd /bin/bash; ldd /usr/bin/cat; ldd "$work/sessionbox" || true; } | grep -o '/[^ ]* (0x' | cut -d' ' -f1 | sort -u); do
  mkdir -p "$tpl/rootfs$(dirname "$f")"
  cp -L "$f" "$tpl/rootfs$f"
done
echo 'ID=conformance' >"$tpl/rootfs/etc/os-release"
echo 'from the template' >"$tpl/rootfs/marker"
echo '{"rootfs": "rootfs", "envs": {"FROM": "template"}}' >"$tpl/tiny.json"
cat >"$tpl/web.json" <<'JSON'
{"startCmd": "echo served > index.html && exec python3 -m http.server 8000 --bind 127.0.0.1",
 "readyCmd": "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8000))'",
 "workdir": "/home/user/site"}
JSON

"$work/sessionbox" runtime --api-key "$E2B_API_KEY" --api-addr "127.0.0.1:$api_port" --sandbox-addr "127.0.0.1:$sandbox_port" \
  --data-dir "$work/data" --template conformance-agent=code-interpreter-v1 \
  --template "conformance-tiny=$tpl/tiny.json" --template "conformance-web=$tpl/web.json" >"$work/runtime.log" 2>&1 &
runtime_pid=$!

for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$api_port/health" >/dev/null 2>&1 && break
  kill -0 "$runtime_pid" 2>/dev/null || { cat "$work/runtime.log"; echo "runtime exited" >&2; exit 1; }
  sleep 0.1
done

export E2B_API_URL="http://127.0.0.1:$api_port"
export E2B_SANDBOX_URL="http://127.0.0.1:$sandbox_port"
unset E2B_DEBUG E2B_DOMAIN

status=0
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(scripts/conformance/*.test.mjs)
node --test --test-concurrency=2 --test-reporter=spec "${files[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- runtime log (last 100 lines) ---" >&2
  tail -n 100 "$work/runtime.log" >&2
fi
exit "$status"
