#!/usr/bin/env bash
# Preemption and requeue on a real Slurm. Starts munged, slurmctld and slurmd on 127.0.0.1 with a
# throw-away key, configuration, ports and state under a temporary directory (one node, 2 CPUs,
# JobRequeue), submits a generated sbatch script that trains Cora mini-batch with 2 ranks and a
# checkpoint directory, sends the batch shell SIGUSR1 once a checkpoint exists (as Slurm does
# before the time limit), and checks that the job checkpointed, exited 75, was requeued, resumed
# and ended with the model bytes and final loss of an uninterrupted 2-rank run. The script is
# what `halo plan --emit slurm` writes for the run. Every daemon is
# stopped on exit (also on failure); every wait is bounded. Installs nothing; exit 77 (skipped)
# when Slurm or munge is missing.
#
#   bash tests/slurm/run.sh HALO MPIEXEC CORA_DIR
set -euo pipefail
halo=$(realpath "$1") mpiexec=$2 cora=$(realpath "$3")

for p in munged slurmctld slurmd sbatch scontrol scancel; do
  command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || { echo "skip: $p not installed"; exit 77; }
done
export PATH="$PATH:/usr/sbin"
# The job inherits this environment (sbatch --export=ALL): one thread per rank; MPICH leaves
# an allocation LeakSanitizer cannot attribute (tests/runtime/CMakeLists.txt).
export OMP_NUM_THREADS=1 ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

# Every client call is bounded: a controller that died must not hang the test.
for c in scontrol scancel sinfo sbatch; do
  eval "$c() { timeout 10 $(type -P $c) \"\$@\"; }"
done

tmp=$(mktemp -d /tmp/halo-slurm.XXXXXX)
pids=()
cleanup() {
  local status=$?
  set +e
  if [ -n "${SLURM_CONF:-}" ] && [ -n "${job:-}" ]; then
    [ "$status" -ne 0 ] && scontrol show job "$job"
    scancel "$job" >/dev/null 2>&1
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  # A job step left behind (its ranks) would outlive the daemons: end what runs from $tmp.
  for pid in $(pgrep -f "$tmp" || true); do [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null; done
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    echo "---- failed (status $status); logs:"
    for f in "$tmp"/*.log "$tmp"/job/*.out; do [ -f "$f" ] && { echo "== $f"; tail -n 40 "$f"; }; done
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Bounded wait: wait_for SECONDS DESCRIPTION COMMAND...
wait_for() {
  local limit=$1 what=$2
  shift 2
  for _ in $(seq $((limit * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out after ${limit}s waiting for $what"
  return 1
}

fail() {
  echo "FAIL: $*"
  exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- munge -------------------------------------------------------------------------------
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/job"
chmod 700 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
socket="$tmp/munge/munge.socket"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$socket" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" \
  --log-file="$tmp/munged.log" >/dev/null 2>&1 &
pids+=($!)
wait_for 10 "munged" test -S "$socket"

# ---- slurm -------------------------------------------------------------------------------
ctld_port=$(free_port)
slurmd_port=$(free_port)
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
export SLURM_CONF="$tmp/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=halotest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MpiDefault=none
SwitchType=switch/none
JobRequeue=1
ReturnToService=2
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
KillWait=5
MinJobAge=300
NodeName=halo1 NodeAddr=127.0.0.1 NodeHostname=$(hostname) CPUs=2 RealMemory=4096 State=UNKNOWN
PartitionName=debug Nodes=halo1 Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >/dev/null 2>&1 &
pids+=($!)
slurmd -D -N halo1 -f "$SLURM_CONF" >/dev/null 2>&1 &
pids+=($!)
node_idle() { sinfo -h -N -o '%T' | grep -q '^idle'; }
wait_for 30 "the node to be idle" node_idle

# ---- the reference: an uninterrupted 2-rank run ------------------------------------------
train=(train --partitions "$tmp/parts" --mode mini-batch --batch-size 16 --fanouts 5,5
  --epochs 8 --seed 3 --threads 1)
"$halo" partition --dataset "$cora" --parts 2 --out "$tmp/parts" >/dev/null 2>&1
"$mpiexec" -n 2 "$halo" "${train[@]}" --save-model "$tmp/ref.halo" --json "$tmp/ref.json" \
  >/dev/null 2>"$tmp/ref.log"

# ---- the job: signalled once its first checkpoint is committed ----------------------------
ckpt="$tmp/job/ckpt"
"$halo" plan "${train[@]:1}" --emit slurm --job-name halo-requeue --tasks-per-node 2 \
  --slurm-output "$tmp/job/job.out" --launcher "$mpiexec" --checkpoint-dir "$ckpt" \
  --output "$tmp/job/job.sh" -- --checkpoint-every 2 --save-model "$tmp/job/job.halo" \
  --json "$tmp/job/job.json"
grep -q -- "--resume auto" "$tmp/job/job.sh" || fail "the plan's script does not resume"
job=$(sbatch --parsable --chdir="$tmp/job" "$tmp/job/job.sh")
echo "submitted job $job"
job_field() { scontrol -o show job "$job" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
has_checkpoint() { compgen -G "$ckpt/epoch-*/manifest.json"; }
running() { case "$(job_field JobState)" in PENDING | CONFIGURING | RUNNING) return 0 ;; esac; return 1; }
checkpoint_or_ended() { has_checkpoint || ! running; }
wait_for 60 "the first checkpoint" checkpoint_or_ended
has_checkpoint >/dev/null || fail "job $job ended before its first checkpoint"
scancel --signal=USR1 --batch "$job"
echo "sent SIGUSR1 to the batch shell of job $job"

requeued() { [ "$(job_field Restarts)" -ge 1 ] && [ "$(job_field JobState)" = PENDING ]; }
wait_for 60 "the job to requeue itself" requeued
# Slurm makes a requeued job eligible again only after about two minutes; an operator's
# `scontrol update StartTime=...` lets it start sooner (the requeue itself was the script's).
# slurmd refuses a launch in the second the previous run's credential was revoked: 3 s later.
scontrol update JobId="$job" StartTime=now+3
finished() { ! running; }
wait_for 90 "the requeued job to end" finished
[ "$(job_field JobState)" = COMPLETED ] || fail "job $job ended $(job_field JobState)"
restarts=$(job_field Restarts)
echo "job $job: COMPLETED after $restarts requeue(s)"

# ---- checks ------------------------------------------------------------------------------
[ "$restarts" -ge 1 ] || fail "the job was not requeued (Restarts=$restarts)"
grep -q "preempted after" "$tmp/job/job.out" || fail "no preemption in the job's output"
grep -q "preempted, checkpoint committed: requeue" "$tmp/job/job.out" ||
  fail "the batch shell did not requeue on exit 75"
grep -q "SLURM_RESTART_COUNT=1" "$tmp/job/job.out" || fail "the requeued run did not log its restart"
grep -q "resuming from" "$tmp/job/job.out" || fail "the requeued run did not resume"
cmp "$tmp/ref.halo" "$tmp/job/job.halo" || fail "the resumed model differs from the uninterrupted one"
loss() { python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["final_train_loss"]))' "$1"; }
[ "$(loss "$tmp/ref.json")" = "$(loss "$tmp/job/job.json")" ] ||
  fail "final_train_loss $(loss "$tmp/job/job.json") differs from $(loss "$tmp/ref.json")"
echo "slurm: preempted, requeued, resumed: model and final_train_loss $(loss "$tmp/ref.json") equal the uninterrupted run's"
