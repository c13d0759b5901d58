/**
 * Reading what a person (or a pipe) types: lines are queued as they arrive,
 * so lines piped in while a turn runs wait for their turn instead of being
 * dropped.
 */
import readline from 'node:readline';

/** The lines of an input, in order, each taken once with {@link LineQueue.next}. */
export class LineQueue {
  private readonly queued: string[] = [];
  private waiter: ((line: string | undefined) => void) | undefined;
  private closed = false;
  private readonly rl: readline.Interface;

  constructor(input: NodeJS.ReadableStream, output: NodeJS.WritableStream) {
    const terminal = (input as { isTTY?: boolean }).isTTY === true;
    this.rl = readline.createInterface({ input, output: terminal ? output : undefined, terminal });
    this.rl.on('line', (line) => {
      if (this.waiter) {
        const resolve = this.waiter;
        this.waiter = undefined;
        resolve(line);
      } else this.queued.push(line);
    });
    this.rl.on('close', () => {
      this.closed = true;
      this.waiter?.(undefined);
      this.waiter = undefined;
    });
  }

  /** The next line, after showing `prompt`; undefined once the input has ended and every line was taken. */
  next(prompt: string, output: NodeJS.WritableStream): Promise<string | undefined> {
    output.write(prompt);
    const line = this.queued.shift();
    if (line !== undefined) {
      // A piped line answers the prompt: show it, as a terminal would have.
      if (!this.rl.terminal) output.write(`${line}\n`);
      return Promise.resolve(line);
    }
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiter = (value) => {
        if (value !== undefined && !this.rl.terminal) output.write(`${value}\n`);
        resolve(value);
      };
    });
  }

  close(): void {
    this.rl.close();
  }
}

/** All of an input, as text (for `say <id> -`). */
export async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
