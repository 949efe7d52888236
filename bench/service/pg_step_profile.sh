#!/usr/bin/env bash
# Where a `sync` step's time goes on the PostgreSQL store, against the
# embedded store: STREAMS streams (default 1) of tiny steps (as
# pg_vs_embedded.sh) on each,
# on a throwaway PostgreSQL 15 on loopback (fsync = on, synchronous_commit
# = on, full_page_writes = on; pg_stat_statements loaded, track_wal_io_timing
# on, to read the database's own timings).  Prints per step:
#   client     the client-observed p50 (f2obo-cli bench);
#   store call the server's mean time in the store's commit call (the
#              libpq round trip: f2obo_store_commit_seconds sum / count);
#   executor   PostgreSQL's mean execution time of the step statement
#              (pg_stat_statements), and the statements per step;
#   flush      the WAL's mean fdatasync (pg_stat_wal: wal_sync_time /
#              wal_sync), flushes per step, WAL bytes and full-page images
#              per step, and the database's write transactions per step;
#   CPU        milliseconds of CPU per step of the server and of its
#              database connections (/proc, so loaded machines count too),
#              and their context switches per step (the wake-ups).
# The load average is printed with each run: the machine may be shared.
# With BEFORE_SERVER (another f2obo-server binary), each round also runs it
# on PostgreSQL (row "pg-before"), in turn with the build's.
# Usage: bench/service/pg_step_profile.sh [BUILD_DIR] [STEPS] [STREAMS] [BEFORE_SERVER]
#   (STEPS per stream)
#   (needs f2obo-server and f2obo-cli, PostgreSQL's server programs and
#   contrib: scripts/deps.sh --test; F2OBO_PG_BINDIR overrides where)
set -euo pipefail
build="${1:-build}"
per_stream="${2:-2000}"
streams="${3:-1}"
before="${4:-}"
steps=$((per_stream * streams))
cli="$build/client/f2obo-cli"
server="$build/server/f2obo-server"
. "$(dirname "$0")/pg_cluster.sh"
start_pg_cluster \
  "shared_preload_libraries = 'pg_stat_statements'" "pg_stat_statements.track = all" \
  "track_wal_io_timing = on" "pg_stat_statements.track_planning = on"
