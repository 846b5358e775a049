#!/usr/bin/env bash
# Peak memory of local mode (API, stand-ins and runtime in one process)
# while files of growing size go through a presigned upload and import, and
# back through a download URL. Constant memory shows as a peak that does not
# grow with the file.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

go build -o "$work/sessionbox" ./cmd/sessionbox
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key="sbx_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
SESSIONBOX_API_KEYS="bench=$key" "$work/sessionbox" serve --addr "127.0.0.1:$port" --data-dir "$work/data" >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

export SESSIONBOX_URL="http://127.0.0.1:$port" SESSIONBOX_API_KEY="$key"
hwm() { awk '/VmHWM/ {print $2}' "/proc/$pid/status"; }
"$work/sessionbox" exec --session rss 'print("warm")' >/dev/null
printf '%-10s %12s %12s %14s\n' size upload_s download_s peak_rss_MiB
mib_of() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
printf '%-10s %12s %12s %14s\n' idle - - "$(mib_of "$(hwm)")"
for mib in 24 96 192; do
  head -c $((mib << 20)) /dev/urandom >"$work/in.bin"
  t0=$(date +%s.%N)
  "$work/sessionbox" files --session rss put "$work/in.bin" "data/f$mib.bin" >/dev/null
  t1=$(date +%s.%N)
  "$work/sessionbox" files --session rss get "data/f$mib.bin" "$work/out.bin" 2>/dev/null
  t2=$(date +%s.%N)
  cmp -s "$work/in.bin" "$work/out.bin" || { echo "round trip of $mib MiB differs" >&2; exit 1; }
  printf '%-10s %12s %12s %14s\n' "${mib}MiB" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" "$(mib_of "$(hwm)")"
  rm -f "$work/in.bin" "$work/out.bin"
done
