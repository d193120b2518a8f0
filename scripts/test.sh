#!/usr/bin/env bash
# Install everything the test suite needs, check the code (ruff's rules and the one-way import layers
# declared in pyproject.toml), then run all the tests (unit, contract, app and browser tests).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/treeviz -x`.
#
# Tiers (the first argument may choose one):
#   (none)   what CI runs: every test but the `deep` ones, the `slow` ones included, with the fuzz
#            tests at their small CI count, in one pytest-xdist worker per core
#            (TREEVIZ_TEST_WORKERS overrides: a number, or 0 for one process), idle workers taking
#            queued tests from busy ones
#   --fast   the quick loop: the tests marked neither `slow` nor `deep`
#   --deep   every test, the `deep` browser re-checks included, and the fuzz tests at 2 000 examples
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x /usr/bin/chromium ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
$PY -m pip install -q --disable-pip-version-check -r requirements-dev.txt
$PY -m ruff check .
$PY -c "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
TIER=ci
case "${1:-}" in
  --fast) TIER=fast; shift ;;
  --deep) TIER=deep; shift ;;
esac
# worksteal: a worker that runs out of tests takes queued ones from a busy worker, so a worker
# held up by a long browser test does not leave the others idle at the end of the run
WORKERS=(-n "${TREEVIZ_TEST_WORKERS:-auto}" --dist worksteal)
case "$TIER" in
  fast) exec $PY -m pytest "${WORKERS[@]}" -m "not slow and not deep" "$@" ;;
  deep) TREEVIZ_FUZZ_PROFILE=slow exec $PY -m pytest "${WORKERS[@]}" "$@" ;;
  *) exec $PY -m pytest "${WORKERS[@]}" -m "not deep" "$@" ;;
esac
