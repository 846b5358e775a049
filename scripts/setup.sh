#!/usr/bin/env bash
# Installs what `make run` and `make test` need and is missing. Idempotent and
# quick when everything is present: each step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

# Debian packages: the sandbox runtime (bubblewrap; e2fsprogs for the
# size-limited ext4 image behind each sandbox's home), the interpreter the
# sandboxes run (Debian's python3 with numpy, pandas, matplotlib and pip),
# zip for packaging the Lambda functions and chromium, the headless browser
# the playground's test drives (with puppeteer-core from npm); httpx and pytest
# for the Python SDK (sdk/python) and its tests, from Debian: PyPI is not needed.
apt_pkgs=(bubblewrap e2fsprogs python3 python3-numpy python3-pandas python3-matplotlib python3-pip python3-venv zip slirp4netns nftables chromium python3-httpx python3-pytest)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v go >/dev/null || { log "Go 1.26 is required (https://go.dev/dl)"; exit 1; }
command -v node >/dev/null || { log "Node.js 20+ with npm is required for the SDK conformance suite"; exit 1; }

# The type stripper of the code interpreter's typescript contexts (npm's
# typescript, its transpileModule), in npm's global module directory: under
# /usr with Debian's nodejs, which every sandbox sees read-only.
ts_version=5.9.3
ts_dir="$(npm root -g)/typescript"
if [ "$(node -p "try{require('$ts_dir/package.json').version}catch{''}")" != "$ts_version" ]; then
  log "installing typescript@$ts_version into $ts_dir"
  SUDO=""; [ -w "$(npm root -g)" ] || SUDO="sudo"
  $SUDO npm install -g --no-audit --no-fund --loglevel=error "typescript@$ts_version" >/dev/null
fi

# npm test dependencies, pinned by scripts/package-lock.json.
if [ ! -f scripts/node_modules/.package-lock.json ] || [ scripts/package-lock.json -nt scripts/node_modules/.package-lock.json ]; then
  log "installing npm test dependencies"
  (cd scripts && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

# The TypeScript SDK's build and test tools, pinned by sdk/typescript/package-lock.json.
if [ ! -f sdk/typescript/node_modules/.package-lock.json ] || [ sdk/typescript/package-lock.json -nt sdk/typescript/node_modules/.package-lock.json ]; then
  log "installing the TypeScript SDK's npm dependencies"
  (cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

# Go modules, once, so later steps do not race to download them; and the
# contract check's own modules (oapi-codegen and its generated client's
# runtime), so it does not fetch inside a test deadline.
go mod download
for m in scripts/contract/oapigen scripts/contract/naive; do (cd "$m" && go mod download); done

# Heavy test-only Go tools, pinned in their own module (tools/go.mod) so their
# dependencies stay out of the product's go.mod, built here once into
# bin/tools/ rather than by the tests inside their deadlines. Rebuilt when
# tools/go.mod or go.sum is newer than the binary.
tool_bin=bin/tools/versitygw
if [ ! -x "$tool_bin" ] || [ tools/go.mod -nt "$tool_bin" ] || [ tools/go.sum -nt "$tool_bin" ]; then
  log "building $tool_bin (tools/go.mod)"
  go -C tools build -o "../$tool_bin" github.com/versity/versitygw/cmd/versitygw
fi
