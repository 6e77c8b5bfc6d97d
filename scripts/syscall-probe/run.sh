#!/usr/bin/env bash
# Side by side, one run: the epoll and io_uring probes (probe.c), streamd (with and without
# its idle polling) and Redis, each
# answering `redis-benchmark -c CLIENTS -P 1 PING` for ROUNDS rounds in alternating order;
# prints requests/s and the server's CPU per request (user + kernel, from /proc/PID/stat),
# the medians of the rounds with their min-max. See docs/performance.md, "Batching system
# calls".
#
#   scripts/syscall-probe/run.sh [ROUNDS] [REQUESTS] [CLIENTS...]     (default 3 500000 50 1000)
#
# Needs gcc, liburing-dev (apt-get install liburing-dev), redis-server and redis-benchmark,
# and a release build of streamd (cargo build --release). Uses ports 17711-17715.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
REQUESTS=${2:-500000}
shift 2 2>/dev/null || shift $#
CLIENTS=("${@:-50 1000}")
[ ${#CLIENTS[@]} -eq 1 ] && read -r -a CLIENTS <<< "${CLIENTS[0]}"
STREAMD=${STREAMD:-target/release/streamd}
REDIS=${REDIS:-redis-server}

work=$(mktemp -d /tmp/syscall-probe.XXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
gcc -O2 -Wall -o "$work/probe" scripts/syscall-probe/probe.c -luring

start() { # name port command...
    local name=$1 port=$2; shift 2
    mkdir -p "$work/$name"
    (cd "$work/$name" && exec "$@") > "$work/$name.log" 2>&1 &
    pids+=($!)
    eval "pid_$name=$!"
    for _ in $(seq 100); do redis-cli -p "$port" ping > /dev/null 2>&1 && return; sleep 0.05; done
    echo "$name did not start on $port" >&2; exit 1
}
start epoll 17711 "$work/probe" epoll 17711
start uring 17712 "$work/probe" uring 17712
start streamd 17713 "$PWD/$STREAMD" --port 17713 --save '' --appendonly no
start redis 17714 "$REDIS" --port 17714 --save '' --appendonly no
# streamd polls its sockets for idle-poll-us (100 us) before sleeping: CPU spent waiting,
# which this row leaves out.
start streamd_nopoll 17715 "$PWD/$STREAMD" --port 17715 --save '' --appendonly no --idle-poll-us 0
names=(epoll uring streamd streamd_nopoll redis)
ports=(17711 17712 17713 17715 17714)
ticks() { awk '{print $14 + $15, $14}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

for c in "${CLIENTS[@]}"; do
    declare -A rps=() cpu=() sys=()
    for r in $(seq "$ROUNDS"); do
        # Rotate the order each round so no server always runs first or last.
        for k in 0 1 2 3 4; do
            i=$(( (k + r) % 5 )); n=${names[$i]}; p=${ports[$i]}; pid_var=pid_$n
            read -r t0 u0 < <(ticks "${!pid_var}")
            out=$(redis-benchmark -p "$p" -c "$c" -P 1 -n "$REQUESTS" -q PING 2>/dev/null | tr '\r' '\n' | grep "requests per second" | tail -1)
            read -r t1 u1 < <(ticks "${!pid_var}")
            v=$(echo "$out" | awk '{print $2}')
            rps[$n]+="$v "
            cpu[$n]+="$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$REQUESTS" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}') "
            sys[$n]+="$(awk -v t=$((t1 - t0)) -v u=$((u1 - u0)) 'BEGIN {printf "%.0f", t ? 100 * (t - u) / t : 0}') "
        done
    done
    echo "## redis-benchmark -c $c -P 1 PING, $ROUNDS rounds of $REQUESTS"
    echo "| server | requests/s median (min-max) | server CPU us/request median (min-max) | kernel share |"
    echo "|---|---|---|---|"
    for n in "${names[@]}"; do
        med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {printf "%s (%s-%s)", a[int((NR+1)/2)], a[1], a[NR]}'; }
        echo "| $n | $(echo "${rps[$n]}" | med) | $(echo "${cpu[$n]}" | med) | $(echo "${sys[$n]}" | med)% |"
    done
    unset rps cpu sys
done
