/**
 * The `tracing` section of the configuration schema (schema.ts holds the rest): the collector,
 * sampling and the export queue's bounds, with their defaults. Which keys reload: restart.ts.
 * OpenTelemetry's OTEL_* environment variables fill what the file leaves out (otel-env.ts), before
 * these defaults apply.
 */
import { z } from 'zod';
import { httpUrl } from './checks.js';

const positiveInt = z.number().int().positive();

export const tracingSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** The collector's OTLP/HTTP traces URL; a bare host (path `/`) gets `/v1/traces`. A secret, like upstream URLs. */
    endpoint: httpUrl.nullable().default('http://127.0.0.1:4318/v1/traces'),
    /** Headers sent with every export (a collector's auth); secrets, masked in `check --print`. */
    headers: z.record(z.string().min(1), z.string()).default({}),
    /** Share of requests without a sampled parent that are exported (slow and failed ones always are). */
    sampleRate: z.number().min(0).max(1).default(0.01),
    /** The exported spans' `service.name` (a fleet of several Switchyards may name each its own). */
    serviceName: z.string().min(1).max(128).default('switchyard'),
    /** More resource attributes (`deployment.environment.name`, `k8s.pod.name`, ...); over OTEL_RESOURCE_ATTRIBUTES, per key. */
    resourceAttributes: z.record(z.string().min(1).max(256), z.string().max(4096)).default({}),
    /** A request that takes at least this long is exported whatever the sample. */
    slowMs: positiveInt.default(1_000),
    /** Spans waiting to be exported; past it spans are dropped and counted. */
    maxQueueSize: positiveInt.default(2_048),
    /** Spans per export request. */
    maxExportBatchSize: positiveInt.default(512),
    /** An export request the collector has not answered in this long is given up (its spans counted dropped). */
    exportTimeoutMs: positiveInt.default(10_000),
  })
  .prefault({})
  .refine((t) => !t.enabled || t.endpoint !== null, {
    error: 'expected tracing.endpoint when tracing.enabled is true',
    path: ['endpoint'],
  })
  .refine((t) => t.maxExportBatchSize <= t.maxQueueSize, {
    error: 'expected maxExportBatchSize <= maxQueueSize',
    path: ['maxExportBatchSize'],
  });
