#!/usr/bin/env bash
# The API's OpenAPI document as generators and linters see it:
#  1. @redocly/cli lint with its recommended rules: no errors, no warnings;
#  2. openapi-typescript's output (default options) type-checks
#     sdk/typescript/test/contract/session.ts, a session end to end through
#     openapi-fetch with no casts;
#  3. @hey-api/openapi-ts, a second generator, generates a client without
#     errors and its output type-checks;
#  4. Spectral's spectral:oas ruleset (scripts/contract/.spectral.yaml): no
#     errors, no warnings;
#  5. oapi-codegen (Go) generates types and a client from the whole document
#     into a copy of scripts/contract/naive, a module that replaces nothing,
#     and its naive program (start, execute, write bytes, read back) builds;
#  6. every operation, parameter and request body field of the document is
#     reachable from the Python SDK (sdk/python/tests/test_contract.py): no
#     Python generator runs offline here (see that file).
# The npm tools are pinned in scripts/package.json, oapi-codegen in
# scripts/contract/oapigen/go.mod; scripts/setup.sh downloads both.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/scripts/node_modules/.bin
doc=$root/pkg/api/openapi.json
dir=$root/sdk/typescript/test/contract
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

report=$(mktemp)
trap 'rm -f "$report"' EXIT
"$bin/redocly" lint --extends=recommended --format=json "$doc" >"$report" 2>/dev/null || true
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const t = r.totals || {};
  for (const p of r.problems || []) console.error(`${p.severity} ${p.ruleId}: ${p.message} at ${(p.location||[]).map(l => l.pointer).join(", ")}`);
  if (t.errors || t.warnings) { console.error(`redocly lint: ${t.errors} errors, ${t.warnings} warnings`); process.exit(1); }
  console.log("redocly lint (recommended): no errors, no warnings");
' "$report"

rm -rf "$dir/build"
mkdir -p "$dir/build"
"$bin/openapi-typescript" "$doc" --output "$dir/build/openapi.d.ts" --silent
"$bin/tsc" -p "$dir/tsconfig.json"
echo "openapi-typescript: session.ts type-checks against the generated types"

"$bin/openapi-ts" --input "$doc" --output "$dir/build/hey-api" --silent
"$bin/tsc" -p "$dir/tsconfig.hey-api.json"
echo "@hey-api/openapi-ts: generated a client that type-checks"

"$bin/spectral" lint --quiet --fail-severity=warn --ruleset "$root/scripts/contract/.spectral.yaml" "$doc"
echo "spectral lint (spectral:oas): no errors, no warnings"

gen=$(mktemp -d)
trap 'rm -f "$report"; rm -rf "$gen"' EXIT
cp "$root"/scripts/contract/naive/{go.mod,go.sum,main.go} "$gen/"
mkdir "$gen/api"
(cd "$root/scripts/contract/oapigen" && go tool oapi-codegen -generate types,client -package api "$doc" >"$gen/api/api.go")
# -trimpath keeps the temp dir out of the build, so an unchanged document
# is a build cache hit.
(cd "$gen" && GOFLAGS=-mod=readonly GOWORK=off go build -trimpath -o /dev/null .)
echo "oapi-codegen: generated types and a client; the naive program builds"

python=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import httpx, pytest' 2>/dev/null; then python=$p; break; fi
done
[ -n "$python" ] || { echo "check.sh: no python3 with httpx and pytest (scripts/setup.sh installs them)" >&2; exit 1; }
(cd "$root/sdk/python" && "$python" -m pytest -q -p no:cacheprovider tests/test_contract.py)
echo "python: every operation, parameter and request body field reaches the Python SDK"
