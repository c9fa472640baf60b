/**
 * The package's programmatic API (`import { start } from 'switchyard-rpc'`), for those who embed
 * Switchyard in a process of their own: start from a configuration object, reload it, stop.
 * docs/operations.md#embedding says how. The object is the YAML file's content as a JS value (no
 * `${NAME}` expansion: that is the file's); it is validated like a file, and a bad one throws
 * ConfigError with one line per problem.
 */
import { App, type AppOptions, type Ports } from './app.js';
import { validateConfig } from './config/load.js';
import { missingPart } from './parts.js';

export { App, type AppOptions, type Ports, type ReloadResult } from './app.js';
export { ConfigError, loadConfigFile, parseConfigText, validateConfig } from './config/load.js';
export type { Config, ConfigInput } from './config/schema.js';
export { COMMIT, VERSION } from './version.js';

export interface Switchyard {
  /** The ports bound (useful with port 0). */
  readonly ports: Ports;
  /** Whether /ready answers 200. */
  readonly ready: boolean;
  /** Applies a new configuration object as SIGHUP applies a file (restart-only keys keep their running values). */
  reload(config: unknown): Promise<void>;
  /** Stops listening, lets in-flight calls finish, closes upstream connections, Redis and the store. */
  stop(): Promise<void>;
  /** The App itself, for what the three verbs above do not cover (drain, reloadFile). */
  readonly app: App;
}

/**
 * Validates `config` and starts the proxy (not the devnet). Throws ConfigError on a bad config,
 * and an Error naming what to install when the config asks for a part this install lacks
 * (tracing's optional dependencies). Nothing touches the process: no signal handlers, no exit.
 */
export async function start(config: unknown, opts: AppOptions = {}): Promise<Switchyard> {
  const valid = validateConfig(config);
  const missing = missingPart(valid, false);
  if (missing !== null) throw new Error(missing);
  const app = await App.start(valid, opts);
  return {
    app,
    get ports() {
      return app.ports;
    },
    get ready() {
      return app.ready;
    },
    reload: async (next) => app.reload(validateConfig(next)),
    stop: () => app.close(),
  };
}
