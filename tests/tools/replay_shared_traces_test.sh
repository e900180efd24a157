#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/replay-shared-traces.sh on one small shared trace: a row with the rack, the step time and
# no jq error, and exit 0; a trace that fails to replay makes it exit 1. Skipped (77) without the
# shared traces or jq.
set -u
root=$1
trnsim=$2
[ -d "$root/../shared/traces/astra-sim" ] || { echo "skipped: no shared traces"; exit 77; }
command -v jq >/dev/null || { echo "skipped: no jq"; exit 77; }
out=$(ONLY='astra-sim all_reduce 4npus' "$root/tools/replay-shared-traces.sh" "$trnsim" 2>&1)
rc=$?
echo "$out"
[ "$rc" = 0 ] || { echo "FAIL: exit $rc"; exit 1; }
echo "$out" | grep -q '^| astra-sim all_reduce 4npus | 4 | Trn3 Gen2 UltraServer (144) | 0 | [0-9.]* µs |' ||
  { echo "FAIL: no row with ranks, rack and step time"; exit 1; }
if echo "$out" | grep -q 'null\|jq: error'; then echo "FAIL: null or a jq error"; exit 1; fi
# A binary that fails every run: the row says so and the script exits 1.
fake=$(mktemp)
trap 'rm -f "$fake"' EXIT
printf '#!/bin/sh\necho "trnsim: error: broken" >&2\nexit 2\n' >"$fake"
chmod +x "$fake"
ONLY='astra-sim all_reduce 4npus' "$root/tools/replay-shared-traces.sh" "$fake" >/dev/null 2>&1
rc=$?
[ "$rc" = 1 ] || { echo "FAIL: exit $rc for a trace that did not replay"; exit 1; }
echo "1 passed, 0 failed"
