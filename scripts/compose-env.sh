#!/usr/bin/env bash
# Writes the settings of the docker compose stack (.env beside
# docker-compose.yml, or the path given) with fresh random secrets: the two
# database passwords and the key that signs decisions. The file is made
# readable by its owner only. An existing file is never overwritten: the
# databases keep the passwords they were created with.
#
#   bash scripts/compose-env.sh            # writes ./.env
#   OPENAI_API_KEY=sk-... bash scripts/compose-env.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${1:-$root/.env}"
if [ -e "$target" ]; then
  echo "$target exists already; nothing was changed. Its passwords are the ones the database volumes were created with." >&2
  echo "To start over: docker compose down -v (deletes every conversation), remove $target, run this again." >&2
  exit 1
fi

# 32 random bytes as hex: URL-safe, so a password can sit in DATABASE_URL as it is.
secret() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }

umask 077
{
  echo "# Written by scripts/compose-env.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ). Secrets: keep this file to yourself."
  echo "TEMPORAL_DB_PASSWORD=$(secret)"
  echo "AGENT_DB_PASSWORD=$(secret)"
  echo "AGENT_DECISION_KEYS=k1:$(secret)"
  echo "OPENAI_API_KEY=${OPENAI_API_KEY:-}"
  echo "OPENAI_BASE_URL=${OPENAI_BASE_URL:-}"
  echo "OPENAI_MODEL=${OPENAI_MODEL:-gpt-4o-mini}"
} > "$target"
chmod 600 "$target"
echo "Wrote $target (mode 600). Next: docker compose up --build"
