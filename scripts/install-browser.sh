#!/usr/bin/env bash
# The browser end-to-end test's tools: Debian's chromium and the Playwright Python package.
# `playwright install` downloads its own browser builds, which this project does not use:
# the test drives /usr/bin/chromium through Playwright's executable_path instead.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: chromium is missing and installing it needs root: sudo apt-get install -y chromium" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
# Emoji in the app's labels; only screenshots need it, so a failure here is not fatal.
if [ "$(id -u)" -eq 0 ] && ! dpkg -s fonts-noto-color-emoji >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-color-emoji >/dev/null 2>&1 || true
fi

if ! "$PY" -c "import playwright.sync_api" >/dev/null 2>&1; then
  "$PY" -m pip install -q "playwright>=1.45,<2"
fi
echo "browser tools ready: $(command -v chromium), playwright for $PY"
