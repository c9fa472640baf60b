/**
 * Every option path of the schema (`server.port`, `upstreams[].url`, ...), read from the zod
 * schema itself, so the list can never drift from it. The tests use it to check that
 * config/example.yaml documents every option.
 */
import type { z } from 'zod';
import { configSchema } from './schema.js';

type AnySchema = z.core.$ZodType;

/** Wrappers that carry no keys of their own (defaults, nullability, transforms). */
function unwrap(s: AnySchema): AnySchema {
  for (;;) {
    const def = s._zod.def as unknown as { type: string; innerType?: AnySchema; in?: AnySchema };
    if (
      def.innerType !== undefined &&
      ['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch', 'nonoptional'].includes(def.type)
    )
      s = def.innerType;
    else if (def.type === 'pipe' && def.in !== undefined) s = def.in;
    else return s;
  }
}

function walk(s: AnySchema, path: string, out: string[]): void {
  const def = unwrap(s)._zod.def as unknown as {
    type: string;
    shape?: Record<string, AnySchema>;
    element?: AnySchema;
    options?: AnySchema[];
  };
  if (def.type === 'object' && def.shape) {
    for (const [k, v] of Object.entries(def.shape)) {
      const p = path === '' ? k : `${path}.${k}`;
      out.push(p);
      walk(v, p, out);
    }
  } else if (def.type === 'array' && def.element) walk(def.element, `${path}[]`, out);
  else if (def.type === 'union' && def.options) for (const o of def.options) walk(o, path, out);
}

export function schemaKeyPaths(schema: AnySchema = configSchema): string[] {
  const out: string[] = [];
  walk(schema, '', out);
  return [...new Set(out)];
}
