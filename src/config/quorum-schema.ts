/**
 * routing.quorum (part of schema.ts): the reads asked of several nodes and answered only when
 * enough of them agree (routing/quorum.ts). Only reads of the method table may be listed: a write
 * sent to several nodes would be sent several times, a filter lives on one node, a subscription is
 * Switchyard's own, and a local answer asks no node.
 */
import { z } from 'zod';
import { METHODS } from '../methods/table.js';

const positiveInt = z.number().int().positive();

/** The most nodes one quorum call may ask: each is a node call, so n times the cost. */
export const MAX_QUORUM_OF = 16;

const quorumMethod = z.string().superRefine((m, ctx) => {
  const spec = METHODS[m];
  if (spec === undefined)
    ctx.addIssue({
      code: 'custom',
      message: `expected a read method of the method table (docs/routing.md), got ${JSON.stringify(m)}`,
    });
  else if (spec.handling !== 'read')
    ctx.addIssue({
      code: 'custom',
      message: `expected a read method, got ${JSON.stringify(m)} (${WHY_NOT[spec.handling] ?? spec.handling})`,
    });
});

const WHY_NOT: Record<string, string> = {
  write: 'a write would be sent to several nodes',
  'filter-new': 'a filter lives on one node',
  'filter-use': 'a filter lives on one node',
  subscription: 'a subscription is served by Switchyard itself',
  local: 'answered by Switchyard itself, no node is asked',
};

const ruleSchema = z
  .strictObject({
    methods: z.array(quorumMethod).min(1, { error: 'expected at least one method' }),
    /** Answers that must agree (as parsed JSON). */
    min: positiveInt.max(MAX_QUORUM_OF).default(2),
    /** Nodes asked (fewer when fewer are eligible). */
    of: positiveInt.max(MAX_QUORUM_OF).default(3),
    /** Distinct upstreams[].group the agreeing nodes must span. */
    minGroups: positiveInt.default(1),
  })
  .superRefine((r, ctx) => {
    // Judged once each number is a positive whole number: a 0 is refused on its own, once.
    const ok = (n: number): boolean => Number.isInteger(n) && n > 0;
    if (!ok(r.min) || !ok(r.of) || !ok(r.minGroups)) return;
    if (r.min > r.of)
      ctx.addIssue({ code: 'custom', path: ['min'], message: `expected min <= of (${r.of}), got ${r.min}` });
    if (r.minGroups > r.min)
      ctx.addIssue({
        code: 'custom',
        path: ['minGroups'],
        message: `expected minGroups <= min (${r.min}), got ${r.minGroups}`,
      });
  });

export const quorumSchema = z
  .array(ruleSchema)
  .default([])
  .superRefine((rules, ctx) => {
    const seen = new Set<string>();
    rules.forEach((r, i) =>
      r.methods.forEach((m, j) => {
        if (seen.has(m))
          ctx.addIssue({
            code: 'custom',
            path: [i, 'methods', j],
            message: `expected each method in one rule only, got ${JSON.stringify(m)} again`,
          });
        seen.add(m);
      }),
    );
  });

export type QuorumRuleConfig = z.output<typeof ruleSchema>;
