#!/bin/sh
# System calls of an idle daemon: `sh benches/idle-syscalls.sh [SECONDS]` (60 by
# default; needs strace and the right to trace the daemon, e.g. root).
#
# One emulated board stands at the start position on a real pty (no clock running,
# so the board sends nothing), and a second device is absent. The daemon runs with
# no D-Bus (`--bus none`) and no network. Once it has connected and settled, every
# thread of the daemon is traced for SECONDS and the count of system calls, by
# call, is printed. Expected: none. (strace writes nothing at all for a process that
# made no call, so a control follows: a short trace across a SIGHUP, which makes the
# daemon read its configuration again, must count calls, or the figure means nothing.)
set -eu
secs=${1:-60}
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/eboard-bridge
dir=$(mktemp -d)
emu=
daemon=
cleanup() {
    if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; fi
    if [ -n "$emu" ]; then kill "$emu" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
cat > "$dir/idle.esl" <<'EOF'
# eboard-sensor-log 1
0.000 board rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR
EOF
"$bin" emulate --log "$dir/idle.esl" --link "$dir/board" 2>"$dir/emulator.txt" &
emu=$!
i=0
while [ ! -e "$dir/board" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
mkdir -p "$dir/state" "$dir/devices"
# The absent device's nearest folder is watched: nothing else is written there
# (the traces written in "$dir" would wake the daemon, rightly, and be counted).
STATE_DIRECTORY="$dir/state" "$bin" run --bus none --device "$dir/board" --device "$dir/devices/absent/board" 2>"$dir/daemon.txt" &
daemon=$!
# Start-up: the line opened, the start-up commands answered, the game started,
# the first dump confirmed by a second, and the runtime's blocking threads (files
# are written on them) ended, 10 s after their last use.
sleep 15
if ! kill -0 "$daemon" 2>/dev/null; then
    echo "the daemon did not start:" >&2
    cat "$dir/daemon.txt" >&2
    exit 1
fi
tasks=$(ls /proc/"$daemon"/task | tr '\n' ',' | sed 's/,$//')
echo "daemon pid $daemon, threads $tasks; what it said at start-up:"
sed "s/^/  /" "$dir/daemon.txt"
echo "tracing for $secs s"
timeout -s INT "$secs" strace -c -f -p "$tasks" -o "$dir/strace.txt" 2>/dev/null || true
calls=$(awk '$NF == "total" { print $4 }' "$dir/strace.txt")
cat "$dir/strace.txt"
(sleep 1; kill -HUP "$daemon") &
timeout -s INT 3 strace -c -f -p "$tasks" -o "$dir/control.txt" 2>/dev/null || true
control=$(awk '$NF == "total" { print $4 }' "$dir/control.txt")
if [ -z "$control" ] || [ "$control" -eq 0 ]; then
    echo "control failed: the trace saw no call across a SIGHUP; the figure cannot be trusted" >&2
    exit 1
fi
echo "control: $control system calls in 3 s across a SIGHUP (the trace sees the daemon)"
echo "idle for $secs s with one board connected and one device absent: ${calls:-0} system calls"
