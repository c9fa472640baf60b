/**
 * The fleet's first round of polls at start: done once every node it started with (shadows aside)
 * has answered or failed a poll, i.e. left `connecting`, or after a bound, whichever comes first.
 * Until then /ready is 503 (server/admin.ts): a balancer that sent calls to a replica just started
 * would get NO_UPSTREAM for calls its nodes could answer a moment later. With every node down the
 * round ends as fast as their polls fail, so the replica still becomes ready and answers -32002.
 * The bound (two poll questions' timeouts: a node that answers its chain id and then hangs on its
 * head) covers a node that stays `connecting`, such as one answering "too many requests".
 * Latched: nodes added later (a reload, discovery) never make a ready replica unready.
 */
import type { Fleet } from './fleet.js';
import type { Upstream } from './node.js';
import { pollTimeoutMs, type ProbeSettings } from './probe.js';

export class FirstRound {
  private finished = false;
  private readonly timer: NodeJS.Timeout;
  private readonly waiting: ReadonlySet<Upstream>;
  private readonly onState = (): void => this.check();

  constructor(
    private readonly fleet: Fleet,
    settings: Pick<ProbeSettings, 'headPollMs' | 'upstreamTimeoutMs'>,
  ) {
    this.waiting = new Set(fleet.upstreams.filter((u) => !u.shadow));
    this.timer = setTimeout(() => this.finish(), 2 * pollTimeoutMs(settings));
    this.timer.unref();
    fleet.on('upstream-state', this.onState);
    this.check();
  }

  /** Every node started with was judged once, or the bound passed. */
  get done(): boolean {
    return this.finished;
  }

  stop(): void {
    this.finish();
  }

  private check(): void {
    if (this.fleet.upstreams.every((u) => !this.waiting.has(u) || u.state !== 'connecting')) this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    this.fleet.off('upstream-state', this.onState);
  }
}
