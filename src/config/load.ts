/**
 * Turns a YAML file into a validated, frozen Config.
 * Owns: reading, ${NAME} expansion, schema validation, error wording ("path: expected X, got Y").
 * Refuses: defaults (schema.ts) and acting on the config (app.ts).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { maskUrlText } from './mask.js';
import { applyOtelEnv } from './otel-env.js';
import { configSchema, type Config } from './schema.js';

/** Every problem found in a file, one line each; main.ts turns it into exit code 2. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([`cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
  return parseConfigText(text, env);
}

export function parseConfigText(text: string, env: NodeJS.ProcessEnv = process.env): Config {
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    throw new ConfigError([`config is not valid YAML: ${(err as Error).message.split('\n')[0]}`]);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(['(root): expected a mapping of options']);
  }
  const problems: string[] = [];
  const expanded = expandEnv(raw, [], env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return validateConfig(expanded, env);
}

/**
 * `env`'s OTEL_* variables fill the tracing section's blanks first (otel-env.ts): a file and an
 * embedding program's object alike follow the process's OpenTelemetry environment.
 */
export function validateConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env): Config {
  const otel = applyOtelEnv(raw, env);
  if (otel.problems.length > 0) throw new ConfigError([...otel.problems]);
  raw = otel.raw;
  // zod 4 leaves `input` out of issues unless asked; without it every "got Y" would say "nothing".
  const result = configSchema.safeParse(raw, { reportInput: true });
  if (!result.success) throw new ConfigError(result.error.issues.map(describeIssue));
  return deepFreeze(result.data);
}

/** `${NAME}` in any string is replaced from the environment; an unset NAME is an error, never "". */
function expandEnv(value: unknown, path: (string | number)[], env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const v = env[name];
      if (v === undefined) {
        problems.push(`${formatPath(path)}: environment variable ${name} is not set`);
        return '';
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, [...path, i], env, problems));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = expandEnv(v, [...path, k], env, problems);
    return out;
  }
  return value;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let s = '';
  for (const p of path) {
    if (typeof p === 'number') s += `[${p}]`;
    else s += s === '' ? String(p) : `.${String(p)}`;
  }
  return s === '' ? '(root)' : s;
}

/** An issue as one line, with a value that may hold credentials never quoted (SPEC 6). */
function describeIssue(issue: z.core.$ZodIssue): string {
  const kind = secretKind(issue.path);
  if (kind === null) return describeAnyIssue(issue, describeValue);
  return describeAnyIssue(issue, (v) =>
    typeof v === 'string' && v !== '' ? describeSecret(kind, v) : describeValue(v),
  );
}

/**
 * Options whose values may hold credentials: upstream URLs (user:key@, keys in the path or query)
 * and headers (authorization, x-api-key), Redis URLs (passwords), API keys, the admin token,
 * uptime webhook URLs (a Slack webhook's path is its key).
 */
function secretKind(path: readonly PropertyKey[]): 'url' | 'secret' | null {
  const [a, b, c, d] = path;
  if (a === 'upstreams' && typeof b === 'number')
    return c === 'url' || c === 'ws' ? 'url' : c === 'headers' ? 'secret' : null;
  if (a === 'rateLimit' && b === 'apiKeys' && d === 'key') return 'secret';
  if (a === 'admin' && b === 'token') return 'secret';
  if (a === 'uptime' && b === 'webhooks' && typeof c === 'number' && d === 'url') return 'url';
  return path.at(-1) === 'redis' ? 'url' : null;
}

function describeSecret(kind: 'url' | 'secret', value: string): string {
  const masked = kind === 'url' ? maskUrlText(value) : null;
  if (masked !== null) return JSON.stringify(masked);
  return kind === 'url'
    ? 'a value that is not a URL (not shown: it may hold credentials)'
    : 'a value that is not shown (it is a secret)';
}

/**
 * An issue as one line; `show` describes the value. A schema message of its own quotes the value as
 * JSON.stringify(input) (schema.ts), and only that quoted text is handed to `show`: the key path and
 * the wording stay as written, whatever the value is.
 */
function describeAnyIssue(issue: z.core.$ZodIssue, show: (v: unknown) => string): string {
  const where = formatPath(issue.path);
  const quoted = typeof issue.input === 'string' ? JSON.stringify(issue.input) : null;
  const message = quoted === null ? issue.message : issue.message.split(quoted).join(show(issue.input));
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((k) => `${where === '(root)' ? k : `${where}.${k}`}: unknown option`).join('\n');
    case 'invalid_type':
      return `${where}: expected ${issue.expected}, got ${show(issue.input)}`;
    case 'too_small':
    case 'too_big':
    case 'invalid_value':
    case 'invalid_format':
      return `${where}: ${message.replace(/^(Invalid input|Too big|Too small): /, '')}, got ${show(issue.input)}`;
    case 'invalid_key':
      // A record key (a header name, a method name) that the key schema refused: say why.
      return `${where}: ${issue.issues.map((i) => i.message).join('; ')}`;
    default:
      return `${where}: ${message}`;
  }
}

function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return JSON.stringify(v);
}

function deepFreeze<T>(obj: T): T {
  if (obj !== null && typeof obj === 'object' && !Object.isFrozen(obj)) {
    Object.freeze(obj);
    for (const v of Object.values(obj)) deepFreeze(v);
  }
  return obj;
}