# The next transaction id to be assigned: each write transaction takes one.
xmax="SELECT pg_snapshot_xmax(pg_current_snapshot())"
q() { "$bindir/psql" -X -q -At -h 127.0.0.1 -p "$port" -U f2obo -d "$1" -c "$2"; }
# CPU ticks (user + system) of the given processes.
ticks() {
  local t=0 p f
  for p in "$@"; do
    f="$(cut -d')' -f2 "/proc/$p/stat" 2>/dev/null)" || continue
    t=$((t + $(echo "$f" | awk '{ print $12 + $13 }')))
  done
  echo "$t"
}
# Context switches (voluntary + involuntary) of the given processes' threads.
switches() {
  local n=0 p
  for p in "$@"; do
    n=$((n + $(cat /proc/"$p"/task/*/status 2>/dev/null |
      awk '/ctxt_switches/ { s += $2 } END { print s + 0 }')))
  done
  echo "$n"
}
hz="$(getconf CLK_TCK)"
tiny=(--exact_every=0 --family=ridge_hpo --features=16 --rows_per_step=8 --algorithm=f2obo)

run() {  # store (embedded, pg, pg-before)
  local store="$1" where line port_s mport out db=profile_$RANDOM conns s0 b0 s1 b1 c0 c1
  local bin="$server"
  [ "$store" = pg-before ] && bin="$before"
  if [ "$store" != embedded ]; then
    q postgres "CREATE DATABASE $db"
    q "$db" "CREATE EXTENSION pg_stat_statements" >/dev/null
    where=(--store="postgresql://f2obo@127.0.0.1:$port/$db")
  else
    where=(--data_dir="$work/data")
  fi
  rm -f "$work/banner"
  mkfifo "$work/banner"
  "$bin" --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 --durability=sync "${where[@]}" \
    >"$work/banner" 2>"$work/server.log" &
  pid=$!
  read -r line <"$work/banner"
  port_s="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
  mport="$(echo "$line" | sed -E 's|.*metrics on [^ ]+:([0-9]+)/.*|\1|')"
  c0=0
  if [ "$store" != embedded ]; then
    q postgres "SELECT pg_stat_reset_shared('wal')" >/dev/null
    q "$db" "SELECT pg_stat_statements_reset()" >/dev/null
    c0="$(q postgres "$xmax")"
  fi
  conns() { pgrep -u "$(stat -c %U "$work/pg")" -f "postgres: f2obo $db" || true; }
  s0="$(ticks "$pid")"
  b0="$(ticks $(conns))"
  local w0 v0 w1 v1
  w0="$(switches "$pid")"
  v0="$(switches $(conns))"
  local load
  load="$(cut -d' ' -f1 /proc/loadavg)"
  out="$("$cli" bench --server="127.0.0.1:$port_s" --sessions="$streams" --threads="$streams" --steps="$per_stream" \
           "${tiny[@]}" 2>&1)" || {
    echo "$out" >&2
    exit 1
  }
  s1="$(ticks "$pid")"
  b1="$(ticks $(conns))"
  w1="$(switches "$pid")"
  v1="$(switches $(conns))"
  local p50 commit
  p50="$(echo "$out" | grep -oE ' p50 [0-9.]+ ms' | head -1 | awk '{ print $2 }')"
  commit="$(curl -s "127.0.0.1:$mport/metrics" | awk '
    /^f2obo_store_commit_seconds_sum/ { s = $2 } /^f2obo_store_commit_seconds_count/ { n = $2 }
    END { if (n > 0) printf "%.3f", 1000 * s / n; else printf "-" }')"
  local rate
  rate="$(echo "$out" | grep -oE '[0-9.]+ steps/s' | head -1 | cut -d' ' -f1)"
  printf '%-9s load %5s  %s steps/s  client p50 %s ms  store call mean %s ms' "$store" "$load" \
    "$rate" "$p50" "$commit"
  if [ "$store" != embedded ]; then
    c1="$(q postgres "$xmax")"
    printf '  transactions/step %.2f' "$(awk -v c=$((c1 - c0)) -v n="$steps" 'BEGIN { print c / n }')"
    # The step statement: the one called once per step, at the top level.
    q "$db" "SELECT format('  executor mean %s ms, planned %s times, %s ms each (%s statements/step)',
               round((SELECT mean_exec_time FROM pg_stat_statements WHERE toplevel
                      AND calls >= $steps / 2 ORDER BY calls DESC LIMIT 1)::numeric, 3),
               (SELECT plans FROM pg_stat_statements WHERE toplevel
                      AND calls >= $steps / 2 ORDER BY calls DESC LIMIT 1),
               round((SELECT mean_plan_time FROM pg_stat_statements WHERE toplevel
                      AND calls >= $steps / 2 ORDER BY calls DESC LIMIT 1)::numeric, 3),
               round((SELECT sum(calls) FROM pg_stat_statements WHERE toplevel)::numeric
                     / $steps, 2))" | tr -d '\n'
    q postgres "SELECT format('  flush mean %s ms (%s/step), WAL %s B/step, %s FPI',
                 round((wal_sync_time / greatest(wal_sync, 1))::numeric, 3),
                 round(wal_sync::numeric / $steps, 2), round(wal_bytes / $steps),
                 wal_fpi) FROM pg_stat_wal" | tr -d '\n'
  fi
  printf '  CPU/step: server %.3f ms' "$(awk -v t=$((s1 - s0)) -v hz="$hz" -v n="$steps" \
    'BEGIN { print 1000 * t / hz / n }')"
  [ "$store" != embedded ] && printf ', database %.3f ms' "$(awk -v t=$((b1 - b0)) -v hz="$hz" \
    -v n="$steps" 'BEGIN { print 1000 * t / hz / n }')"
  printf '  context switches/step: server %.2f' "$(awk -v d=$((w1 - w0)) -v n="$steps" \
    'BEGIN { print d / n }')"
  [ "$store" != embedded ] && printf ', database %.2f' "$(awk -v d=$((v1 - v0)) -v n="$steps" \
    'BEGIN { print d / n }')"
  echo
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  rm -rf "$work/data"
  [ "$store" != embedded ] && q postgres "DROP DATABASE $db"
  return 0
}

for round in 1 2; do
  run embedded
  run pg
  if [ -n "$before" ]; then run pg-before; fi
done
