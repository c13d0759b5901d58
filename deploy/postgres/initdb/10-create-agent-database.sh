#!/bin/sh
# Creates the application's own role and database next to Temporal's.
#
# The official postgres image runs the files in /docker-entrypoint-initdb.d
# once, when it initialises an empty data directory. Temporal keeps its state
# in the `temporal` and `temporal_visibility` databases (created by the
# compose file's `temporal-schema` job); the worker's transcripts and back-office data live in
# a separate database, owned by a separate role, so neither side can touch the
# other's tables.
#
# The image may source this file instead of executing it (it does so when the
# file is not executable), so it sets no shell options and never calls `exit`.
#
# Inputs (environment of the postgresql service):
#   AGENT_DB_NAME      database to create       (default: agent)
#   AGENT_DB_USER      role that owns it        (default: agent)
#   AGENT_DB_PASSWORD  that role's password     (default: agent)

psql --set ON_ERROR_STOP=1 \
  --username "${POSTGRES_USER:-postgres}" \
  --dbname "${POSTGRES_DB:-${POSTGRES_USER:-postgres}}" \
  --set agent_db="${AGENT_DB_NAME:-agent}" \
  --set agent_user="${AGENT_DB_USER:-agent}" \
  --set agent_password="${AGENT_DB_PASSWORD:-agent}" <<'SQL'
CREATE ROLE :"agent_user" WITH LOGIN PASSWORD :'agent_password';
CREATE DATABASE :"agent_db" WITH OWNER :"agent_user" ENCODING 'UTF8';
REVOKE ALL ON DATABASE :"agent_db" FROM PUBLIC;
GRANT ALL PRIVILEGES ON DATABASE :"agent_db" TO :"agent_user";
SQL
