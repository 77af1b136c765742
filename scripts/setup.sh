#!/usr/bin/env bash
# Set up a virtual environment in .venv with everything the app needs.
#   scripts/setup.sh         runtime only (to run the app)
#   scripts/setup.sh --dev   plus the test tools, and Debian's chromium, nginx and a Chinese font for the browser tests
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
req=requirements.txt
if [ "${1:-}" = "--dev" ]; then
  req=requirements-dev.txt
  # The browser tests drive Debian's chromium with playwright (never playwright's own browser download);
  # tests/test_proxy.py runs Debian's nginx in front of two app processes.
  missing=""
  [ -x /usr/bin/chromium ] || missing="$missing chromium"
  command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx"
  # Chinese pages (lang=zh) in the browser tests and screenshots: a small CJK font (5 MB) unless one is installed.
  if ! fc-list :lang=zh 2>/dev/null | grep -q .; then missing="$missing fonts-wqy-microhei"; fi
  if [ -n "$missing" ]; then
    sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
    $sudo_ apt-get update -q && $sudo_ apt-get install -y -q $missing
  fi
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req" -c constraints.txt
# the translation catalogs: i18n/locale/*/LC_MESSAGES/messages.po -> messages.mo (not kept in git)
.venv/bin/python scripts/i18n.py compile >/dev/null
