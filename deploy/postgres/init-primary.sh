#!/bin/bash
# Run once by the postgres image when it creates the primary's cluster
# (deploy/docker-compose.shared.yml): the standby's pg_basebackup and
# streaming connect as the f2obo user, with its password.
set -euo pipefail
echo "host replication f2obo all scram-sha-256" >> "$PGDATA/pg_hba.conf"
