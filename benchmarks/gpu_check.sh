#!/usr/bin/env bash
# The GPU measurements, in one call that fits in 5 minutes of device time:
#
#     bash benchmarks/gpu_check.sh [NAME ...]
#
# By default it runs `python -m benchmarks.speed.device_scale --device cuda`: every torch family trained
# on 100 000 rows with device="cuda" against device="cpu" (the ratio), then the crossover ladders
# (where the GPU starts to win, read against models/devices.py's CROSSOVERS); every row records the
# card (torch.cuda.get_device_name) that gave it. GPU_CHECK_ALL=1 adds, after it and within the same
# budget, every other benchmark with a device mode (benchmarks.report.run.DEVICE_BENCHMARKS: dgt,
# latent_pruning, latent_train, skinny, tao_solvers, ...); NAMEs pick benchmarks by hand. Each runs
# in its own process under a time limit, all within a total budget; each prints its table (CPU vs
# CUDA time per workload and the ratio) and writes the rows under results["device_timing"] of
# benchmarks/results/NAME.json, keeping the rest of the file. At the end every device table and the
# crossovers are printed again. When $OUT names a folder (the GPU tool sets it), the JSON files
# written and the log are copied there.
#
# Environment (all optional):
#   TREEVIZ_SHARED_DATA   the papers' data; default $PWD/.devdata when that folder exists, else the
#                         benchmarks' own default (../shared/data); without it, synthetic data of the
#                         same shapes is timed (each row's "data" says which)
#   GPU_CHECK_BUDGET_S    total seconds for all benchmarks (default 270); one that would start with
#                         under 30 s left is skipped
#   GPU_CHECK_LIMIT_S     seconds for one benchmark (default 240); past it, it is stopped, unwritten
#                         (device_scale keeps 20 s inside its limit: a workload that would start later
#                         is recorded as skipped, so what was measured is written)
#   GPU_CHECK_ALL=1       every benchmark with a device mode, device_scale first
#   GPU_CHECK_QUICK=1     tiny workloads (--quick): a smoke test of a few seconds per benchmark
#   GPU_CHECK_DRY_RUN=1   no GPU needed: the benchmarks' CPU smoke path (--device cpu --quick, the CPU
#                         timed against itself), results in a temporary folder unless
#                         TREEVIZ_BENCH_RESULTS says where; to check this script on a machine without one
#   PYTHON                the interpreter (default python3)
#
# Exit status: 0 when every benchmark ran, 1 when one failed, timed out or was skipped, 2 without a GPU.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1

PY=${PYTHON:-python3}
BUDGET=${GPU_CHECK_BUDGET_S:-270}
LIMIT=${GPU_CHECK_LIMIT_S:-240}
DRY=${GPU_CHECK_DRY_RUN:-0}
QUICK=()
[ "${GPU_CHECK_QUICK:-0}" = "1" ] || [ "$DRY" = "1" ] && QUICK=(--quick)
DEVICE=cuda
if [ "$DRY" = "1" ]; then
    DEVICE=cpu
    [ -z "${TREEVIZ_BENCH_RESULTS:-}" ] && export TREEVIZ_BENCH_RESULTS="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_dry.XXXXXX")"
fi
if [ -z "${TREEVIZ_SHARED_DATA:-}" ] && [ -d .devdata ]; then
    export TREEVIZ_SHARED_DATA="$PWD/.devdata"
fi
export PYTHONUNBUFFERED=1
RESULTS=${TREEVIZ_BENCH_RESULTS:-benchmarks/results}
[ -z "${TREEVIZ_BENCH_RESULTS:-}" ] && [ ${#QUICK[@]} -gt 0 ] && RESULTS=benchmarks/results/quick  # a quick run's place
LOG=$(mktemp "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
start=$SECONDS

say() { echo "$*" | tee -a "$LOG"; }

command -v nvidia-smi >/dev/null && nvidia-smi -L 2>&1 | tee -a "$LOG"
if [ "$DRY" = "1" ]; then
    say "gpu_check: dry run on the CPU (GPU_CHECK_DRY_RUN=1): the smoke path, not a measurement; results in $RESULTS"
elif ! "$PY" -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda',
torch.version.cuda, '|', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU');
sys.exit(0 if torch.cuda.is_available() else 2)" 2>&1 | tee -a "$LOG"; then
    say "gpu_check: torch sees no GPU here; run this on a machine with a CUDA GPU"
    exit 2
fi
say "shared data: ${TREEVIZ_SHARED_DATA:-the default ../shared/data}; budget ${BUDGET} s, ${LIMIT} s per benchmark"

if [ $# -gt 0 ]; then
    names=("$@")
elif [ "${GPU_CHECK_ALL:-0}" = "1" ]; then
    read -r -a names < <("$PY" -c "from benchmarks.report.run import DEVICE_BENCHMARKS as D
print('device_scale', *[n for n in D if n != 'device_scale'])")
else
    names=(device_scale)
fi
say "benchmarks: ${names[*]}"

status=0
ran=()
summary=()
for name in "${names[@]}"; do
    left=$((BUDGET - (SECONDS - start)))
    if [ "$left" -lt 30 ]; then
        summary+=("$name: skipped (${left} s of the budget left)")
        status=1
        continue
    fi
    limit=$((left < LIMIT ? left : LIMIT))
    t0=$SECONDS
    if [ "$name" = device_scale ]; then  # its own command line takes the time budget
        command=(-m benchmarks.speed.device_scale --budget-s $((limit > 40 ? limit - 20 : limit / 2)))
    else
        command=(-m benchmarks.report.run "$name")
    fi
    timeout -k 10 "$limit" "$PY" "${command[@]}" --device "$DEVICE" "${QUICK[@]}" 2>&1 | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    took=$((SECONDS - t0))
    if [ "$rc" -eq 0 ]; then
        summary+=("$name: ok (${took} s)")
        ran+=("$name")
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        summary+=("$name: stopped at its ${limit} s limit (nothing written)")
        status=1
    else
        summary+=("$name: failed with exit status $rc after ${took} s")
        status=1
    fi
done

say ""
say "== gpu_check: $((SECONDS - start)) s in all"
for line in "${summary[@]}"; do say "  $line"; done
if [ ${#ran[@]} -gt 0 ]; then
    say ""
    "$PY" -m benchmarks.device_timing "${ran[@]}" 2>&1 | tee -a "$LOG"
    for name in "${ran[@]}"; do
        [ "$name" = device_scale ] && "$PY" -m benchmarks.speed.device_scale --crossovers 2>&1 | tee -a "$LOG"
    done
fi

if [ -n "${OUT:-}" ] && [ -d "${OUT}" ]; then
    copied=0
    for name in "${ran[@]}"; do  # at most 7 files and the log
        [ "$copied" -lt 7 ] && [ -f "$RESULTS/$name.json" ] && cp "$RESULTS/$name.json" "$OUT/" && copied=$((copied + 1))
    done
    cp "$LOG" "$OUT/gpu_check.log"
    say "copied $copied result file(s) and gpu_check.log to $OUT"
fi
rm -f "$LOG"
exit "$status"
