import { describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { stickyQueueIn } from '../../src/worker/lost-workers';

// How a worker's sticky queue is read from a conversation's history (the SDK
// does not tell a worker its own): the queue a task was scheduled on right
// after that worker completed one, or the queue a task it started came from.

const { EventType, TaskQueueKind } = temporal.api.enums.v1;
type Event = temporal.api.history.v1.IHistoryEvent;
const scheduled = (name: string, sticky: boolean): Event => ({
  eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
  workflowTaskScheduledEventAttributes: {
    taskQueue: { name, kind: sticky ? TaskQueueKind.TASK_QUEUE_KIND_STICKY : TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
  },
});
const started = (identity: string): Event => ({
  eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
  workflowTaskStartedEventAttributes: { identity },
});
const completed = (identity: string): Event => ({
  eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  workflowTaskCompletedEventAttributes: { identity },
});
const timedOut: Event = { eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT };

describe('stickyQueueIn', () => {
  it('finds the sticky queue a task was scheduled on after the worker completed one, even if the worker died before starting it', () => {
    const events = [
      scheduled('agents', false),
      started('w1'),
      completed('w1'),
      scheduled('w1-sticky', true),
      timedOut,
      scheduled('agents', false),
      started('w2'),
    ];
    expect(stickyQueueIn(events, 'w1')).toBe('w1-sticky');
  });

  it('finds the sticky queue a task started by the worker came from', () => {
    const events = [
      scheduled('agents', false),
      started('w2'),
      completed('w2'),
      scheduled('w1-sticky', true),
      started('w1'),
    ];
    expect(stickyQueueIn(events, 'w1')).toBe('w1-sticky');
  });

  it("does not take another worker's sticky queue, or the normal queue", () => {
    const events = [
      scheduled('agents', false),
      started('w1'),
      completed('w2'),
      scheduled('w2-sticky', true),
      started('w2'),
      completed('w2'),
      scheduled('agents', false),
    ];
    expect(stickyQueueIn(events, 'w1')).toBeUndefined();
    expect(stickyQueueIn(events, 'w2')).toBe('w2-sticky');
  });

  it('gives the latest sticky queue of the worker identity', () => {
    const events = [
      completed('w1'),
      scheduled('w1-old', true),
      started('w1'),
      completed('w1'),
      scheduled('w1-new', true),
    ];
    expect(stickyQueueIn(events, 'w1')).toBe('w1-new');
  });
});
