/**
 * The project's tables, as ordered migrations applied at start-up, all in the
 * project's own schema (default `durable_agent`, see ./schema). Only the
 * project's tables: a team's database gets nothing else. Idempotent and safe
 * when several workers start at once (advisory lock).
 */
import type { Pool } from 'pg';
import { agentTables, type AgentTables } from './schema';
import { inTransaction } from './transaction';
import { notificationOutboxSql } from './notification-migration';
import { eventWaitsSql } from './event-migration';

interface Migration {
  version: number;
  name: string;
  /** The migration's SQL, naming tables through `t`. None for a retired version: it is recorded, nothing runs. */
  sql?: (t: AgentTables) => string;
}

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'transcripts, model responses, tool results and the idempotency ledger',
    sql: (t) => `
      CREATE TABLE ${t.conversationMessages} (
        conversation_id text NOT NULL,
        seq integer NOT NULL,
        role text NOT NULL,
        message jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (conversation_id, seq)
      );
      CREATE TABLE ${t.toolResults} (
        idempotency_key text PRIMARY KEY,
        conversation_id text NOT NULL,
        tool_call_id text NOT NULL,
        tool_name text NOT NULL,
        content text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE ${t.modelResponses} (
        response_key text PRIMARY KEY,
        conversation_id text NOT NULL,
        message jsonb NOT NULL,
        finish_reason text,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE ${t.toolLedger} (
        idempotency_key text PRIMARY KEY,
        tool_name text NOT NULL,
        result jsonb,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    // Created and seeded the back-office demo's tables (customers, orders, refunds) in every
    // database. The demo now sets them up itself (setupBackofficeDemo, src/demo/data.ts);
    // the number stays taken so that later migrations keep theirs in databases that applied it.
    version: 2,
    name: "retired: the back-office demo tables moved to the demo's own setup",
  },
  {
    version: 3,
    name: 'approval decisions, for people',
    sql: (t) => `
      CREATE TABLE ${t.approvalDecisions} (
        conversation_id text NOT NULL,
        decision_id text NOT NULL,
        decision text NOT NULL CHECK (decision IN ('approve', 'reject')),
        tool_call_ids text[] NOT NULL,
        reason text,
        decided_by text,
        decided_at timestamptz NOT NULL,
        via text NOT NULL,
        PRIMARY KEY (conversation_id, decision_id)
      );
    `,
  },
  {
    version: 4,
    name: 'effect keys of decided calls',
    sql: (t) => `
      -- The effect key of each decided call (see src/core/effect-keys.ts), in the order of
      -- tool_call_ids: provider ids repeat across responses, the keys never do. NULL for decisions
      -- recorded before effect keys per call instance.
      ALTER TABLE ${t.approvalDecisions} ADD COLUMN call_keys text[];
    `,
  },
  {
    version: 5,
    name: 'usage and context budget of model responses',
    sql: (t) => `
      -- The provider's usage ({promptTokens, completionTokens}), the worker's estimate of the
      -- prompt's tokens (to calibrate the next estimate against the provider's count) and what
      -- the context budget did to the request. NULL for responses stored before.
      ALTER TABLE ${t.modelResponses} ADD COLUMN usage jsonb;
      ALTER TABLE ${t.modelResponses} ADD COLUMN prompt_estimate integer;
      ALTER TABLE ${t.modelResponses} ADD COLUMN context_budget jsonb;
      CREATE INDEX model_responses_by_conversation ON ${t.modelResponses} (conversation_id, created_at);
    `,
  },
  {
    version: 6,
    name: 'whether a decision was authenticated',
    sql: (t) => `
      -- True when the decision carried a valid signature of the HTTP API (decided_by is then the
      -- authenticated subject), false when the worker applied it unsigned, NULL for decisions
      -- recorded before signed decisions.
      ALTER TABLE ${t.approvalDecisions} ADD COLUMN authenticated boolean;
    `,
  },
  {
    version: 7,
    name: 'MCP tool lists by reference',
    sql: (t) => `
      -- The tools a turn was offered from MCP servers (descriptors with their JSON Schemas), keyed
      -- by the SHA-256 of their content: history carries the key, so replay and later model calls
      -- never depend on what a server answers today.
      CREATE TABLE ${t.mcpToolsets} (
        ref text PRIMARY KEY,
        tools jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 8,
    name: 'running workers and their activity attempts',
    sql: (t) => `
      -- Each running worker holds an advisory lock (a fixed class, lock_key) on a session of its own
      -- while its process lives; a row whose lock nobody holds is a worker that stopped without
      -- shutting down (SIGKILL, a lost host). Its peers then fail its started activity attempts by
      -- task token, so Temporal retries them at once instead of at their heartbeat timeout.
      CREATE TABLE ${t.workers} (
        worker_key text PRIMARY KEY,
        lock_key integer NOT NULL,
        identity text NOT NULL,
        namespace text NOT NULL,
        task_queue text NOT NULL,
        sticky_queue text,
        started_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE ${t.workerActivities} (
        task_token bytea PRIMARY KEY,
        worker_key text NOT NULL,
        workflow_id text NOT NULL,
        run_id text,
        activity_type text NOT NULL,
        attempt integer NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX worker_activities_by_worker ON ${t.workerActivities} (worker_key);
    `,
  },
  {
    version: 9,
    name: 'tool calls waiting for a person',
    sql: (t) => `
      -- One row per tool call waiting for a decision, written with the assistant message that asked
      -- for it (src/db/approval-store.ts): approvers' lists read it instead of Temporal's search
      -- attributes. A row leaves when its decision is recorded or a tool message answering its call
      -- is stored (every way a call settles ends with one), by the triggers below, in the
      -- transaction that stores them, whichever activity writes it.
      CREATE TABLE ${t.pendingApprovals} (
        conversation_id text NOT NULL,
        call_key text NOT NULL,
        tool_call_id text NOT NULL,
        tool_name text NOT NULL,
        assistant_seq integer NOT NULL,
        call_index integer NOT NULL,
        requested_at timestamptz NOT NULL,
        requested_by text[] NOT NULL,
        PRIMARY KEY (conversation_id, call_key)
      );
      CREATE INDEX pending_approvals_by_age ON ${t.pendingApprovals} (requested_at);
      CREATE FUNCTION ${t.quotedSchema}.pending_approval_answered() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('durable-agent-worker.approvals:' || NEW.conversation_id));
        DELETE FROM ${t.pendingApprovals}
         WHERE conversation_id = NEW.conversation_id AND tool_call_id = NEW.message ->> 'tool_call_id' AND assistant_seq < NEW.seq;
        RETURN NULL;
      END $$;
      CREATE TRIGGER pending_approval_answered AFTER INSERT OR UPDATE ON ${t.conversationMessages}
        FOR EACH ROW WHEN (NEW.role = 'tool') EXECUTE FUNCTION ${t.quotedSchema}.pending_approval_answered();
      CREATE FUNCTION ${t.quotedSchema}.pending_approval_decided() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('durable-agent-worker.approvals:' || NEW.conversation_id));
        DELETE FROM ${t.pendingApprovals} WHERE conversation_id = NEW.conversation_id AND call_key = ANY (NEW.call_keys);
        RETURN NULL;
      END $$;
      CREATE TRIGGER pending_approval_decided AFTER INSERT ON ${t.approvalDecisions}
        FOR EACH ROW WHEN (NEW.call_keys IS NOT NULL) EXECUTE FUNCTION ${t.quotedSchema}.pending_approval_decided();
    `,
  },
  {
    version: 10,
    name: 'calls waiting inside agents called as tools',
    sql: (t) => `
      -- A call waiting inside an agent called as a tool (a child conversation) is listed with the
      -- top-level conversation it serves and the path of agents down to it; null for a call of a
      -- top-level conversation (its own id is its root) and for conversations of one unnamed agent.
      ALTER TABLE ${t.pendingApprovals} ADD COLUMN root_conversation_id text, ADD COLUMN agent_path text[];
      CREATE INDEX pending_approvals_by_root ON ${t.pendingApprovals} (root_conversation_id) WHERE root_conversation_id IS NOT NULL;
    `,
  },
  {
    version: 11,
    name: 'edit and respond decisions',
    sql: (t) => `
      -- Besides approve and reject: edit (the call ran with the person's arguments; the model's are kept
      -- beside them) and respond (the person's text is the call's result; the tool did not run).
      ALTER TABLE ${t.approvalDecisions} DROP CONSTRAINT IF EXISTS approval_decisions_decision_check;
      ALTER TABLE ${t.approvalDecisions} ADD CONSTRAINT approval_decisions_decision_check CHECK (decision IN ('approve', 'reject', 'edit', 'respond'));
      ALTER TABLE ${t.approvalDecisions} ADD COLUMN arguments jsonb, ADD COLUMN model_arguments jsonb, ADD COLUMN response text;
    `,
  },
  {
    version: 12,
    name: 'what may be decided on a waiting call',
    sql: (t) => `
      -- The decisions a waiting call's tool allows (approve, reject, edit, respond), for the inbox's forms;
      -- null for calls listed before: approve or reject.
      ALTER TABLE ${t.pendingApprovals} ADD COLUMN decisions text[];
    `,
  },
  {
    version: 13,
    name: 'guardrails on model responses',
    sql: (t) => `
      -- The guardrail that stopped a turn at this model call ({on, guardrail, reason}); an output
      -- guardrail's trip also keeps the answer it withheld (withheld), since message holds the note
      -- shown in its place. Null for every other response.
      ALTER TABLE ${t.modelResponses} ADD COLUMN guardrail jsonb;
    `,
  },
  {
    version: 14,
    name: 'streamed text kept while a model call runs',
    sql: (t) => `
      -- Each piece of text a model call streamed, as it was sent to clients, so one that reconnects
      -- (from any API process) replays it. A call's pieces are deleted when it ends (its answer is
      -- then stored); pieces a killed call left behind go after an hour.
      CREATE TABLE ${t.streamDeltas} (
        response_key text NOT NULL,
        attempt integer NOT NULL,
        start_offset integer NOT NULL,
        conversation_id text NOT NULL,
        text text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (response_key, attempt, start_offset)
      );
      CREATE INDEX stream_deltas_by_conversation ON ${t.streamDeltas} (conversation_id);
      CREATE INDEX stream_deltas_by_age ON ${t.streamDeltas} (created_at);
    `,
  },
  {
    version: 15,
    name: 'going back: superseded messages and the runs that wrote each transcript',
    sql: (t) => `
      -- Messages taken out of a conversation's transcript, kept for people: what a run abandoned by
      -- a reset wrote past the reset point, and the answer a regenerated turn replaced. The live
      -- transcript (conversation_messages) stays dense; these are never sent to the model.
      CREATE TABLE ${t.supersededMessages} (
        id bigserial PRIMARY KEY,
        conversation_id text NOT NULL,
        seq integer NOT NULL,
        role text NOT NULL,
        message jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        superseded_at timestamptz NOT NULL DEFAULT now(),
        reason text NOT NULL CHECK (reason IN ('reset', 'regenerate')),
        superseded_by_run text,
        ref_key text
      );
      CREATE INDEX superseded_messages_by_conversation ON ${t.supersededMessages} (conversation_id, id);
      -- The key a message stored by reference was read from: a tool message's effect key (its
      -- result in tool_results, its effect in tool_ledger), an assistant message's response key.
      -- Null for messages stored whole, and for messages stored before this migration.
      ALTER TABLE ${t.conversationMessages} ADD COLUMN ref_key text;
      -- Each workflow run that wrote a conversation's transcript. A run's first write displaces the
      -- runs before it (continue-as-new, or a reset); a displaced run's late writes are refused.
      CREATE TABLE ${t.transcriptRuns} (
        conversation_id text NOT NULL,
        run_id text NOT NULL,
        first_write_at timestamptz NOT NULL DEFAULT now(),
        displaced_at timestamptz,
        PRIMARY KEY (conversation_id, run_id)
      );
    `,
  },
  {
    version: 16,
    name: 'a final answer written by its model call: the fence of a stopped call, and the reason stopped',
    sql: (t) => `
      -- A model call writes its final answer itself. When its turn is stopped while it runs, the run
      -- fences that write off (the seq it was given; a later write of it stores nothing), and the answer
      -- it wrote before leaves the live transcript with the reason 'stopped'.
      ALTER TABLE ${t.transcriptRuns} ADD COLUMN stopped_answer_seq integer;
      ALTER TABLE ${t.supersededMessages} DROP CONSTRAINT IF EXISTS superseded_messages_reason_check;
      ALTER TABLE ${t.supersededMessages}
        ADD CONSTRAINT superseded_messages_reason_check CHECK (reason IN ('reset', 'regenerate', 'stopped'));
    `,
  },
  {
    version: 17,
    name: 'the spend of every model call under a budget, by the top-level conversation that holds the budget',
    sql: (t) => `
      CREATE TABLE ${t.budgetSpend} (
        response_key text PRIMARY KEY,
        root_conversation_id text NOT NULL,
        root_turn integer NOT NULL,
        conversation_id text NOT NULL,
        agent text,
        spent boolean NOT NULL DEFAULT false,
        tokens bigint NOT NULL,
        cost_usd double precision,
        held_until timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX budget_spend_root ON ${t.budgetSpend} (root_conversation_id, root_turn);
    `,
  },
  {
    version: 18,
    name: 'the bytes of files user messages carry, by their SHA-256 (messages hold only the reference)',
    sql: (t) => `
      CREATE TABLE ${t.messageFiles} (
        file_id text PRIMARY KEY,
        media_type text NOT NULL,
        bytes bytea NOT NULL,
        conversation_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 19,
    name: 'the encrypted reasoning items of answers the Responses API gave, with the answer they belong to',
    sql: (t) => `
      -- Each item as returned (encrypted_content untouched) and the output item that followed it; sent back before
      -- that item by the next calls (src/db/reasoning-store.ts). Null for answers without reasoning items.
      ALTER TABLE ${t.modelResponses} ADD COLUMN reasoning jsonb;
    `,
  },
  {
    version: 20,
    name: 'summaries a model was sent in place of earlier messages, by conversation and the seq range they replace',
    sql: (t) => `
      -- Written by a model call when earlier turns no longer fit the window (model.contextOverflow 'summarize');
      -- the messages stay in the transcript. The digest is of the messages summarised, so a summary of messages
      -- that a reset has since replaced is never used again.
      CREATE TABLE ${t.contextSummaries} (
        conversation_id text NOT NULL,
        from_seq integer NOT NULL,
        through_seq integer NOT NULL,
        digest text NOT NULL,
        summary text NOT NULL,
        model text NOT NULL,
        usage jsonb,
        cost_usd double precision,
        response_key text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (conversation_id, from_seq, through_seq, digest)
      );
      CREATE INDEX context_summaries_by_call ON ${t.contextSummaries} (response_key);
    `,
  },
  {
    version: 21,
    name: 'decisions of a run abandoned by a reset no longer decide the calls the new run asks for',
    sql: (t) => `
      -- The workflow run that applied each decision (null before this migration), and when a Temporal reset took the
      -- call it decided out of the live transcript: the new run's first write supersedes the decisions on calls from
      -- its first seq on (src/db/transcript-store.ts). A superseded decision neither hides a call from approvers' lists
      -- nor marks it decided; the same decision applied again by the new run (Temporal reapplies it) is live again.
      ALTER TABLE ${t.approvalDecisions} ADD COLUMN run_id text, ADD COLUMN superseded_at timestamptz;
      DROP TRIGGER pending_approval_decided ON ${t.approvalDecisions};
      CREATE TRIGGER pending_approval_decided AFTER INSERT OR UPDATE OF superseded_at ON ${t.approvalDecisions}
        FOR EACH ROW WHEN (NEW.call_keys IS NOT NULL AND NEW.superseded_at IS NULL)
        EXECUTE FUNCTION ${t.quotedSchema}.pending_approval_decided();
    `,
  },
  {
    version: 22,
    name: 'approval policies: who may decide a waiting call, rules that decide without a person, N of M',
    sql: (t) => `
      -- The approval policy's rule a decision was made under (the rule itself decided when via = 'policy'), the
      -- groups the decider's signed token gave them, and whether the call still waits after it (an approval of a
      -- call whose rule needs several people): such a row does not take the call out of approvers' lists.
      ALTER TABLE ${t.approvalDecisions} ADD COLUMN rule text, ADD COLUMN decider_groups text[],
        ADD COLUMN call_still_waits boolean NOT NULL DEFAULT false;
      -- Who may decide a listed call under its rule ({rule, groups, approvals, requesterMayApprove, reason}).
      ALTER TABLE ${t.pendingApprovals} ADD COLUMN policy jsonb;
      DROP TRIGGER pending_approval_decided ON ${t.approvalDecisions};
      CREATE TRIGGER pending_approval_decided AFTER INSERT OR UPDATE OF superseded_at ON ${t.approvalDecisions}
        FOR EACH ROW WHEN (NEW.call_keys IS NOT NULL AND NEW.superseded_at IS NULL AND NOT NEW.call_still_waits)
        EXECUTE FUNCTION ${t.quotedSchema}.pending_approval_decided();
    `,
  },
  {
    version: 23,
    name: 'decisions keep what their sender signed, for audits',
    sql: (t) => `
      -- The decision as its sender signed it (the fields the signature covers and the signature), so an audit can
      -- check the signature again with the API's keys; null for unsigned decisions, the rules' own, and decisions
      -- recorded before. Decisions are found by time for an audit export.
      ALTER TABLE ${t.approvalDecisions} ADD COLUMN signed_decision jsonb;
      CREATE INDEX approval_decisions_by_time ON ${t.approvalDecisions} (decided_at);
    `,
  },
  {
    version: 24,
    name: 'notifications: an outbox written with the changes it announces, and its deliveries to webhook endpoints',
    sql: (t) => notificationOutboxSql(t),
  },
  {
    version: 25,
    name: 'standing grants: given with an approval, covering later calls of a tool within limits, revocable',
    sql: (t) => `
      -- A grant given with an approval (its id is the approving decision's): the tool and rule it covers, who gave
      -- it, its limits, and its revocation. What it covered is in approval_decisions (via = 'grant', grant_id), with
      -- what each call counted against its amount.
      CREATE TABLE ${t.approvalGrants} (
        conversation_id text NOT NULL,
        grant_id text NOT NULL,
        tool_name text NOT NULL,
        rule text,
        granted_by text,
        authenticated boolean,
        call_key text NOT NULL,
        granted_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        max_calls integer,
        amount_argument text,
        max_amount numeric,
        revoked_at timestamptz,
        revoked_by text,
        revoke_reason text,
        PRIMARY KEY (conversation_id, grant_id)
      );
      CREATE INDEX approval_grants_by_time ON ${t.approvalGrants} (granted_at);
      ALTER TABLE ${t.approvalDecisions} ADD COLUMN grant_id text, ADD COLUMN grant_amount numeric;
    `,
  },
  {
    version: 26,
    name: 'events: calls waiting for an event by name and key, and events sent (routed, or kept for a wait to come)',
    sql: (t) => eventWaitsSql(t),
  },
];

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /** PostgreSQL schema of the project's tables (a plain lowercase SQL identifier). Default `durable_agent`. */
  schema?: string;
}

/**
 * Applies every migration not yet applied, in the project's schema (created
 * when absent), in one transaction. Returns the versions applied now.
 *
 * Every version is recorded once it is done, a retired one too (version 2,
 * whose work moved to the demo's own setup): every ledger then holds every
 * version up to the latest, and "recorded" always means "nothing left to do".
 *
 * Throws a `ConfigError` for a schema name that cannot be used.
 */
export async function migrate(pool: Pool, options: MigrateOptions = {}): Promise<number[]> {
  const tables = agentTables(options.schema);
  return inTransaction(pool, async (client) => {
    // One lock per database, not per schema: installs with different schemas take turns, which
    // costs nothing (migrations are rare and short).
    await client.query("SELECT pg_advisory_xact_lock(hashtext('durable-agent-worker.migrations'))");
    // Checked before creating: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when
    // the schema exists, and a DBA may have created it for a role that lacks that privilege.
    const schemaExists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [tables.schema]);
    if (schemaExists.rowCount === 0) await client.query(`CREATE SCHEMA ${tables.quotedSchema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${tables.schemaMigrations} (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${tables.schemaMigrations}`);
    const applied = new Set(rows.map((r) => r.version));
    const now: number[] = [];
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      if (m.sql) await client.query(m.sql(tables));
      await client.query(`INSERT INTO ${tables.schemaMigrations} (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      now.push(m.version);
    }
    return now;
  });
}
