#!/bin/sh
# Creates the `default` namespace and registers the search attributes the
# conversation workflow sets, once the server answers. Run by the one-shot
# `temporal-admin-tools` service of docker-compose.yml; succeeds at once on
# later `up`s, and registers only what is missing, so a stack set up by an
# older version of the project gains the attributes added since.
#
# Inputs: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_NAMESPACE_RETENTION.
set -u

addr="${TEMPORAL_ADDRESS:-temporal:7233}"
ns="${TEMPORAL_NAMESPACE:-default}"
retention="${TEMPORAL_NAMESPACE_RETENTION:-30d}"
# name:type of every attribute the workflow upserts (src/workflows/api.ts, SEARCH_ATTRIBUTES).
attributes="AgentStatus:Keyword PendingApprovals:Int UnknownEffects:Int PendingApprovalTags:KeywordList AwaitingApprovalSince:Datetime AgentTokens:Int AgentCostUsd:Double"

attempt=0
until temporal operator cluster health --address "$addr" >/dev/null 2>&1; do
  attempt=$((attempt + 1))
  if [ "$attempt" -gt 60 ]; then
    echo "giving up: Temporal at $addr did not become healthy in 3 minutes" >&2
    exit 1
  fi
  echo "waiting for Temporal at $addr (attempt $attempt)"
  sleep 3
done

if ! temporal operator namespace describe --address "$addr" --namespace "$ns" >/dev/null 2>&1; then
  temporal operator namespace create --address "$addr" --namespace "$ns" --retention "$retention" || exit 1
  echo "created namespace $ns (retention $retention)"
fi

attempt=0
while :; do
  missing=""
  if listed="$(temporal operator search-attribute list --address "$addr" --namespace "$ns" 2>&1)"; then
    for spec in $attributes; do
      printf '%s\n' "$listed" | grep -qw "${spec%%:*}" || missing="$missing --name ${spec%%:*} --type ${spec##*:}"
    done
    if [ -z "$missing" ]; then
      echo "the conversation's search attributes are registered on namespace $ns"
      exit 0
    fi
    temporal operator search-attribute create --address "$addr" --namespace "$ns" $missing ||
      echo "could not register$missing yet; retrying"
  fi
  attempt=$((attempt + 1))
  if [ "$attempt" -gt 60 ]; then
    echo "giving up: could not register search attributes on $addr namespace $ns" >&2
    printf '%s\n' "$listed" >&2
    exit 1
  fi
  sleep 3
done
