# Shared by the service benchmarks: run_loadgen starts a fresh f2obo-server
# on loopback (fresh data directory, the given --durability), runs
# `f2obo-cli bench` against it with one stream per thread, stops the server
# and prints one line: label, durability, streams, steps/s, rows/s and MB/s,
# client-observed latency percentiles, the p50 of the replies'
# report.round_seconds (the server's time in the round alone).
# Requires: $server, $cli, $work (a scratch directory) set by the caller.

run_loadgen() {  # durability streams label bench-args...
  local durability="$1" streams="$2" label="$3"
  shift 3
  rm -rf "$work/data"
  rm -f "$work/banner"
  mkfifo "$work/banner"
  "$server" --listen=127.0.0.1:0 --metrics_listen= --data_dir="$work/data" \
    --durability="$durability" >"$work/banner" 2>"$work/server.log" &
  pid=$!
  local line port out rate volume lat
  read -r line <"$work/banner"
  port="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
  if ! out="$("$cli" bench --server="127.0.0.1:$port" --sessions="$streams" \
                 --threads="$streams" "$@" 2>&1)"; then
    echo "f2obo-cli bench failed ($label, $durability, $streams streams):" >&2
    echo "$out" >&2
    kill -TERM "$pid"; wait "$pid" || true
    return 1
  fi
  kill -TERM "$pid"; wait "$pid" || true
  rate="$(echo "$out" | grep -oE '[0-9.]+ steps/s' | head -1)"
  volume="$(echo "$out" | grep -oE '\((([0-9]+ rows/s, )?[0-9.e+]+ MB/s)\)' | head -1)"
  lat="$(echo "$out" | grep -oE 'p50 .* p99 [0-9.]+ ms' | head -1 || true)"
  round="$(echo "$out" | grep -oE 'round_seconds\): p50 [0-9.]+ ms' | grep -oE '[0-9.]+ ms' || true)"
  printf '%-34s %-5s %3s streams  %-17s %-28s %s  round p50 %s\n' "$label" "$durability" \
    "$streams" "$rate" "$volume" "$lat" "$round"
}
