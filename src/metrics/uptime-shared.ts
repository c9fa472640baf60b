/** The uptime page shared by replicas through Redis (uptime/share/shared.ts): who probes, and the images moved. */
import { Counter, Gauge, type Registry } from 'prom-client';

export const IMAGE_OPS = ['publish', 'load'] as const;
export type ImageOp = (typeof IMAGE_OPS)[number];
export const IMAGE_OUTCOMES = ['ok', 'conflict', 'refused', 'failed'] as const;
export type ImageOutcome = (typeof IMAGE_OUTCOMES)[number];

export class UptimeSharedMetrics {
  private readonly prober: Gauge;
  private readonly images: Counter;
  private readonly bytes: Gauge;

  constructor(registry: Registry) {
    this.prober = new Gauge({
      name: 'switchyard_uptime_prober',
      help: '1 while this replica runs the uptime probes (it holds the lease in Redis, or Redis is unusable and it goes on alone); 0 while another replica does',
      registers: [registry],
    });
    this.images = new Counter({
      name: 'switchyard_uptime_shared_images_total',
      help: 'Uptime store images moved through Redis by op (publish, load) and outcome (ok, conflict: another replica wrote first, refused: over the size limit or not a store of ours, failed: Redis did not answer)',
      labelNames: ['op', 'outcome'],
      registers: [registry],
    });
    this.bytes = new Gauge({
      name: 'switchyard_uptime_shared_image_bytes',
      help: 'Size of the last uptime store image this replica published or loaded',
      registers: [registry],
    });
  }

  /** Called once the shared page is in use: the series exist from then on. */
  declareUptimeShared(): void {
    for (const op of IMAGE_OPS) for (const outcome of IMAGE_OUTCOMES) this.images.inc({ op, outcome }, 0);
  }

  setUptimeProber(prober: boolean): void {
    this.prober.set(prober ? 1 : 0);
  }

  recordUptimeImage(op: ImageOp, outcome: ImageOutcome, bytes?: number): void {
    this.images.inc({ op, outcome });
    if (bytes !== undefined) this.bytes.set(bytes);
  }
}
