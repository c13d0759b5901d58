import { describe, expect, it } from 'vitest';
import { callInstanceKey, parseCallInstanceKey } from '../../src/core/effect-keys';

describe('parseCallInstanceKey', () => {
  it('reads back the conversation and the asking seq of every key callInstanceKey makes', () => {
    for (const [id, seq, index, regen] of [
      ['shop-1', 5, 0, 0],
      ['desk~refunder~3-0', 12, 2, 0],
      ['case/with/slashes', 7, 1, 2],
    ] as const) {
      expect(parseCallInstanceKey(callInstanceKey(id, seq, index, regen))).toEqual({
        conversationId: id,
        assistantSeq: seq,
      });
    }
  });

  it('names nothing for a string of another form', () => {
    expect(parseCallInstanceKey('call_abc')).toBeUndefined();
    expect(parseCallInstanceKey('shop-1/msg-x/call-0')).toBeUndefined();
  });
});
