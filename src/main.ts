#!/usr/bin/env -S node --enable-source-maps --max-semi-space-size=8
/**
 * Process entry: argv, signals, exit codes. The only file that touches process.* for control.
 *   switchyard [serve] --config FILE     the proxy alone (SWITCHYARD_CONFIG may name the file)
 *   switchyard start --config FILE       the embedded devnet (config `devnet:`) and the proxy in front of it
 *   switchyard devnet [flags]            the devnet alone
 *   switchyard check --config FILE       validate FILE (problems on stderr, exit 2); --print shows it
 *   switchyard help                      the same as --help
 * FILE may also be given without --config (`switchyard check config/example.yaml`).
 * Exit codes: 0 after a clean shutdown, 1 on a start failure, 2 on a bad command line or config.
 */
import { parseArgs } from 'node:util';
import type { App } from './app.js';
import { stringify as stringifyYaml } from 'yaml';
import { ConfigError, loadConfigFile } from './config/load.js';
import { maskedConfig } from './config/mask.js';
import type { Config } from './config/schema.js';
import type { Devnet } from './devnet/index.js';
import { readFdLimit } from './limits/fd-limit.js';
import { tuneHeap } from './heap.js';
import { devnetMissing, missingPart } from './parts.js';
import { createLogger, type Logger } from './log/logger.js';
import { COMMIT, VERSION } from './version.js';

const HELP = `switchyard ${VERSION}: an Ethereum JSON-RPC load balancer

Usage:
  switchyard [serve] --config FILE   run the proxy against the upstreams FILE names
  switchyard start --config FILE     run the embedded devnet (the file's devnet: section), then the proxy
  switchyard devnet [options]        run the devnet alone (switchyard devnet --help)
  switchyard check --config FILE [--print]
                                     validate FILE and exit (0 valid, 2 not); --print writes the
                                     effective configuration (defaults filled in, secrets masked)
  switchyard help | --help | --version

FILE may be given without --config (switchyard check config/example.yaml), or named by
SWITCHYARD_CONFIG. Signals: SIGHUP reloads the file, SIGTERM stays unready but serving for
server.shutdownDelayMs, then drains in-flight calls and exits 0; SIGINT drains at once.
Exit code 2: bad command line or config.`;

async function main(argv: string[]): Promise<number> {
  const command = argv[0] !== undefined && !argv[0].startsWith('-') ? argv[0] : 'serve';
  const rest = command === argv[0] ? argv.slice(1) : argv;
  if (command === 'devnet') return runDevnet(rest);
  if (command === 'help') return print(HELP);
  if (command !== 'serve' && command !== 'start' && command !== 'check') {
    process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${HELP}\n`);
    return 2;
  }
  const options = parseOptions(command, rest);
  if (typeof options === 'number') return options;
  const { file, print: printEffective } = options;
  let config: Config;
  try {
    config = loadConfigFile(file);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    if (err.report !== undefined) process.stderr.write(`${err.report}\n`);
    else process.stderr.write(`invalid configuration in ${file}:\n${err.problems.map((p) => `  ${p}`).join('\n')}\n`);
    return 2;
  }
  if (command === 'check') {
    if (printEffective) process.stdout.write(stringifyYaml(maskedConfig(config)));
    process.stderr.write(
      `${file}: valid (${config.upstreams.length} upstream${config.upstreams.length === 1 ? '' : 's'})\n`,
    );
    return 0;
  }
  const missing = missingPart(config, command === 'start');
  if (missing !== null) {
    process.stderr.write(`${missing}\n`);
    return 2;
  }
  return serve(config, file, command === 'start');
}

/** The options of serve, start and check: the config file and --print, or an exit code (help, version, a bad line). */
function parseOptions(command: 'serve' | 'start' | 'check', args: string[]): { file: string; print: boolean } | number {
  let values: { config?: string; help?: boolean; version?: boolean; print?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        print: { type: 'boolean' },
      },
    }));
    if (values.print && command !== 'check') throw new Error('--print is an option of `switchyard check`');
    if (positionals.length > 1 || (positionals.length === 1 && values.config !== undefined))
      throw new Error(
        `one config file, by --config or on its own: got ${[values.config, ...positionals].filter((v) => v !== undefined).join(', ')}`,
      );
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${HELP}\n`);
    return 2;
  }
  if (values.help) return print(HELP);
  if (values.version) return print(`${VERSION} (commit ${COMMIT})`);
  const file = values.config ?? positionals[0] ?? process.env.SWITCHYARD_CONFIG;
  if (file === undefined) {
    process.stderr.write(`no config file: pass --config FILE or set SWITCHYARD_CONFIG\n\n${HELP}\n`);
    return 2;
  }
  return { file, print: values.print === true };
}

