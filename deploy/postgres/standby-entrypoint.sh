#!/bin/bash
# The synchronous standby of deploy/docker-compose.shared.yml: on first
# start a copy of the primary (pg_basebackup, which writes standby.signal and
# primary_conninfo with application_name=standby, the name the primary's
# synchronous_standby_names waits for), then a streaming hot standby.
# Promote it with: docker compose exec postgres-standby pg_ctl promote
set -euo pipefail
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pg_basebackup -D "$PGDATA" -X stream -c fast -R \
    -d "host=postgres-primary port=5432 user=f2obo application_name=standby"
  chmod 700 "$PGDATA"
fi
exec postgres -c hot_standby=on
