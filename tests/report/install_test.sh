#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` into a scratch prefix: the binary, presets, traces, docs and (with help2man)
# the man page land there, and the installed trnsim finds its presets next to itself.
set -euo pipefail
build="$1"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/trnsim share/trnsim/configs/racks/trn3-gen2-ultraserver.json \
         share/trnsim/traces/deepseek-v3-moe-144.json share/doc/trnsim/report.md; do
  [ -e "$prefix/$f" ] || { echo "install_test: $f not installed" >&2; exit 1; }
done
if command -v help2man >/dev/null; then
  [ -s "$prefix/share/man/man1/trnsim.1" ] || { echo "install_test: no man page" >&2; exit 1; }
fi
out="$(cd / && env -u TRNSIM_DATA_DIR "$prefix/bin/trnsim" presets)"
case "$out" in
  *"presets in $prefix/bin/../share/trnsim/configs"*|*"presets in $prefix/share/trnsim/configs"*) ;;
  *) echo "install_test: the installed trnsim read presets elsewhere: $out" >&2; exit 1 ;;
esac
(cd / && env -u TRNSIM_DATA_DIR "$prefix/bin/trnsim" config --help >/dev/null)
echo "install_test: 1 passed, 0 failed"
