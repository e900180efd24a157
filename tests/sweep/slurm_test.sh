#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real single-node Slurm cluster: starts munged, slurmctld and slurmd (Debian's munge and
# slurm-wlm) on localhost with a private config in a temporary directory, runs a 4-point sweep
# as a 2-task job array (`trnsim sweep --slurm --parsable`) followed by its merge job
# (afterok), and checks that the merged sweep.csv and sweep.json equal those of the same sweep
# run locally. Stops the daemons at the end, however it
# ends. Exit 77 (CTest: skipped) when the packages are missing or not root.
# Usage: slurm_test.sh path/to/trnsim
set -euo pipefail
trnsim=$(readlink -f "${1:?usage: slurm_test.sh TRNSIM}")
src=$(cd "$(dirname "$0")/../.." && pwd)

for cmd in munged slurmctld slurmd sbatch squeue sinfo; do
  if ! command -v "$cmd" >/dev/null; then
    echo "skipped: $cmd is not installed (tools/install-deps.sh slurm installs slurm-wlm and munge)"
    exit 77
  fi
done
if [ "$(id -u)" -ne 0 ]; then echo "skipped: starting slurmd needs root"; exit 77; fi

ms() { echo $(( $(date +%s%N) / 1000000 )); }
t0=$(ms)
tmp=$(mktemp -d /tmp/trnsim-slurm.XXXXXX)
pids=()
cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    for f in "$tmp"/*.log "$tmp"/slurm-out/slurm/task-*.log; do
      [ -f "$f" ] && { echo "== $f"; tail -n 30 "$f"; }
    done
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

# ---- munge: a fresh key and a private socket ----------------------------------------------------
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge.key"
mkdir -p "$tmp/munge"
chmod 711 "$tmp/munge"
munged --foreground --force --key-file="$tmp/munge.key" --socket="$tmp/munge/munge.sock" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munge.seed" >"$tmp/munged.log" 2>&1 &
pids+=($!)

# ---- Slurm: one node (this machine as "localhost"), one partition -------------------------------
# Ports from the PID so that two runs on one machine do not collide; loopback only.
port=$(( 20000 + ($$ % 20000) ))
mkdir -p "$tmp/state" "$tmp/spool"
cat > "$tmp/slurm.conf" <<EOF
ClusterName=trnsimtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdTimeout=30
InactiveLimit=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"
for _ in $(seq 100); do [ -S "$tmp/munge/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" >"$tmp/slurmd.out.log" 2>&1 &
pids+=($!)
ready=0
for _ in $(seq 300); do
  state=$(sinfo -h -n localhost -o %t 2>/dev/null || true)
  if [ "$state" = "idle" ]; then ready=1; break; fi
  sleep 0.1
done
if [ "$ready" -ne 1 ]; then echo "FAIL: the Slurm node did not become idle (state '${state:-}')"; exit 1; fi
t_up=$(ms)
echo "cluster up in $((t_up - t0)) ms"

# ---- the sweep: 2 HBM bandwidths x 2 seeds of the 16-rank golden workload -------------------------
cat > "$tmp/sweep.json" <<EOF
{
  "name": "slurm-test",
  "config": "$src/configs/racks/trn2-instance.json",
  "trace": "$src/tests/golden/inputs/golden-moe-16.json",
  "axes": [
    {"path": "chip.hbm.bandwidth", "values": ["1.5TB/s", "2.9TB/s"]},
    {"path": "sim.seed", "values": [1, 2]}
  ]
}
EOF
ids=$("$trnsim" sweep "$tmp/sweep.json" --slurm --shards 2 --cpus-per-task 1 --mem 400M --time 10 \
  --out "$tmp/slurm-out" --parsable)
# --parsable: the array's job id, then the merge job's (afterok on the array).
[ "$(echo "$ids" | wc -l)" -eq 2 ] && ! echo "$ids" | grep -qv '^[0-9][0-9]*$' ||
  { echo "FAIL: --parsable printed '$ids', expected two job ids"; exit 1; }
merge_id=$(echo "$ids" | sed -n 2p)
# status follows the job while it is queued or running (squeue), and after it (sacct or none).
"$trnsim" sweep status "$tmp/slurm-out" | grep -q "^Slurm job [0-9]* (2 array tasks): " ||
  { echo "FAIL: sweep status does not show the Slurm job"; "$trnsim" sweep status "$tmp/slurm-out"; exit 1; }
done_=0
for _ in $(seq 1200); do
  queued=$(squeue -h 2>/dev/null | wc -l)
  if [ "$queued" -eq 0 ] && "$trnsim" sweep status "$tmp/slurm-out" | grep -q "4 done" &&
     [ -f "$tmp/slurm-out/sweep.csv" ]; then
    done_=1
    break
  fi
  sleep 0.1
done
"$trnsim" sweep status "$tmp/slurm-out"
if [ "$done_" -ne 1 ]; then echo "FAIL: the job array did not complete its 4 points"; exit 1; fi
t_job=$(ms)
# The merge ran as the dependent job: its log, and no `sweep merge` by hand.
grep -q "merged 4 points" "$tmp/slurm-out/slurm/merge.log" ||
  { echo "FAIL: the merge job $merge_id did not merge"; cat "$tmp/slurm-out/slurm/merge.log"; exit 1; }
"$trnsim" sweep status "$tmp/slurm-out" | grep -q "; merge job $merge_id" ||
  { echo "FAIL: sweep status does not name the merge job"; exit 1; }
echo "job array: submitted and done in $((t_job - t_up)) ms (wall time of the Slurm run)"

# The same sweep on this machine.
"$trnsim" sweep "$tmp/sweep.json" --out "$tmp/local" -j 2 2>/dev/null
for f in sweep.csv sweep.json; do
  if ! cmp "$tmp/slurm-out/$f" "$tmp/local/$f"; then
    echo "FAIL: $f of the Slurm run differs from the local run"
    diff "$tmp/slurm-out/$f" "$tmp/local/$f" | head -20
    exit 1
  fi
done
# Each array task ran its own shard: both task logs exist, and every point ran once.
for i in 1 2; do
  [ -f "$tmp/slurm-out/slurm/task-$i.log" ] || { echo "FAIL: no log of array task $i"; exit 1; }
done
rows=$(($(wc -l < "$tmp/slurm-out/sweep.csv") - 1))
[ "$rows" -eq 2 ] || { echo "FAIL: expected 2 rows (2 bandwidths) in sweep.csv, got $rows"; exit 1; }
echo "PASS: Slurm job array result equals the local run; total $(( $(ms) - t0 )) ms"
