/**
 * Turns a YAML file into a validated, frozen Config.
 * Owns: reading, ${NAME} and ${NAME:-default} expansion, schema validation, error wording ("path:
 * expected X, got Y", "unknown option (did you mean ...)", a YAML error as file:line:col and its frame).
 * Refuses: defaults (schema.ts) and acting on the config (app.ts).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { maskUrlText } from './mask.js';
import { applyOtelEnv } from './otel-env.js';
import { configSchema, type Config } from './schema.js';
import { closestOption } from './suggest.js';

/**
 * Every problem found in a file, one line each; main.ts turns it into exit code 2. `report`, when
 * set, is the whole text to print instead (a file that cannot be read, a YAML syntax error: one
 * thing wrong, said as compilers say it rather than under "invalid configuration").
 */
export class ConfigError extends Error {
  constructor(
    readonly problems: string[],
    readonly report?: string,
  ) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const line =
      code === 'ENOENT' ? `config file not found: ${file}` : `cannot read config file ${file}: ${code ?? String(err)}`;
    throw new ConfigError([line], line);
  }
  return parseConfigText(text, env, file);
}

/** `source` names the text in a YAML syntax error (`file:line:col`); `(config)` when it has no file. */
export function parseConfigText(text: string, env: NodeJS.ProcessEnv = process.env, source = '(config)'): Config {
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    if (!(err instanceof YAMLParseError)) throw err;
    throw yamlError(err, source);
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
  if (!result.success) throw new ConfigError(result.error.issues.flatMap((i) => describeIssue(i).split('\n')));
  return deepFreeze(result.data);
}

/**
 * A YAML syntax error as `file:line:col: message` and the library's code frame (the line and a caret
 * under the column). URLs in the frame lose credentials, path and query as in every other config
 * message (the caret may then stand a little off on that line: the position is in the first line).
 */
function yamlError(err: YAMLParseError, source: string): ConfigError {
  const [first = '', ...frame] = err.message.split('\n');
  const at = err.linePos?.[0];
  const where = at === undefined ? source : `${source}:${at.line}:${at.col}`;
  const message = first.replace(/ at line \d+, column \d+:?$/, '');
  const lines = frame.filter((l) => l.trim() !== '').map((l) => `  ${maskUrlsIn(l)}`);
  return new ConfigError(
    [`${where}: not valid YAML: ${message}`],
    [`${where}: not valid YAML: ${message}`, ...lines].join('\n'),
  );
}

function maskUrlsIn(line: string): string {
  return line.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s"'`,{}[\]]+/gi, (url) => maskUrlText(url) ?? url);
}

/**
 * `${NAME}` in any string is replaced from the environment; an unset NAME is an error, never "".
 * `${NAME:-default}` takes `default` when NAME is unset or empty, as a POSIX shell does.
 */
function expandEnv(value: unknown, path: (string | number)[], env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (typeof value === 'string') {
    return value.replace(
      /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
      (_, name: string, fallback: string | undefined) => {
        const v = env[name];
        if (fallback !== undefined && (v === undefined || v === '')) return fallback;
        if (v === undefined) {
          problems.push(`${formatPath(path)}: environment variable ${name} is not set`);
          return '';
        }
        return v;
      },
    );
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
      return issue.keys
        .map((k) => {
          const given = issue.input !== null && typeof issue.input === 'object' ? Object.keys(issue.input) : [];
          const near = closestOption(issue.path, k, given);
          return `${where === '(root)' ? k : `${where}.${k}`}: unknown option${near === null ? '' : ` (did you mean ${near}?)`}`;
        })
        .join('\n');
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
