/**
 * How many live logs runner serve streams at once: at most `perClient` to one
 * client address and `total` in all. Pure: it counts and decides; the API
 * answers a refusal with its status, message and Retry-After.
 */

export interface StreamCapSettings {
  /** live logs streamed at once, in all */
  total: number;
  /** live logs streamed at once to one client address */
  perClient: number;
  /** a follower that has not taken what waits for it within this long is cut, in ms */
  stallMs: number;
}

export const DEFAULT_STREAM_CAPS: StreamCapSettings = { total: 256, perClient: 32, stallMs: 60_000 };

export type Admission =
  | { ok: true; /** gives the place back (once; later calls do nothing) */ release: () => void }
  | { ok: false; status: 429 | 503; message: string; /** seconds */ retryAfter: number };

export class StreamCaps {
  private open = 0;
  private readonly byClient = new Map<string, number>();

  constructor(private readonly caps: Pick<StreamCapSettings, 'total' | 'perClient'>) {}

  /** A place for one more stream to `client`, or why there is none. */
  admit(client: string): Admission {
    const mine = this.byClient.get(client) ?? 0;
    if (mine >= this.caps.perClient) {
      return {
        ok: false,
        status: 429,
        retryAfter: 10,
        message:
          `${client} already follows ${this.caps.perClient} live logs, the most one address may (--max-log-streams-per-client): ` +
          'close one of them (a dashboard tab, a curl) and try again',
      };
    }
    if (this.open >= this.caps.total) {
      return {
        ok: false,
        status: 503,
        retryAfter: 30,
        message:
          `runner serve already serves ${this.caps.total} live logs, the most it takes (--max-log-streams): ` +
          'try again once some have ended, or start it with a higher --max-log-streams',
      };
    }
    this.open++;
    this.byClient.set(client, mine + 1);
    let held = true;
    return {
      ok: true,
      release: () => {
        if (!held) return;
        held = false;
        this.open--;
        const left = (this.byClient.get(client) ?? 1) - 1;
        if (left > 0) this.byClient.set(client, left);
        else this.byClient.delete(client);
      },
    };
  }

  /** Streams open now, in all and to `client`. */
  count(client?: string): number {
    return client === undefined ? this.open : (this.byClient.get(client) ?? 0);
  }
}
