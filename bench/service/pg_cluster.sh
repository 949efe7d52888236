# Shared by the PostgreSQL benchmarks (pg_vs_embedded.sh, pg_step_profile.sh):
# start_pg_cluster makes a throwaway PostgreSQL 15 on loopback in a new
# scratch directory and starts it: fsync, synchronous_commit and
# full_page_writes on (the durability the store is measured with), plus
# the extra postgresql.conf lines given as arguments.  It sets $work (the
# scratch directory, removed on exit with the cluster stopped), $bindir,
# $port, $as_pg (the command prefix PostgreSQL's programs run under: the
# postgres user when run as root, since PostgreSQL refuses root) and $pid
# (empty: a server the caller starts there is killed on exit too).
# F2OBO_PG_BINDIR overrides where PostgreSQL's server programs are.

start_pg_cluster() {  # extra postgresql.conf lines...
  bindir="${F2OBO_PG_BINDIR:-$(pg_config --bindir 2>/dev/null || true)}"
  [ -x "$bindir/initdb" ] || bindir=/usr/lib/postgresql/15/bin
  work="$(mktemp -d)"
  pid=
  as_pg=()
  trap stop_pg_cluster EXIT
  if [ "$(id -u)" = 0 ]; then
    as_pg=(runuser -u postgres --)
    chown postgres "$work"
  fi
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "${as_pg[@]}" "$bindir/initdb" -D "$work/pg" -U f2obo --auth=trust >"$work/initdb.log" 2>&1 || {
    cat "$work/initdb.log" >&2
    exit 1
  }
  {
    printf '%s\n' "listen_addresses = '127.0.0.1'" "port = $port" \
      "unix_socket_directories = '$work'" "fsync = on" "synchronous_commit = on" \
      "full_page_writes = on" "max_connections = 50" "shared_buffers = 128MB"
    for line in "$@"; do printf '%s\n' "$line"; done
  } >>"$work/pg/postgresql.conf"
  "${as_pg[@]}" "$bindir/pg_ctl" start -w -D "$work/pg" -l "$work/pg.log" >/dev/null
}

stop_pg_cluster() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  [ -f "$work/pg/postmaster.pid" ] &&
    "${as_pg[@]}" "$bindir/pg_ctl" stop -D "$work/pg" -m immediate >/dev/null 2>&1 || true
  rm -rf "$work"
}
