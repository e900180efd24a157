#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerates the bundled traces in traces/ (byte-identical for the same Python version).
# The commands are documented in docs/moe-generator.md; keep the two in sync.
set -euo pipefail
cd "$(dirname "$0")/.."

# Default workload of `trnsim run` on the 144-chip Trn3 Gen2 UltraServer: a whole DeepSeek-V3
# step (about 2 minutes; compressed without a timestamp, so the file is byte-identical).
python3 tools/moe_gen.py --model deepseek-v3 --ranks 144 --tp 1 --ep 16 --pp 9 \
  --seq-len 4096 --micro-batches 8 --routing zipf:0.5 --seed 1 --dtype mxfp8 \
  --expert-gemms grouped --name deepseek-v3-step-144 -q -o traces/deepseek-v3-step-144.json
gzip -n -9 -f traces/deepseek-v3-step-144.json

# The same step laid out for the 64 chips of a Trn2 UltraServer or a Trn3 Gen1 UltraServer, at the
# same global batch: EP 16 as on 144 chips, PP 4 instead of 9, for `trnsim claims` (docs/claims.md).
python3 tools/moe_gen.py --model deepseek-v3 --ranks 64 --tp 1 --ep 16 --pp 4 \
  --seq-len 4096 --micro-batches 8 --routing zipf:0.5 --seed 1 --dtype mxfp8 \
  --expert-gemms grouped --name deepseek-v3-step-64 -q -o traces/deepseek-v3-step-64.json
gzip -n -9 -f traces/deepseek-v3-step-64.json

# The first 9 layers of both steps (every pipeline stage keeps a layer), for `trnsim claims --quick`.
for layout in 144:9 64:4; do
  python3 tools/moe_gen.py --model deepseek-v3 --ranks "${layout%:*}" --tp 1 --ep 16 --pp "${layout#*:}" \
    --layers 9 --seq-len 4096 --micro-batches 8 --routing zipf:0.5 --seed 1 --dtype mxfp8 \
    --expert-gemms grouped --name "deepseek-v3-step-${layout%:*}-cut9" -q \
    -o "traces/deepseek-v3-step-${layout%:*}-cut9.json"
  gzip -n -9 -f "traces/deepseek-v3-step-${layout%:*}-cut9.json"
done

# One MoE layer of it on 144 ranks, for sweeps and tests that need seconds.
python3 tools/moe_gen.py --model deepseek-v3 --ranks 144 --tp 1 --ep 16 --pp 1 \
  --layers 1 --dense-layers 0 --seq-len 256 --micro-batches 1 \
  --routing zipf:0.8 --seed 1 --dtype mxfp8 --expert-gemms grouped \
  --name deepseek-v3-moe-144 -o traces/deepseek-v3-moe-144.json

# The same MoE step on 64 ranks: fills a Trn2 UltraServer, so `trnsim claims` places one trace on
# both racks (configs/claims/trn3-vs-trn2.json, docs/claims.md).
python3 tools/moe_gen.py --model deepseek-v3 --ranks 64 --tp 1 --ep 16 --pp 1 \
  --layers 1 --dense-layers 0 --seq-len 256 --micro-batches 1 \
  --routing zipf:0.8 --seed 1 --dtype mxfp8 --expert-gemms grouped \
  --name deepseek-v3-moe-64 -o traces/deepseek-v3-moe-64.json

# Small trace for tests: the layout of the third-party Mixtral trace (DP2 x TP2 x EP4).
python3 tools/moe_gen.py --model mixtral-8x7b --tp 2 --ep 4 --dp 2 --pp 1 \
  --layers 2 --seq-len 4096 --global-batch 8 --micro-batches 1 \
  --routing zipf:1.2 --seed 1 --dtype mxfp8 \
  --name mixtral-moe-16 -o traces/mixtral-moe-16.json
