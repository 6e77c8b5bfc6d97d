#!/usr/bin/env bash
# Runs streamd-bench with a release streamd (A) and Debian's redis-server (B) side by side:
# builds the release binaries, starts both on free loopback ports with persistence off,
# runs every workload (or those given), prints the table and stops both servers.
#
#   scripts/bench.sh                       # all workloads, default scale (about 10 minutes)
#   scripts/bench.sh --scale 0.1 --rounds 3 --only xadd,mem
#   scripts/bench.sh --json > results.jsonl
#
# Every argument is passed to streamd-bench (see `streamd-bench --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v redis-server >/dev/null || { echo "redis-server is not installed" >&2; exit 1; }
cargo build --release --locked --bin streamd --bin streamd-bench >&2

tmp=$(mktemp -d -t streamd-bench.XXXXXX)
spid=""
rpid=""
stop() {
  for pid in $spid $rpid; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $spid $rpid; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap stop EXIT INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_ping() { # port pid name
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ] && return 0
    kill -0 "$2" 2>/dev/null || { echo "$3 exited at start (log: $tmp)" >&2; cat "$tmp/$3.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$3 did not answer PING on port $1" >&2
  exit 1
}

# Up to 10,000 connections per workload on each side (blocked-readers/r10000).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

sport=$(free_port)
mkdir -p "$tmp/streamd"
./target/release/streamd --port "$sport" --bind 127.0.0.1 --dir "$tmp/streamd" \
  --appendonly no --save '' --maxclients 12000 >"$tmp/streamd.log" 2>&1 &
spid=$!
wait_ping "$sport" "$spid" streamd

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --dir "$tmp" --save '' --appendonly no \
  --maxclients 12000 >"$tmp/redis.log" 2>&1 &
rpid=$!
wait_ping "$rport" "$rpid" redis

echo "A = streamd $(git rev-parse --short HEAD 2>/dev/null || echo '?') on 127.0.0.1:$sport," \
  "B = $(redis-server --version | cut -d' ' -f1-3) on 127.0.0.1:$rport" >&2
./target/release/streamd-bench --a "127.0.0.1:$sport" --b "127.0.0.1:$rport" "$@"
