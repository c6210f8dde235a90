#!/usr/bin/env bash
# make demo: from nothing to a SIMULATED refund receipt for QH-1001 (all data fictional).
#
# Starts a local Temporal dev server (unless TEMPORAL_ADDRESS names one) as `make dev-server` does
# (python -m devstack, with the codec server its Web UI shows compressed payloads through,
# docs/payloads.md), on TEMPORAL_PORT, TEMPORAL_UI_PORT and CODEC_PORT (7233, 8233, 8089 unless set;
# a port already taken is refused before anything starts, naming what holds it), the worker and the
# commerce MCP server (over stdio, launched by the worker), runs one refund case to
# waiting_approval, approves it as reviewer chen with `temporal workflow update execute` carrying an
# approval token signed with chen's own key (the command `review-info --approve` prints), shows the
# signed receipt and the number of history events, verifies the chain of proof offline
# (`starter.py verify`), stops the worker and reads the case from its history alone
# (`starter.py audit`), and stops what it started. The demo's own state dir
# (.state/demo by default) is recreated on every run, so the demo can be run again and again.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.venv/bin
STATE_DIR=${STATE_DIR:-.state/demo}
TEMPORAL_PORT=${TEMPORAL_PORT:-7233}
TEMPORAL_UI_PORT=${TEMPORAL_UI_PORT:-8233}
CODEC_PORT=${CODEC_PORT:-8089}
CONSOLE_PORT=${CONSOLE_PORT:-8090}
CHAT_PORT=${CHAT_PORT:-8092}
CODEC_ENDPOINT=
TEMPORAL=${TEMPORAL_CLI:-$BIN/temporal}

