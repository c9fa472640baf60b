/**
 * The root pino logger. JSON lines, level from config. Anything that could carry an upstream URL
 * or credential is redacted by path, and URLs that slip into free text are scrubbed by
 * `redactUrls` before they are logged (node errors can quote the address they failed to reach).
 * Every logged error goes under `err` (never its bare message), so it passes this serializer.
 */
import { hostname } from 'node:os';
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      name: 'switchyard',
      level,
      // Every line says which replica wrote it: the pod's name under Kubernetes (POD_NAME, set by the
      // Deployment from metadata.name), else the host's name.
      base: { pid: process.pid, hostname: process.env.POD_NAME || hostname() },
      redact: {
        paths: [
          'url',
          '*.url',
          'ws',
          '*.ws',
          'headers.authorization',
          'config.upstreams',
          'config.admin.token',
          'config.uptime.webhooks',
        ],
        censor: '[redacted]',
      },
      formatters: { level: (label) => ({ level: label }) },
      // `{ err }` logs type, message and stack (pino's serializer), with URLs scrubbed from both.
      serializers: { err: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

/**
 * Replaces anything that looks like a URL (with or without credentials) in free text. `file://`
 * URLs are kept: they are this process's own files (ESM stack frames read
 * `at f (file:///app/dist/x.js:10:5)`), and a stack without file and line is no use to anyone.
 */
export function redactUrls(text: string): string {
  return text
    .replace(/\b(?!file:\/\/)[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, '[url]')
    .replace(/\b\d{1,3}(\.\d{1,3}){3}:\d+\b/g, '[address]');
}

function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const out = pino.stdSerializers.err(err);
  out.message = redactUrls(out.message);
  if (typeof out.stack === 'string') out.stack = redactUrls(out.stack);
  return out;
}
