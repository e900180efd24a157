#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` into a scratch prefix: the binary, presets, traces, docs, trnsim-moe-gen,
# trnsim-plot, bash and zsh completion, the Python package and (with help2man) a man page per
# command land there, and the installed trnsim finds its presets next to itself.
set -euo pipefail
build="$1"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/trnsim share/trnsim/configs/racks/trn3-gen2-ultraserver.json \
         share/trnsim/traces/deepseek-v3-moe-144.json share/doc/trnsim/report.md \
         bin/trnsim-moe-gen bin/trnsim-plot share/bash-completion/completions/trnsim \
         share/zsh/site-functions/_trnsim; do
  [ -e "$prefix/$f" ] || { echo "install_test: $f not installed" >&2; exit 1; }
done
if command -v help2man >/dev/null; then
  for m in trnsim trnsim-run trnsim-bench-gemm trnsim-sweep-status trnsim-trace-info; do
    [ -s "$prefix/share/man/man1/$m.1" ] || { echo "install_test: no man page $m.1" >&2; exit 1; }
  done
  grep -qE 'timeline\\?-window' "$prefix/share/man/man1/trnsim-run.1" ||
    { echo "install_test: trnsim-run.1 is not run --help" >&2; exit 1; }
fi
out="$(cd / && env -u TRNSIM_DATA_DIR "$prefix/bin/trnsim" presets)"
case "$out" in
  *"presets in $prefix/bin/../share/trnsim/configs"*|*"presets in $prefix/share/trnsim/configs"*) ;;
  *) echo "install_test: the installed trnsim read presets elsewhere: $out" >&2; exit 1 ;;
esac
(cd / && env -u TRNSIM_DATA_DIR "$prefix/bin/trnsim" config --help >/dev/null)
# The tools run under their installed names, from anywhere.
(cd / && "$prefix/bin/trnsim-moe-gen" --help >/dev/null)
(cd / && "$prefix/bin/trnsim-plot" --help >/dev/null)
# Completion: commands, then a bench's options, from the installed binary's --help.
got="$(PATH="$prefix/bin:$PATH" bash -c 'source "$1"; COMP_WORDS=(trnsim bench g); COMP_CWORD=2; _trnsim
  echo "${COMPREPLY[*]}"; COMP_WORDS=(trnsim run --timeline-w); COMP_CWORD=2; _trnsim; echo "${COMPREPLY[*]}"' \
  _ "$prefix/share/bash-completion/completions/trnsim")"
[ "$got" = "$(printf 'gemm\n--timeline-window')" ] || { echo "install_test: completion gave: $got" >&2; exit 1; }
# The Python package, imported from the prefix, runs the prefix's trnsim.
py="$(ls -d "$prefix"/lib/python3*/dist-packages/trnsim 2>/dev/null | head -1)"
[ -f "$py/__init__.py" ] || { echo "install_test: the Python package is not installed" >&2; exit 1; }
got="$(cd / && env -u TRNSIM_BIN PYTHONPATH="$(dirname "$py")" /usr/bin/python3 -c \
  'import trnsim; print(trnsim.find_binary())')"
[ "$(realpath "$got")" = "$(realpath "$prefix/bin/trnsim")" ] ||
  { echo "install_test: the installed package runs $got, not the prefix's trnsim" >&2; exit 1; }
echo "install_test: 1 passed, 0 failed"
