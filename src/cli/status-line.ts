/**
 * The one live line a terminal shows (backfill progress), redrawn in place. Log lines go through `clear` and `restore`
 * (see LoggerOptions.statusLine), so a log line never lands at the end of the progress line, Ctrl-C included.
 */
export class StatusLine {
  readonly #out: { write(text: string): unknown };
  #text = '';

  constructor(out: { write(text: string): unknown }) {
    this.#out = out;
  }

  show(text: string): void {
    this.#text = text;
    this.#out.write(`\r\x1b[2K${text}`);
  }

  clear(): void {
    if (this.#text) this.#out.write('\r\x1b[2K');
  }

  restore(): void {
    if (this.#text) this.#out.write(this.#text);
  }

  /** Leaves the last state on screen and moves to a fresh line. */
  done(): void {
    if (!this.#text) return;
    this.#out.write('\n');
    this.#text = '';
  }
}
