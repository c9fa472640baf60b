/**
 * The configuration's JSON Schema (config/switchyard.schema.json, written by
 * scripts/config-schema.mjs), made from the one zod schema so the two never differ. It describes
 * the file as written (zod's input side: defaults make keys optional); what JSON Schema cannot say
 * (cross-field checks, transforms) stays with `switchyard check`.
 */
import { z } from 'zod';
import { configSchema } from './schema.js';

export function configJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }),
    title: 'Switchyard configuration',
  };
}
