#!/bin/bash
# Submits a sharded run and its merge: an N-task array of shard-array.sbatch, then merge.sbatch once every
# task succeeded (afterok). Prints the two job ids.
#
#   SHARDS=8 PARTS=parts RESULTS=results.h5 Cluster/slurm/submit.sh compare DATASET --model MODEL.h5
#
# Environment: SHARDS (N, default 4), PARTS, RESULTS, SLICELAB as in the two scripts; SBATCH_OPTIONS are
# added to both sbatch calls (e.g. "--partition=short --account=lab").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shards=${SHARDS:-4}
export SHARDS=$shards PARTS=${PARTS:-parts} RESULTS=${RESULTS:-results.h5} SLICELAB=${SLICELAB:-slicelab}
# shellcheck disable=SC2086
array=$(sbatch --parsable ${SBATCH_OPTIONS:-} --array=0-$((shards - 1)) "$here/shard-array.sbatch" "$@")
array=${array%%;*}
# shellcheck disable=SC2086
merge=$(sbatch --parsable ${SBATCH_OPTIONS:-} --dependency=afterok:"$array" --kill-on-invalid-dep=yes \
    "$here/merge.sbatch")
echo "$array ${merge%%;*}"
