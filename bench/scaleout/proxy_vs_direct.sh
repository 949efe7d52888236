#!/usr/bin/env bash
# Throughput through the nginx routing proxy against direct connections
# (a benchmark, not a test).  Three runs of `f2obo-cli bench`
# (one Steps stream per session, sessions named so that the proxy routes
# them by key), each on fresh servers with --durability=none, so that the
# proxy's cost is not hidden behind fsyncs:
#   direct-1      the load straight into one server
#   proxy-1       the same load through nginx in front of that one server
#   proxy-3       the same load through nginx in front of three servers
# Prints one line per run and the ratios proxy-1/direct-1 (the proxy's own
# cost) and proxy-3/direct-1.
#   bench/scaleout/proxy_vs_direct.sh BUILD_DIR [STREAMS] [STEPS] [ROWS]
set -euo pipefail
build="${1:?usage: $0 BUILD_DIR [STREAMS] [STEPS] [ROWS]}"
streams="${2:-16}" steps="${3:-300}" rows="${4:-64}"
here="$(cd "$(dirname "$0")" && pwd)"
server="$build/server/f2obo-server" cli="$build/client/f2obo-cli"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

start_server() {  # name -> sets $addr (host:port) once the server announces it
  local dir="$work/$1" line=""
  mkdir -p "$dir"
  # stdout to a file, not a pipe: the server must never get SIGPIPE.
  "$server" --listen=127.0.0.1:0 --metrics_listen= --data_dir="$dir/data" --durability=none \
    --replica_name="$1" >"$dir/banner" 2>"$dir/server.log" &
  pids+=($!)
  for _ in $(seq 400); do
    line="$(grep -m1 'listening on' "$dir/banner" || true)"
    [ -n "$line" ] && break
    sleep 0.05
  done
  addr="127.0.0.1:$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
}

start_proxy() {  # name replica-args... -> sets $addr once a call through it is answered
  local prefix="$work/$1" port
  shift
  mkdir -p "$prefix"
  port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  local user=()
  [ "$(id -u)" -eq 0 ] && user=(--user=root)
  /usr/bin/python3 "$here/../../deploy/proxy/gen_proxy_config.py" nginx --workers=1 \
    --listen="127.0.0.1:$port" --prefix="$prefix" "${user[@]}" "$@" >"$prefix/nginx.conf"
  nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" &
  pids+=($!)
  # Ready once the proxy answers a health check through to a replica.
  for _ in $(seq 200); do
    if "$cli" health --server="127.0.0.1:$port" --timeout=1 >/dev/null 2>&1; then
      addr="127.0.0.1:$port"
      return
    fi
    sleep 0.05
  done
  echo "nginx did not come up: $(cat "$prefix/error.log")" >&2
  return 1
}

run() {  # label target
  local out rate
  out="$("$cli" bench --server="$2" --id="b" --sessions="$streams" --threads="$streams" \
           --steps="$steps" --rows_per_step="$rows" --features=64 --classes=2 --max_seconds=300 2>&1)"
  rate="$(echo "$out" | grep -oE '[0-9.]+ steps/s' | head -1 | cut -d' ' -f1)"
  printf '%-10s %10s steps/s   %s\n' "$1" "$rate" "$(echo "$out" | grep -oE 'p50 .* p99 [0-9.]+ ms')" >&2
  echo "$rate"
}

start_server r0; s0="$addr"
direct="$(run direct-1 "$s0")"
start_proxy p1 --replica="r0=$s0"; p1="$addr"
proxy1="$(run proxy-1 "$p1")"
start_server r1; s1="$addr"
start_server r2; s2="$addr"
start_proxy p3 --replica="r0=$s0" --replica="r1=$s1" --replica="r2=$s2"; p3="$addr"
proxy3="$(run proxy-3 "$p3")"
/usr/bin/python3 -c "print('ratio proxy-1 / direct-1: %.3f   proxy-3 / direct-1: %.3f' % ($proxy1 / $direct, $proxy3 / $direct))"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(nginx -v 2>&1)"
