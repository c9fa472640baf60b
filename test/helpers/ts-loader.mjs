/**
 * Loads TypeScript for the test processes (.taprc's node-arg) through test/helpers/ts-hooks.mjs
 * instead of tap's own ts-node. ts-node transpiles the whole src/ graph again in every test file's
 * process (~8 s of CPU for the 220 modules most tests load: most of a clean run's time on a 2-core
 * host); the hooks strip the types with esbuild, keep what they made in a cache every process of
 * the run shares, and change nothing else (no helper injected into functions: the status page's
 * script and Playwright's evaluate send functions' own text to the browser).
 *
 * tap's TypeScript plugin loads ts-node unless TAP_TYPE_STRIP_ONLY=1, which .taprc hands to the
 * test processes only (test-env). It is taken back here, before tap reads it, because with it set
 * the plugin adds --no-warnings to NODE_OPTIONS, and every node process a test spawns would then
 * hide the warnings that tests look for on its stderr.
 */
import { register } from 'node:module';

delete process.env.TAP_TYPE_STRIP_ONLY;
register('./ts-hooks.mjs', import.meta.url);
