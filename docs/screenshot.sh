#!/usr/bin/env bash
# Takes docs/live-page.png: the live page at the end of the demo game.
# Needs chromium (apt-get install chromium) and curl. Usage: bash docs/screenshot.sh [PORT]
set -euo pipefail
cd "$(dirname "$0")/.."
port="${1:-19821}"
cargo build --release -q
./target/release/eboard-bridge demo --http "127.0.0.1:$port" --stay > /dev/null 2>&1 &
demo=$!
trap 'kill $demo 2>/dev/null || true' EXIT
# The game's result in /api/boards (the demo plays at real speed: about a minute).
for _ in $(seq 1 600); do
  if curl -sf "http://127.0.0.1:$port/api/boards" | grep -q '"Result":"1-0"'; then break; fi
  sleep 0.5
done
profile=$(mktemp -d)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size=900,780 \
  --timeout=5000 --screenshot="$PWD/docs/live-page.png" \
  "http://127.0.0.1:$port/" 2>/dev/null
rm -rf "$profile"
echo "docs/live-page.png"
