/**
 * Refusing a message to a child conversation (one that runs an agent called
 * as a tool) before anything is signalled: the child answers only its task
 * and would drop the message, while the sender waited for a turn that never
 * comes.
 */
import { WorkflowNotFoundError } from '@temporalio/common';
import { ChildConversationError } from '../common/errors';
import type { ClientContext } from './context';

/**
 * What every child conversation's id contains: the workflow starts a child as `<caller>~<agent>~<seq>-<index>`
 * (`subAgentStart` in src/core/agents.ts). An id without it is never a child, so sending to it costs no extra request.
 */
const CHILD_ID_MARK = '~';

/** Parents followed up at most, looking for the top-level conversation when the server does not name it. */
const MAX_PARENT_HOPS = 20;

/**
 * Throws {@link ChildConversationError} when `conversationId` is a child
 * conversation, naming its caller and the top-level conversation; does
 * nothing for any other id, running or not.
 *
 * The check is Temporal's own record, the execution's parent (`describe`):
 * the server answers it alone, in one round trip, with no worker running and
 * no payload to decode, and only for ids that can be a child's. The state
 * query's `calledBy` would need a worker to answer (a message to a
 * conversation whose worker is down is otherwise accepted and waits in
 * history); the id's shape alone would refuse a top-level conversation a
 * person named with `~`.
 */
export async function refuseChildConversation(context: ClientContext, conversationId: string): Promise<void> {
  if (!conversationId.includes(CHILD_ID_MARK)) return;
  const parent = await parentOf(context, conversationId);
  if (!parent) return;
  let root = parent.root ?? parent.id;
  // Servers before root executions were recorded name only the parent: follow parents up.
  for (let hops = 0, above = parent; !parent.root && hops < MAX_PARENT_HOPS; hops++) {
    const next = await parentOf(context, above.id);
    if (!next) break;
    root = next.id;
    above = next;
  }
  throw new ChildConversationError(conversationId, parent.id, root);
}

/** The parent execution of `workflowId` (and the root, when the server records it); undefined for none or no such id. */
async function parentOf(
  context: ClientContext,
  workflowId: string,
): Promise<{ id: string; root?: string } | undefined> {
  try {
    const described = await context.temporal.workflow.getHandle(workflowId).describe();
    const id = described.parentExecution?.workflowId;
    if (!id) return undefined;
    const root = described.rootExecution?.workflowId;
    return root ? { id, root } : { id };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}
