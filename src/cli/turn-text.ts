/**
 * What the terminal shows of a turn's text, for `say`, `chat` and `retry`
 * (directly and through the HTTP API): each model response's text once,
 * whatever pieces it comes in and however often a stream sends it again (the
 * API's events stream, opened again, starts the running call's text over),
 * a retried model call's text after a line saying so, and the answer: what
 * the stream did not show of it, or all of it on its own line.
 */

/** Prints a turn's lines and streamed text through `out`. */
export class TurnText {
  /** Per response: the attempt whose text is shown, and the text printed of it. */
  private readonly shown = new Map<string, { attempt: number; text: string }>();
  /** The response whose text was printed last, while nothing else was printed after it: more of it continues it. */
  private open: string | undefined;
  private midLine = false;

  constructor(private readonly out: (s: string) => void) {}

  /** Prints `s` (whole lines) on a line of its own. */
  line(s: string): void {
    this.newline();
    this.write(s);
  }

  /** Ends the line printed last, if it is open: what is printed next starts a line of its own. */
  newline(): void {
    if (this.midLine) this.write('\n');
    this.open = undefined;
  }

  /**
   * A piece of a response's text: `text` starts at character `offset` of attempt `attempt`'s text. Prints the part
   * not printed yet; an older attempt's piece, a piece printed already, or one past a gap prints nothing. A newer
   * attempt starts the response's text over, after a line saying so when the older one printed some.
   */
  piece(responseKey: string, attempt: number, offset: number, text: string): void {
    let shown = this.shown.get(responseKey);
    if (shown && attempt < shown.attempt) return;
    if (!shown || attempt > shown.attempt) {
      if (shown?.text) this.line('  ↻ the model call was retried; its text starts over\n');
      shown = { attempt, text: '' };
      this.shown.set(responseKey, shown);
    }
    if (offset > shown.text.length) return;
    const added = text.slice(shown.text.length - offset);
    if (added === '') return;
    if (this.open !== responseKey) this.line('agent> ');
    this.write(added);
    this.open = responseKey;
    shown.text += added;
  }

  /**
   * The turn answered `content`: nothing more when the response printed last (or any) printed exactly it; the rest of
   * it when the response printed last, its text still open, printed its beginning (the stream had not shown all of
   * it); else all of it, on its own line.
   */
  answer(content: string): void {
    const open = this.open === undefined ? undefined : this.shown.get(this.open)?.text;
    if (open === content || [...this.shown.values()].some((r) => r.text === content)) this.newline();
    else if (open && content.startsWith(open)) {
      this.write(content.slice(open.length));
      this.newline();
    } else this.line(`agent> ${content}\n`);
  }

  private write(s: string): void {
    if (s === '') return;
    this.out(s);
    this.midLine = !s.endsWith('\n');
  }
}
