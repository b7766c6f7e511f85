# Sourced by the run scripts: wait_for URL PID WHAT waits up to 60 s for URL to answer (then goes on:
# a slow machine may still get there), and stops with one line if the process PID behind it dies.
wait_for() {
  for _ in $(seq 1 120); do
    curl -fsS "$1" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { echo "error: $3 did not start (see above)" >&2; exit 1; }
    sleep 0.5
  done
}