/** Runs the proxy (after the devnet when `withDevnet` and the file has a devnet: section) until SIGTERM or SIGINT. */
async function serve(config: Config, file: string, withDevnet: boolean): Promise<number> {
  const log = createLogger(config.log.level);
  // Installed at once: without a handler a SIGHUP ends the process, and in `start` mode the devnet
  // boots first. A HUP before the proxy runs is remembered and applied once it does.
  let app: App | undefined;
  let hupPending = false;
  process.on('SIGHUP', () => {
    if (app !== undefined) return void app.reloadFile();
    if (!hupPending) log.info('SIGHUP before the proxy is running: the file is read again once it is');
    hupPending = true;
  });
  // Loaded only once the config is valid, so a bad file is reported (exit 2) without loading them.
  const [{ App }, { startDevnet }] = await Promise.all([import('./app.js'), import('./devnet/index.js')]);
  let devnet: Devnet | null = null;
  if (withDevnet && config.devnet !== null) {
    const d = config.devnet;
    devnet = await startDevnet({
      nodes: d.nodes,
      chainId: config.chainId,
      blockTimeMs: Math.round(d.blockTime * 1000),
      basePort: d.basePort,
      controlPort: d.controlPort,
      slotsInAnEpoch: d.slotsInAnEpoch,
      logger: log.child({ room: 'devnet' }),
    });
    log.info({ nodes: devnet.nodes().map((n) => n.name), control: devnet.controlUrl }, 'devnet started');
  }
  try {
    // The open-file limit is checked against server.maxConnections (a warning, and a lower cap).
    app = await App.start(config, { logger: log, configFile: file, fdLimit: readFdLimit() });
  } catch (err) {
    log.fatal({ err }, 'could not start');
    await devnet?.stop();
    return 1;
  }
  if (hupPending) void app.reloadFile();
  const signal = await waitForSignal(['SIGTERM', 'SIGINT']);
  // SIGTERM comes from an orchestrator or balancer-aware stop: keep serving unready for the shutdown
  // delay. SIGINT is a person at a terminal: drain at once.
  await app.drain({ delay: signal === 'SIGTERM' });
  await devnet?.stop();
  log.info('stopped');
  return 0;
}

async function runDevnet(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    const { DEVNET_USAGE } = await import('./devnet/index.js');
    return print(DEVNET_USAGE);
  }
  const missing = devnetMissing();
  if (missing !== null) {
    process.stderr.write(`${missing}\n`);
    return 2;
  }
  const log: Logger = createLogger(process.env.LOG_LEVEL ?? 'info');
  let devnet: Devnet;
  try {
    const { runDevnetCommand } = await import('./devnet/index.js');
    devnet = await runDevnetCommand(argv, { logger: log });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  await waitForSignal(['SIGTERM', 'SIGINT']);
  await devnet.stop();
  return 0;
}

function print(text: string): number {
  process.stdout.write(`${text}\n`);
  return 0;
}

function waitForSignal(signals: NodeJS.Signals[]): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    for (const s of signals) process.once(s, () => resolve(s));
  });
}

tuneHeap();

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`fatal: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
