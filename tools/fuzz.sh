#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets (fuzz preset: Clang, ASan + UBSan) and runs each for longer than
# CTest does. Usage: [FUZZ_RUNS=N] tools/fuzz.sh [SECONDS_PER_TARGET (default 600)] [TARGET...];
# FUZZ_RUNS stops each target after N executions (the time limit still applies). Several may
# run at once (each builds first: start them a few seconds apart).
# Corpora grow in build/fuzz/tests/fuzz/corpus_<target>; crashes are saved there as crash_<target>_*.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(config topology native native_binary chakra)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j2
out=build/fuzz/tests/fuzz
shared="$PWD/../shared/traces"
for t in "${targets[@]}"; do
  case "$t" in
    config) seeds=("$PWD/configs/chips" "$PWD/configs/racks") ;;
    topology) seeds=("$PWD/configs/racks") ;;
    native) python3 tools/fuzz_seeds.py "$out/seeds_native" traces/*.json tests/golden/inputs/*.json
      seeds=("$PWD/$out/seeds_native") ;;
    native_binary) python3 tools/fuzz_seeds.py --binary "$out/seeds_native_binary" "$out/seeds_native" \
        traces/*.json tests/golden/inputs/*.json
      seeds=("$PWD/$out/seeds_native_binary") ;;
    chakra) seeds=()
      for d in chakra astra-sim/microbenchmarks/all_reduce/4npus_1MB; do
        [ -d "$shared/$d" ] && seeds+=("$shared/$d")
      done ;;
    *) echo "unknown target $t (config, topology, native, native_binary, chakra)" >&2; exit 2 ;;
  esac
  mkdir -p "$out/corpus_$t"
  echo "== fuzz_$t for ${seconds}s" >&2
  # 16 kB inputs: twice the largest seed. A trace of 64 kB takes 4x to 5x longer per execution
  # than one of 16 kB, and the corpus drifts to the largest length allowed (docs/fuzzing.md).
  (cd configs/racks && ASAN_OPTIONS=detect_leaks=1:malloc_context_size=5 "$OLDPWD/$out/fuzz_$t" \
     -max_total_time="$seconds" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} \
     -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
     -print_final_stats=1 -artifact_prefix="$OLDPWD/$out/crash_${t}_" \
     "$OLDPWD/$out/corpus_$t" "${seeds[@]}")
done
