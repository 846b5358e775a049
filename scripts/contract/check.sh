#!/usr/bin/env bash
# The API's OpenAPI document as generators and linters see it:
#  1. @redocly/cli lint with its recommended rules: no errors, no warnings;
#  2. openapi-typescript's output (default options) type-checks
#     sdk/typescript/test/contract/session.ts, a session end to end through
#     openapi-fetch with no casts;
#  3. @hey-api/openapi-ts, a second generator, generates a client without
#     errors and its output type-checks.
# The tools are pinned in scripts/package.json.
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
