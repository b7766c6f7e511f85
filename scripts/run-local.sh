#!/usr/bin/env bash
# `make run`: the API and the Streamlit app on loopback, single-user (no API keys), embedded defaults.
# Stopping the app (Ctrl-C) stops the API too.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wait-for.sh
BIN=.venv/bin
API_PORT=${INTERVIEWER_API_PORT:-8000}
UI_PORT=${INTERVIEWER_UI_PORT:-8501}
export INTERVIEWER_AUTH_DISABLED=true
export INTERVIEWER_API_URL="http://127.0.0.1:${API_PORT}"

$BIN/interviewer ingest
$BIN/interviewer serve --host 127.0.0.1 --port "$API_PORT" &
api_pid=$!
trap 'kill $api_pid 2>/dev/null || true' EXIT INT TERM
wait_for "$INTERVIEWER_API_URL/healthz" "$api_pid" "the API"
echo "API on $INTERVIEWER_API_URL, app on http://127.0.0.1:${UI_PORT}"
$BIN/streamlit run streamlit_app.py --server.address 127.0.0.1 --server.port "$UI_PORT" \
  --server.headless true --browser.gatherUsageStats false
