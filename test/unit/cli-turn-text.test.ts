import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sayThroughApi } from '../../src/cli/api-conversation';
import { TurnText } from '../../src/cli/turn-text';

// What the CLI prints of a turn's text (src/cli/turn-text.ts, used by say,
// chat and retry, directly and through the API): each character once,
// whatever pieces the text comes in and however often a stream sends it
// again from its start, as the API's events stream does when the CLI opens
// it again after wait_ended.

const printed = () => {
  let out = '';
  return { text: () => out, printer: new TurnText((s) => (out += s)) };
};

/** `text` cut at `cuts` (positions inside it), as the pieces a stream sends with their offsets. */
function pieces(text: string, cuts: number[]): { offset: number; text: string }[] {
  const at = [...new Set(cuts.filter((c) => c > 0 && c < text.length))].sort((a, b) => a - b);
  return [0, ...at].map((start, i) => ({ offset: start, text: text.slice(start, at[i] ?? text.length) }));
}

describe("the CLI's turn text", () => {
  it('prints each character once, however the text is split and however often a stream starts it over', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        // Each stream: how far the text had streamed when it ended (a fraction), and where it split the text.
        fc.array(fc.record({ upTo: fc.double({ min: 0, max: 1, noNaN: true }), cuts: fc.array(fc.nat(40)) }), {
          maxLength: 5,
        }),
        fc.array(fc.nat(40)),
        (answer, streams, lastCuts) => {
          const { text, printer } = printed();
          for (const stream of streams) {
            const upTo = Math.floor(stream.upTo * answer.length);
            for (const p of pieces(answer.slice(0, upTo), stream.cuts)) printer.piece('r1', 1, p.offset, p.text);
          }
          for (const p of pieces(answer, lastCuts)) printer.piece('r1', 1, p.offset, p.text);
          printer.answer(answer);
          expect(text()).toBe(`agent> ${answer}${answer.endsWith('\n') ? '' : '\n'}`);
        },
      ),
    );
  });

  it('prints the rest of the answer when the stream had shown its beginning, and all of it when it had shown none', () => {
    const partly = printed();
    partly.printer.piece('r1', 1, 0, 'The sec');
    partly.printer.answer('The second answer.');
    expect(partly.text()).toBe('agent> The second answer.\n');

    const none = printed();
    none.printer.piece('r0', 1, 0, 'Looking it up.');
    none.printer.line('  ⚙ find_customer [call_1]\n');
    none.printer.answer('Ada is cus_ada.');
    expect(none.text()).toBe('agent> Looking it up.\n  ⚙ find_customer [call_1]\nagent> Ada is cus_ada.\n');
  });

  it("starts a retried call's text over after a line saying so; an older attempt's pieces, sent late or again, print nothing", () => {
    const { text, printer } = printed();
    printer.piece('r1', 1, 0, 'First try');
    printer.piece('r1', 2, 0, 'Sec');
    printer.piece('r1', 1, 9, ' goes on'); // late
    printer.piece('r1', 1, 0, 'First try'); // a stream opened again sends what is kept of both attempts
    printer.piece('r1', 2, 0, 'Second');
    printer.piece('r1', 2, 6, ' try.');
    printer.answer('Second try.');
    expect(text()).toBe('agent> First try\n  ↻ the model call was retried; its text starts over\nagent> Second try.\n');

    // A newer attempt that has no text yet (or never has: a call) says so at once.
    const calls = printed();
    calls.printer.piece('r1', 1, 0, 'Let me ch');
    calls.printer.piece('r1', 2, 0, '');
    calls.printer.line('  ⚙ find_customer [call_1]\n');
    expect(calls.text()).toBe(
      'agent> Let me ch\n  ↻ the model call was retried; its text starts over\n  ⚙ find_customer [call_1]\n',
    );
  });
});

describe('say through the API, against a scripted events stream', () => {
  /** An API whose events streams are `streams`, one per request, each ending with its last event. */
  async function scriptedApi(
    streams: string[][],
  ): Promise<{ url: string; close: () => Promise<void>; opened: () => number }> {
    let opened = 0;
    const server = http.createServer((req, res) => {
      if (req.method === 'POST') {
        res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ messageId: 'm1' }));
        return;
      }
      const events = streams[opened++] ?? [];
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(events.join(''));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      opened: () => opened,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    };
  }
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  const delta = (text: string, offset?: number, attempt = 1) =>
    event('delta', { responseKey: 'r1', attempt, ...(offset === undefined ? {} : { offset }), text, reset: false });
  const waitEnded = event('wait_ended', { waitSeconds: 1, messageId: 'm1' });
  const answered = (answer: string) => event('turn', { outcome: 'answered', messageIds: ['m1'], answer });

  it('prints each character once when streams opened again send the text again, split anew, with offsets or without', async () => {
    for (const withOffsets of [true, false]) {
      const d = (text: string, offset: number) => delta(text, withOffsets ? offset : undefined);
      const api = await scriptedApi([
        [d('Answ', 0), d('ered a', 4), waitEnded],
        [d('An', 0), d('swered aft', 2), d('er a w', 12), waitEnded],
        [d('Answered after a wh', 0), d('ile.', 19), answered('Answered after a while.')],
      ]);
      let out = '';
      try {
        await sayThroughApi({ url: api.url, token: 't' }, 'c1', 'Take your time', (s) => (out += s));
      } finally {
        await api.close();
      }
      expect(api.opened()).toBe(3);
      expect(out, withOffsets ? 'with offsets' : 'without offsets').toBe('agent> Answered after a while.\n');
    }
  });

  it('completes the answer when the turn ends before the stream showed all of its text', async () => {
    const api = await scriptedApi([[delta('Answered af', 0), answered('Answered after a while.')]]);
    let out = '';
    try {
      await sayThroughApi({ url: api.url, token: 't' }, 'c1', 'Take your time', (s) => (out += s));
    } finally {
      await api.close();
    }
    expect(out).toBe('agent> Answered after a while.\n');
  });
});
