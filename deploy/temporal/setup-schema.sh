#!/bin/sh
# Creates or upgrades Temporal's two databases in PostgreSQL: `temporal`
# (histories, tasks) and `temporal_visibility` (what the visibility API and the
# search attributes read). Run by the one-shot `temporal-schema` service of
# docker-compose.yml with the admin-tools image of the server's exact version,
# before the server starts: every `up` re-runs it, and an up-to-date schema is
# left as it is, so bumping the images upgrades the schema.
#
# Inputs: POSTGRES_SEEDS (host), DB_PORT, POSTGRES_USER, SQL_PASSWORD.
set -eu

host="${POSTGRES_SEEDS:-postgresql}"
port="${DB_PORT:-5432}"
user="${POSTGRES_USER:-temporal}"
schemas=/etc/temporal/schema/postgresql/v12

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$host" -p "$port" -u "$user" "$@"
}

for db in temporal temporal_visibility; do
  case "$db" in
    temporal) versioned="$schemas/temporal/versioned" ;;
    *) versioned="$schemas/visibility/versioned" ;;
  esac
  # `create` fails when the database exists (every `up` after the first); a real failure
  # (wrong password, server down) makes the next two commands fail, and the job with them.
  sql --db "$db" create || echo "database $db exists already"
  sql --db "$db" setup-schema -v 0.0
  sql --db "$db" update-schema -d "$versioned"
  echo "schema of $db is up to date"
done
