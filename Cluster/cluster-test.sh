#!/bin/bash
# make cluster-test: a one-node Slurm on this machine, started here and stopped on exit, runs the batch scripts of
# Cluster/slurm: a sharded `compare` as a job array and the dependent merge, whose merged results file must equal a
# single-process run's bit for bit (Cluster/same_results.py, h5py); then a 2-rank data-parallel `train` through
# train-mpi.sbatch (`srun --mpi=pmix`), whose losses and final weights must match one process's within 1e-4
# (Cluster/same_training.py).
#
# Everything lives in a temporary folder: a munge key and munged (run as the invoking user, its own socket),
# slurmctld and slurmd (foreground, as the invoking user) with a generated slurm.conf: the host's short name,
# loopback addresses only, free ports, proctrack/linuxproc, task/none, no cgroups, no accounting. Every daemon
# started is stopped by its process id when the script exits, whatever the outcome.
#
#   Cluster/cluster-test.sh [SLICELAB] [PYTHON]       (defaults: .build/debug/slicelab, .venv/bin/python)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
slicelab=$(realpath "${1:-$root/.build/debug/slicelab}")
python=$(realpath -s "${2:-$root/.venv/bin/python}")
limit=${CLUSTER_TEST_SECONDS:-150}       # the time each set of jobs gets before the test fails
shards=2
say() { echo "cluster-test: $*"; }
fail() { echo "cluster-test: FAILED: $*" >&2; exit 1; }

for tool in munged slurmctld slurmd sbatch squeue scontrol; do
    command -v "$tool" >/dev/null || fail "$tool not found; 'make setup' installs slurm-wlm and munge"
done
[ -x "$slicelab" ] || fail "$slicelab is not built; run 'swift build --product slicelab'"

work=$(mktemp -d /tmp/slicelab-cluster.XXXXXX)
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    if [ "$status" != 0 ]; then
        for log in "$work"/log/*.log "$work"/jobs/*.out; do
            [ -f "$log" ] && { echo "--- $log (last lines)"; tail -n 15 "$log"; }
        done
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT INT TERM
mkdir -p "$work"/{log,state,spool,munge,jobs,data}
user=$(id -un)
host=$(hostname -s)

# munge: its own key and socket; as root munged needs --force.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 700 "$work/munge"; chmod 400 "$work/munge/munge.key"
force=(); [ "$(id -u)" = 0 ] && force=(--force)
munged --foreground "${force[@]}" --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
    --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munge/seed" \
    >"$work/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$work/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$work/munge/munge.socket" ] || fail "munged did not start"

# Two free loopback ports.
read -r ctld_port slurmd_port < <("$python" - <<'EOF'
import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in sockets])
EOF
)
cpus=$(nproc)
cat >"$work/slurm.conf" <<EOF
ClusterName=slicelabtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
PlugStackConfig=$work/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
: >"$work/plugstack.conf"
export SLURM_CONF=$work/slurm.conf
slurmctld -D -c -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$host" -f "$SLURM_CONF" >"$work/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.2
done
[ "$state" = idle ] || fail "the node did not come up (state '${state:-none}')"
say "one-node Slurm up: $host, slurmctld :$ctld_port, slurmd :$slurmd_port, munge $work/munge/munge.socket"

# The small set: 2 training and 4 test cases of the bundled mni-brain demo (links to its files), its model and
# one classical baseline.
demo=$root/Sources/SliceLabKit/Resources/Demo
set=$work/data/mni-small
mkdir -p "$set/images" "$set/labels"
train=(axial025 axial100) test=(axial035 axial075 axial115 axial135)
for name in "${train[@]}" "${test[@]}"; do
    for kind in images labels; do ln -s "$demo/mni-brain/$kind/$name".* "$set/$kind/"; done
done
"$python" -c '
import json, sys
description = json.load(open(sys.argv[1]))
description["splits"] = {"train": sys.argv[3].split(), "val": [], "test": sys.argv[4].split()}
json.dump(description, open(sys.argv[2], "w"), indent=1)
' "$demo/mni-brain/dataset.json" "$set/dataset.json" "${train[*]}" "${test[*]}"
arguments=(compare "$set" --model "$demo/models/mni-brain.h5" --classical kmeans:space=gray,map=train-vote)
cd "$work/jobs"
read -r array merge < <(SHARDS=$shards PARTS=$work/jobs/parts RESULTS=$work/jobs/results.h5 SLICELAB=$slicelab \
    SBATCH_OPTIONS="--cpus-per-task=1 --time=00:05:00" "$root/Cluster/slurm/submit.sh" "${arguments[@]}")
[ -n "${merge:-}" ] || fail "sbatch did not return two job ids"
submitted=$SECONDS
say "submitted array job $array ($shards shards) and merge job $merge (afterok)"

# Meanwhile, the same comparison in one process (the reference the merge must equal).
"$slicelab" "${arguments[@]}" --threads 1 --out "$work/data/single.h5" >"$work/log/single.out"

# Waits for the jobs given (ids separated by commas) up to $limit seconds, then checks each COMPLETED.
wait_for() {
    local deadline=$((SECONDS + limit)) job states
    while [ -n "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]; do
        [ "$SECONDS" -lt "$deadline" ] || { scancel ${1//,/ } || true; fail "jobs $1 still running after ${limit}s"; }
        sleep 1
    done
    for job in ${1//,/ }; do
        states=$(scontrol -o show job "$job" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | sort -u | tr '\n' ' ')
        [ "$states" = "COMPLETED " ] || fail "job $job ended $states"
    done
}
wait_for "$array,$merge"
say "array and merge jobs COMPLETED (all done $((SECONDS - submitted)) s after submission)"
"$python" "$root/Cluster/same_results.py" "$work/data/single.h5" "$work/jobs/results.h5"
say "passed: the merged results of $shards Slurm shards equal the single-process run"

# Data-parallel training: 2 ranks of one node through train-mpi.sbatch (srun --mpi=pmix), 8 steps of the bundled
# mni-brain model fine-tuned with --sync-bn, against one process with the same seed and global batch.
training=("$demo/mni-brain" --arch deeplabv3_mobilenet_v2 --num-classes 3 --aspp-channels 64 --input-scale 4
          --output-stride 8 --init "$demo/models/mni-brain.h5" --steps 8 --batch 4 --crop 64 --lr 1e-4
          --optimizer sgd --seed 5 --sync-bn --val-every 8)
train=$(SLICELAB=$slicelab sbatch --parsable --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 \
    --time=00:05:00 --output="$work/jobs/train-%j.out" "$root/Cluster/slurm/train-mpi.sbatch" "${training[@]}" \
    --out "$work/jobs/model.h5")
train=${train%%;*}
submitted=$SECONDS
say "submitted 2-rank training job $train"
"$slicelab" train "${training[@]}" --threads 1 --out "$work/data/model.h5" >"$work/log/single-train.out" 2>&1
wait_for "$train"
grep -q "data-parallel: 2 ranks" "$work/jobs/train-$train.out" || fail "job $train did not train as 2 ranks"
say "training job COMPLETED as 2 ranks ($((SECONDS - submitted)) s after submission): $(grep "data-parallel" \
    "$work/jobs/train-$train.out")"
"$python" "$root/Cluster/same_training.py" "$work/data/model.last.h5" "$work/jobs/model.last.h5"
say "passed: the 2-rank srun --mpi=pmix training matches one process within 1e-4"
