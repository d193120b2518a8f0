#!/bin/bash
# Latent trees, breast_cancer (treeviz's latent_train split, PrepConfig seed = split), depth 4, batch 64,
# lambda 1, QHAdam lr 1e-2, fixed EPOCHS (no early stop), interleaved rounds (the reference first in odd
# rounds, treeviz first in even rounds), one thread. Round r trains on split (r-1) mod 5.
# usage: run_latent.sh EPOCHS ROUNDS [TAG]     (TAG defaults to latent_e$EPOCHS)
# needs: $REF_HOME/venv_latent, $REF_HOME/latent_run (built), $REF_HOME/data/latent_bc_split*.npz,
#        TREEVIZ_REPO (default: the checkout this script is in) on PYTHONPATH for treeviz's side.
set -u
EPOCHS=$1 ROUNDS=$2 TAG=${3:-latent_e$1}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=${TREEVIZ_REPO:-$(cd "$HERE/../.." && pwd)}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONWARNINGS=ignore
R=${REF_HOME}
ref() {
  echo "== $TAG round $1 (split $2): ref ($(date +%T), load $(cut -d' ' -f1 /proc/loadavg))"
  (cd $R && timeout 1500 $R/venv_latent/bin/python -W ignore $HERE/ref_latent.py --split_file $R/data/latent_bc_split$2.npz \
      --epochs $EPOCHS --out $R/results/${TAG}_r$1_ref.json 2>&1 | grep '^{')
}
ours() {
  echo "== $TAG round $1 (split $2): treeviz ($(date +%T), load $(cut -d' ' -f1 /proc/loadavg))"
  (cd $R && PYTHONPATH=$REPO timeout 1500 python3 $HERE/ours_latent.py --split_file $R/data/latent_bc_split$2.npz \
      --epochs $EPOCHS --seed $2 --out $R/results/${TAG}_r$1_ours.json 2>&1 | grep '^{')
}
for r in $(seq 1 $ROUNDS); do
  s=$(( (r - 1) % 5 ))
  if (( r % 2 )); then ref $r $s; ours $r $s; else ours $r $s; ref $r $s; fi
done
echo "== done $(date +%T)"
