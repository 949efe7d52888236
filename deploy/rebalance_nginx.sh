#!/usr/bin/env bash
# Steps 3-6 of the scale-out runbook (deploy/README.md) for a live nginx
# proxy started from a generated standalone config
# (gen_proxy_config.py nginx --prefix=DIR ...; nginx -p DIR -c DIR/nginx.conf):
#   3. start a spare nginx with the NEW ring beside the live one;
#   4. f2obo-cli rebalance against the spare (rerun on failure: each run
#      completes or undoes interrupted moves);
#   5. install the new ring into the live config (the rest of it unchanged),
#      check it (nginx -t) and reload the live nginx gracefully (its pid file
#      is DIR/nginx.pid); stop the spare;
#   6. lift the tombstones through the live proxy.
# Rerunning the whole script is safe: a second run moves nothing.
#
# Usage:
#   deploy/rebalance_nginx.sh --live_prefix=DIR --ring=NAME=HOST:PORT,... \
#       [--leaving=NAME=HOST:PORT,...] [--spare_listen=127.0.0.1:50099] \
#       [--cli=f2obo-cli] [--nginx=nginx] [--token_file=FILE] [--attempts=3]
# --ring: every replica of the new ring (after the change); --leaving:
# replicas still running whose keys must move away (scaling in).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
live_prefix="" ring="" leaving="" spare_listen="127.0.0.1:50099"
cli="f2obo-cli" nginx="nginx" token_file="" attempts=3
for arg in "$@"; do
  case "$arg" in
    --live_prefix=*) live_prefix="${arg#*=}" ;;
    --ring=*) ring="${arg#*=}" ;;
    --leaving=*) leaving="${arg#*=}" ;;
    --spare_listen=*) spare_listen="${arg#*=}" ;;
    --cli=*) cli="${arg#*=}" ;;
    --nginx=*) nginx="${arg#*=}" ;;
    --token_file=*) token_file="${arg#*=}" ;;
    --attempts=*) attempts="${arg#*=}" ;;
    *) echo "rebalance_nginx: unknown argument '$arg' (see the usage at the top of $0)" >&2
       exit 2 ;;
  esac
done
fail() { echo "rebalance_nginx: $*" >&2; exit 1; }
# The worker processes of nginx master $1 (from /proc: no procps needed).
workers_of() {
  local stat
  for stat in /proc/[0-9]*/stat; do
    awk -v m="$1" '$4 == m { print $1 }' "$stat" 2>/dev/null || true
  done
}
[ -n "$live_prefix" ] || fail "--live_prefix is required"
[ -n "$ring" ] || fail "--ring is required"
live_prefix="$(cd "$live_prefix" && pwd)"
live_conf="$live_prefix/nginx.conf"
[ -f "$live_conf" ] || fail "$live_conf: no such file (the live proxy's generated config)"
[ -f "$live_prefix/nginx.pid" ] || fail "$live_prefix/nginx.pid: no such file (is the live proxy running?)"
live_listen="$(sed -n 's/^ *listen \([^ ;]*\).*/\1/p' "$live_conf" | head -n 1)"
[ -n "$live_listen" ] || fail "$live_conf: no listen directive"

gen=(/usr/bin/python3 "$here/proxy/gen_proxy_config.py" nginx)
replica_flags=()
IFS=',' read -r -a ring_list <<< "$ring"
for r in "${ring_list[@]}"; do replica_flags+=("--replica=$r"); done
all="$ring${leaving:+,$leaving}"
cli_flags=()
[ -n "$token_file" ] && cli_flags+=("--token_file=$token_file")

echo "step 3: a spare nginx with the new ring on $spare_listen"
spare="$(mktemp -d)"
"${gen[@]}" --listen="$spare_listen" --prefix="$spare" "${replica_flags[@]}" > "$spare/nginx.conf"
"$nginx" -p "$spare" -c "$spare/nginx.conf" -e "$spare/error.log" &
spare_pid=$!
stop_spare() {
  kill "$spare_pid" 2>/dev/null && wait "$spare_pid" 2>/dev/null
  rm -rf "$spare"
}
trap stop_spare EXIT
# Up when a call through it is answered (the health service of some replica).
up=0
for _ in $(seq 100); do
  if "$cli" health --server="$spare_listen" --timeout=1 "${cli_flags[@]}" >/dev/null 2>&1; then
    up=1
    break
  fi
  kill -0 "$spare_pid" 2>/dev/null || fail "the spare nginx exited (see $spare/error.log)"
  sleep 0.1
done
[ "$up" = 1 ] || fail "the spare nginx on $spare_listen does not answer"

echo "step 4: move the sessions (f2obo-cli rebalance against the spare)"
moved=0
for attempt in $(seq "$attempts"); do
  if "$cli" rebalance --proxy="$spare_listen" --replicas="$all" "${cli_flags[@]}"; then
    moved=1
    break
  fi
  echo "rebalance_nginx: rebalance attempt $attempt failed; rerunning" >&2
done
[ "$moved" = 1 ] || fail "rebalance failed $attempts times; rerun this script"

echo "step 5: install the new ring into $live_conf and reload the live nginx"
"${gen[@]}" --ring_of="$live_conf" "${replica_flags[@]}" > "$live_conf.next"
"$nginx" -t -q -p "$live_prefix" -c "$live_conf.next" -e "$live_prefix/error.log" ||
  fail "the new config $live_conf.next does not pass nginx -t; the live proxy is unchanged"
master="$(cat "$live_prefix/nginx.pid")"
old_workers="$(workers_of "$master")"
# Without them the wait below would be skipped: refuse rather than guess.
[ -n "$old_workers" ] || fail "found no worker process of the live nginx (master $master)"
mv "$live_conf.next" "$live_conf"
"$nginx" -p "$live_prefix" -c "$live_conf" -e "$live_prefix/error.log" -s reload
stop_spare
trap - EXIT
# The old workers route by the old ring until they exit: they stop
# accepting at once, and close their open connections within the config's
# worker_shutdown_timeout (clients reconnect to the new workers and resume
# at next_t).  Lifting a tombstone while an old worker can still send a
# moved key's calls to its old owner would turn "moved, retry" into
# NOT_FOUND, so step 6 waits for them.
for _ in $(seq 1200); do
  alive=0
  for w in $old_workers; do kill -0 "$w" 2>/dev/null && alive=1; done
  [ "$alive" = 0 ] && break
  sleep 0.1
done
[ "$alive" = 0 ] || fail "the live nginx's old workers ($old_workers) did not exit within 120 s; \
rerun step 6 by hand once they have: $cli rebalance --proxy=$live_listen --replicas=$all --lift_tombstones"

echo "step 6: lift the tombstones through the live proxy ($live_listen)"
"$cli" rebalance --proxy="$live_listen" --replicas="$all" --lift_tombstones "${cli_flags[@]}" ||
  fail "lifting the tombstones failed; rerun step 6 (it is idempotent)"
echo "rebalance_nginx: done; the live proxy on $live_listen routes by the new ring"
