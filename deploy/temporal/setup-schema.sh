#!/bin/sh
# Creates or upgrades Temporal's two databases in PostgreSQL: `temporal`
# (histories, tasks) and `temporal_visibility` (what the visibility API and the
# search attributes read). Run by the one-shot `temporal-schema` service of
# docker-compose.yml with the admin-tools image of the server's exact version,
# before the server starts: every `up` re-runs it, and an up-to-date schema is
# left as it is, so bumping the images upgrades the schema. The tests' cluster
# (test/support/temporal-cluster.ts) runs it too, with the schema tool and the
# schema files scripts/ensure-temporal-server.sh builds from the server's module.
#
# Inputs: POSTGRES_SEEDS (host), DB_PORT, POSTGRES_USER, SQL_PASSWORD (read by
# the tool), DBNAME and VISIBILITY_DBNAME (temporal, temporal_visibility),
# TEMPORAL_SQL_TOOL (default: temporal-sql-tool on PATH, as in the image) and
# TEMPORAL_SCHEMA_DIR (the postgresql/v12 schema folder; default: the image's).
set -eu

host="${POSTGRES_SEEDS:-postgresql}"
port="${DB_PORT:-5432}"
user="${POSTGRES_USER:-temporal}"
tool="${TEMPORAL_SQL_TOOL:-temporal-sql-tool}"
schemas="${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}"
main_db="${DBNAME:-temporal}"
visibility_db="${VISIBILITY_DBNAME:-temporal_visibility}"

sql() {
  "$tool" --plugin postgres12 --ep "$host" -p "$port" -u "$user" "$@"
}

for kind in temporal visibility; do
  if [ "$kind" = temporal ]; then db="$main_db"; else db="$visibility_db"; fi
  # `create` fails when the database exists (every `up` after the first); a real failure
  # (wrong password, server down) makes the next two commands fail, and the job with them.
  sql --db "$db" create || echo "database $db exists already"
  sql --db "$db" setup-schema -v 0.0
  sql --db "$db" update-schema -d "$schemas/$kind/versioned"
  echo "schema of $db is up to date"
done
