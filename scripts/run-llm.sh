#!/usr/bin/env bash
# `make run-llm`: `make run` in LLM mode against SmolLM2-135M served on loopback by llama-cpp-python.
# A weak model on purpose: every quote it makes is checked against the answer, and every failure
# falls back to the offline scorer with the reason in the evaluation's notes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wait-for.sh
LLM_PORT=${INTERVIEWER_LLM_PORT:-8080}
.venv/bin/python scripts/local_llm.py --port "$LLM_PORT" &
llm_pid=$!
trap 'kill $llm_pid 2>/dev/null || true' EXIT INT TERM
export INTERVIEWER_LLM_BASE_URL="http://127.0.0.1:${LLM_PORT}/v1"
export INTERVIEWER_LLM_MODEL=smollm2-135m
export INTERVIEWER_LLM_CONTEXT_TOKENS=4096 INTERVIEWER_LLM_MAX_TOKENS=800
# CPU generation: a full grading reply takes tens of seconds; a retry would queue behind the first try.
export INTERVIEWER_LLM_TIMEOUT_S=${INTERVIEWER_LLM_TIMEOUT_S:-180} INTERVIEWER_LLM_MAX_RETRIES=0
# The server answers one request at a time: a batch's calls queued there would spend their timeout waiting.
export INTERVIEWER_LLM_CALLS_IN_FLIGHT=1
wait_for "$INTERVIEWER_LLM_BASE_URL/models" "$llm_pid" "the model server"
echo "Model server on $INTERVIEWER_LLM_BASE_URL ($INTERVIEWER_LLM_MODEL)"
bash scripts/run-local.sh
