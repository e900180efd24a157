#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Man pages from --help with Debian's help2man: trnsim.1 and one per command (trnsim-run.1,
# trnsim-bench-gemm.1, ...), the same text as `trnsim CMD --help`. `cmake --install` runs it on
# the installed binary (not every build: help2man runs trnsim twice per page).
# Usage: tools/man-pages.sh TRNSIM OUTDIR
set -euo pipefail
trnsim="$1"
out="$2"
command -v help2man >/dev/null || { echo "man-pages: help2man not found: no man pages" >&2; exit 0; }
mkdir -p "$out"
version="$("$trnsim" --version)"
# The commands of a --help: the first word of each line after "Subcommands:".
commands() { "$trnsim" "$@" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}'; }
page() {  # page NAME DESCRIPTION ARGS...: trnsim ARGS --help as NAME.1
  local name="$1" what="$2"
  shift 2
  # help2man runs "PROGRAM --help" and "PROGRAM --version": a wrapper runs the command.
  local wrap
  wrap="$(mktemp -d)/$name"
  # The page's name is the first word of --version: "trnsim-run 0.1.0 (commit ...)".
  printf '#!/bin/sh\ncase "$1" in --version) echo %q ;; *) exec %q %s "$@" ;; esac\n' \
    "$name ${version#trnsim }" "$trnsim" "$*" > "$wrap"
  chmod +x "$wrap"
  help2man --no-info --no-discard-stderr --name="$what" --output="$out/$name.1" "$wrap"
  rm -rf "$(dirname "$wrap")"
}
page trnsim "cycle-approximate simulator of AWS Trainium UltraServers"
for c in $(commands); do
  desc="$("$trnsim" --help | awk -v c="$c" '$1 == c {$1 = ""; sub(/^ +/, ""); print; exit}')"
  page "trnsim-$c" "$desc" "$c"
  for s in $(commands "$c"); do
    sdesc="$("$trnsim" "$c" --help | awk -v c="$s" '$1 == c {$1 = ""; sub(/^ +/, ""); print; exit}')"
    page "trnsim-$c-$s" "$sdesc" "$c" "$s"
  done
done
echo "man-pages: $(ls "$out" | wc -l) pages in $out"
