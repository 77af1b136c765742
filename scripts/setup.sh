#!/usr/bin/env bash
# Set up a virtual environment in .venv with everything the app needs.
#   scripts/setup.sh         runtime only (to run the app)
#   scripts/setup.sh --dev   plus the test tools
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
req=requirements.txt
[ "${1:-}" = "--dev" ] && req=requirements-dev.txt
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req" -c constraints.txt