# Before anything starts: a port that answers belongs to someone else (a `make dev-server` still
# running, say), and the demo must not run its case on that server.
if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  if ! taken=$($BIN/python -m devstack.ports --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT" \
    --codec-port "$CODEC_PORT" --console-port "$CONSOLE_PORT" --chat-port "$CHAT_PORT" 2>&1); then
    sed 's/^/demo: /' <<<"$taken" >&2
    echo "demo: nothing was started. Free the port(s), or run e.g." \
      "TEMPORAL_PORT=7243 TEMPORAL_UI_PORT=8243 CODEC_PORT=8099 CONSOLE_PORT=8091 CHAT_PORT=8093 make demo" >&2
    exit 2
  fi
fi

rm -rf "$STATE_DIR"
mkdir -p "$STATE_DIR"
started=()

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() {
  for pid in "${started[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT INT TERM

say "1. Commerce data (fictional), demo keys and the MCP server's tools"
$BIN/python starter.py --state-dir "$STATE_DIR" --profile alice init
$BIN/python starter.py --state-dir "$STATE_DIR" --profile alice mcp-tools

say "2. The refund quote for QH-1001, read through the real MCP server"
$BIN/python starter.py --state-dir "$STATE_DIR" --profile alice quote QH-1001

if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  export TEMPORAL_ADDRESS=127.0.0.1:$TEMPORAL_PORT
  say "3. Local Temporal dev server on $TEMPORAL_ADDRESS (Web UI http://localhost:$TEMPORAL_UI_PORT, state $STATE_DIR/temporal.db)"
  # python -m devstack, as `make dev-server` runs it: the codec server beside the UI shows the compressed
  # payloads decoded (docs/payloads.md); it says "Temporal dev server on" once both servers it started
  # answer, and stops both on SIGTERM.
  CODEC_ENDPOINT=http://127.0.0.1:$CODEC_PORT
  # The output file exists before the server starts: a background job opens its redirection only once
  # it runs, and the wait below must not read a file that is not there yet (a stray "grep: No such file").
  : >"$STATE_DIR/dev-server.out"
  $BIN/python -m devstack --state-dir "$STATE_DIR" --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT" \
    --codec-port "$CODEC_PORT" --console-port "$CONSOLE_PORT" --chat-port "$CHAT_PORT" \
    >"$STATE_DIR/dev-server.out" 2>&1 &
  DEV_SERVER=$!
  started+=($DEV_SERVER)
  until grep -q "^Temporal dev server on" "$STATE_DIR/dev-server.out"; do
    kill -0 "$DEV_SERVER" 2>/dev/null || { sed 's/^/demo: /' "$STATE_DIR/dev-server.out" >&2; exit 1; }
    sleep 0.3
  done
  cat "$STATE_DIR/dev-server.out"
else
  say "3. Using the Temporal server at $TEMPORAL_ADDRESS (the worker registers the case search attributes)"
fi

say "4. The worker (model: rehearsal unless a provider is configured; see docs/models.md)"
: >"$STATE_DIR/worker.log"  # exists before the worker starts, as dev-server.out above
$BIN/python worker.py --state-dir "$STATE_DIR" --set-current >"$STATE_DIR/worker.log" 2>&1 &
WORKER=$!
started+=($WORKER)
for _ in $(seq 1 120); do
  grep -q "polling task queue" "$STATE_DIR/worker.log" && break
  kill -0 "$WORKER" 2>/dev/null || { cat "$STATE_DIR/worker.log" >&2; echo "the worker did not start" >&2; exit 1; }
  sleep 0.5
done
grep "^worker:" "$STATE_DIR/worker.log" || true

KEY="demo-$(date +%s)"
CASE=$($BIN/python -c "from case_client import case_id_for; from keystore import demo_identity; print(case_id_for('$KEY', demo_identity('alice')))")
say "5. alice writes: I want a refund for my lamp (the service asks which order, and waits for her)"
# ask exits 3 here: the case waits for its customer (waiting_customer), as a person must answer
status=0
$BIN/python starter.py --state-dir "$STATE_DIR" --profile alice ask "I want a refund for my lamp" \
  --request-key "$KEY" || status=$?
[ "$status" -eq 3 ] || { echo "demo: expected the case to wait for alice's answer (exit 3), got $status" >&2; exit 1; }
say "6. alice answers in the same conversation: It is order QH-1001 (a refund proposal then waits for a reviewer)"
$BIN/python starter.py --state-dir "$STATE_DIR" --profile alice say "$CASE" "It is order QH-1001"

DIGEST=$($BIN/python starter.py --state-dir "$STATE_DIR" status "$CASE" --json \
  | $BIN/python -c 'import json, sys; print(json.load(sys.stdin)["digest"])')
say "7. Reviewer chen approves digest ${DIGEST:0:16}… with the Temporal CLI: an update carrying a token signed with his own key"
echo "\$ starter.py --profile chen review-info $CASE --approve   # prints the signed update, signal and Web UI input"
INFO=$($BIN/python starter.py --state-dir "$STATE_DIR" --profile chen review-info "$CASE" --approve)
grep -E "^chen signed" <<<"$INFO"
UPDATE=$(grep -m1 "workflow update execute" <<<"$INFO" | sed 's/^ *//')
# The command as printed, with the token shortened for the screen; it runs exactly as printed.
echo "\$ $UPDATE" | sed -E 's/("approval_token": "[^"]{16})[^"]*/\1…/'
bash -c "$UPDATE"

say "8. The completed case"
$BIN/python starter.py --state-dir "$STATE_DIR" status "$CASE" --wait
EVENTS=$("$TEMPORAL" workflow describe --address "$TEMPORAL_ADDRESS" --workflow-id "case-$CASE" -o json \
  | $BIN/python -c 'import json, sys; print(json.load(sys.stdin)["workflowExecutionInfo"]["historyLength"])')
echo "workflow history of case-$CASE: $EVENTS events (temporal workflow show --workflow-id case-$CASE${CODEC_ENDPOINT:+ --codec-endpoint $CODEC_ENDPOINT})"

say "9. The chain of proof, checked offline from the workflow history and the public keys only"
$BIN/python starter.py --state-dir "$STATE_DIR" --profile chen verify "$CASE"
say "10. An auditor reads the whole case from its workflow history alone (the worker is stopped first)"
kill "$WORKER" 2>/dev/null || true
wait "$WORKER" 2>/dev/null || true
$BIN/python starter.py --state-dir "$STATE_DIR" --profile chen audit "$CASE"
say "Done: the receipt above is SIMULATED; no money moved. Stopping what the demo started."
