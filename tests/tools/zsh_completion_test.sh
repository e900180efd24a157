#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/completion/_trnsim: zsh parses it, and with zsh's completion functions replaced by ones
# that print what they are given, it offers the subcommands `trnsim --help` lists (with their
# descriptions), a command's subcommands, its options, and the preset names after --config.
# 77 (skipped) without zsh (tools/install-deps.sh installs it).
set -euo pipefail
src="$1"
bin="$(realpath "$2")"
comp="$src/tools/completion/_trnsim"
command -v zsh >/dev/null || { echo "skipped: zsh is not installed"; exit 77; }
zsh -n "$comp"

# complete WORDS...: the candidates zsh's completion would offer for the last word.
complete() {
  local dir
  dir="$(mktemp -d)"
  ln -s "$bin" "$dir/trnsim"
  PATH="$dir:$PATH" zsh -f -c '
    compadd() { [[ $1 == -a ]] && print -rl -- "${(@P)2}"; }
    _describe() { shift 2; shift 1; print -rl -- "${(@P)1}"; }
    _files() { print -r -- "<files>"; }
    words=("$@"); CURRENT=$#
    source "$0"' "$comp" "$@"
  rm -rf "$dir"
}
fails=0
check() {
  local what="$1" got="$2" want="$3"
  if [ "$got" != "$want" ]; then
    echo "zsh_completion_test: $what:"; diff <(echo "$want") <(echo "$got") || true
    fails=$((fails + 1))
  fi
}
subs() {  # name:description of each subcommand, as trnsim ARGS --help lists them
  "$bin" "$@" --help | sed -n '/^Subcommands:/,$p' |
    awk 'NR > 1 && /^  [a-z]/ {n = $1; $1 = ""; sub(/^ +/, ""); print n ":" $0}'
}
want="$(subs; echo "<files>")"
check "trnsim <TAB>" "$(complete trnsim "")" "$want"
# The commands are those of the help text, which has all 13 of them.
[ "$(subs | cut -d: -f1 | tr '\n' ' ')" = "config list-types schema topo run bench sweep compare presets trace claims solve serve " ] ||
  { echo "zsh_completion_test: trnsim --help lists $(subs | cut -d: -f1 | tr '\n' ' ')"; fails=$((fails + 1)); }
check "trnsim bench <TAB>" "$(complete trnsim bench "")" "$(subs bench; echo "<files>")"
check "trnsim --log-level warn sweep <TAB>" "$(complete trnsim --log-level warn sweep "" | cut -d: -f1 | tr '\n' ' ')" \
  "$(subs sweep | cut -d: -f1 | tr '\n' ' ')<files> "
got="$(complete trnsim run --timeline-w)"
grep -qx -- --timeline-window <<<"$got" || { echo "zsh_completion_test: no --timeline-window in: $got"; fails=$((fails + 1)); }
grep -qx -- --gemm <<<"$got" && { echo "zsh_completion_test: run offers bench's options"; fails=$((fails + 1)); }
got="$(complete trnsim run --config "")"
grep -qx trn3-gen2-ultraserver <<<"$got" && grep -qx trn2-instance <<<"$got" ||
  { echo "zsh_completion_test: --config did not offer the presets: $got"; fails=$((fails + 1)); }
got="$(complete trnsim run --trace "")"
grep -qx mixtral-moe-16 <<<"$got" || { echo "zsh_completion_test: --trace: $got"; fails=$((fails + 1)); }
echo "zsh_completion_test: $((fails == 0 ? 1 : 0)) passed, $((fails == 0 ? 0 : 1)) failed"
[ "$fails" -eq 0 ]
