#!/bin/sh
# Creates the `default` namespace and registers the search attributes the
# conversation workflow sets, once the server answers. Run by the one-shot
# `temporal-admin-tools` service of docker-compose.yml; succeeds at once on
# later `up`s, and registers only what is missing, so a stack set up by an
# older version of the project gains the attributes added since.
#
# Inputs: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_NAMESPACE_RETENTION, and the worker's
# AGENT_SEARCH_ATTRIBUTES (auto, none, or groups such as status,approvals) and
# AGENT_SEARCH_ATTRIBUTE_PREFIX (docs/search-attributes.md). When the namespace's
# visibility store has no room, it says so and leaves the rest to the worker, which
# starts without the groups that do not fit (or refuses to, for groups it was asked for).
set -u

addr="${TEMPORAL_ADDRESS:-temporal:7233}"
ns="${TEMPORAL_NAMESPACE:-default}"
retention="${TEMPORAL_NAMESPACE_RETENTION:-30d}"
prefix="${AGENT_SEARCH_ATTRIBUTE_PREFIX:-}"
groups="$(printf '%s' "${AGENT_SEARCH_ATTRIBUTES:-auto}" | tr ',' ' ')"
case "$groups" in
  auto | '') groups="status approvals unknownEffects usage" ;;
  none) groups="" ;;
esac
# name:type of every attribute the workflow upserts, by group (src/contract/workflow.ts, SEARCH_ATTRIBUTE_GROUPS).
attributes=""
for group in $groups; do
  case "$group" in
    status) attributes="$attributes AgentStatus:Keyword" ;;
    approvals) attributes="$attributes PendingApprovals:Int PendingApprovalTags:KeywordList AwaitingApprovalSince:Datetime" ;;
    unknownEffects) attributes="$attributes UnknownEffects:Int" ;;
    usage) attributes="$attributes AgentTokens:Int AgentCostUsd:Double" ;;
    *) echo "AGENT_SEARCH_ATTRIBUTES names an unknown group: $group (known: status, approvals, unknownEffects, usage)" >&2; exit 1 ;;
  esac
done

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
      printf '%s\n' "$listed" | grep -qw "$prefix${spec%%:*}" || missing="$missing --name $prefix${spec%%:*} --type ${spec##*:}"
    done
    if [ -z "$missing" ]; then
      echo "the conversation's search attributes are registered on namespace $ns"
      exit 0
    fi
    if created="$(temporal operator search-attribute create --address "$addr" --namespace "$ns" $missing 2>&1)"; then
      continue
    fi
    if printf '%s\n' "$created" | grep -q 'cannot have more than'; then
      echo "namespace $ns has no room for every search attribute asked for ($created); the worker registers the groups that fit and logs the others"
      exit 0
    fi
    echo "could not register$missing yet ($created); retrying"
  fi
  attempt=$((attempt + 1))
  if [ "$attempt" -gt 60 ]; then
    echo "giving up: could not register search attributes on $addr namespace $ns" >&2
    printf '%s\n' "$listed" >&2
    exit 1
  fi
  sleep 3
done
