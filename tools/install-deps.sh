#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages trnsim needs, only those that are missing (idempotent).
# Optional groups as arguments: `slurm` adds slurm-wlm and munge (the single-node cluster test of
# tests/sweep/slurm_test.sh; CI installs it).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang lld
  libsystemc-dev libboost-graph-dev libfmt-dev libspdlog-dev nlohmann-json3-dev
  libgtest-dev libcli11-dev libprotobuf-dev protobuf-compiler zlib1g-dev nettle-dev
  python3 python3-matplotlib python3-pandas python3-nbclient python3-nbformat python3-ipykernel
  help2man zsh
)
for group in "$@"; do
  case "$group" in
    slurm) packages+=(slurm-wlm munge) ;;
    *) echo "install-deps.sh: unknown group \"$group\"; expected: slurm" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
