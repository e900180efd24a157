# SPDX-License-Identifier: MIT
# Bash completion of trnsim, installed by `cmake --install` into
# share/bash-completion/completions/trnsim. It reads the commands and options from trnsim's own
# --help at completion time, so it never falls behind the binary; --config completes preset
# names and files, --trace bundled traces and files.
_trnsim() {
  local cur prev words cword
  _init_completion 2>/dev/null || {
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  }
  local trnsim="${words[0]}"
  # The command path typed so far (run; bench gemm; sweep status).
  local path=() w i
  for ((i = 1; i < cword; i++)); do
    w="${words[i]}"
    [[ "$w" == -* ]] && continue
    if "$trnsim" "${path[@]}" --help 2>/dev/null | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 {print $1}' |
        grep -qx -- "$w"; then
      path+=("$w")
    fi
  done
  case "$prev" in
    --config)
      local names
      names="$("$trnsim" presets --json 2>/dev/null | sed -n 's/^ *"name": "\(.*\)",$/\1/p')"
      COMPREPLY=($(compgen -W "$names" -- "$cur") $(compgen -f -- "$cur"))
      return ;;
    --trace)
      local traces
      traces="$("$trnsim" presets 2>/dev/null | awk '$1 == "trace" {print $2}')"
      COMPREPLY=($(compgen -W "$traces" -- "$cur") $(compgen -f -- "$cur"))
      return ;;
    --fidelity) COMPREPLY=($(compgen -W "fast detailed" -- "$cur")); return ;;
    --out|--dot|--baseline|--process-groups) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local help
  help="$("$trnsim" "${path[@]}" --help 2>/dev/null)"
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' <<<"$help" | tr -d ' ,')" -- "$cur"))
  else
    local subs
    subs="$(sed -n '/^Subcommands:/,$p' <<<"$help" | awk 'NR > 1 && /^  [a-z]/ {print $1}')"
    COMPREPLY=($(compgen -W "$subs" -- "$cur") $(compgen -f -- "$cur"))
  fi
}
complete -F _trnsim trnsim
