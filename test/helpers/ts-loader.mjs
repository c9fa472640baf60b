/**
 * Loads TypeScript for the test processes with tsx instead of tap's own ts-node, through
 * .taprc's node-arg. ts-node transpiles the whole src/ graph again in every test file's process
 * (~6 s of CPU each, most of a clean run's time on a 2-core host); tsx (esbuild) keeps what it
 * compiled in a cache shared by every process of the run.
 *
 * tap's TypeScript plugin loads ts-node unless TAP_TYPE_STRIP_ONLY=1, which .taprc hands to the
 * test processes only (test-env). It is taken back here, before tap reads it, because with it set
 * the plugin adds --no-warnings to NODE_OPTIONS, and every node process a test spawns would then
 * hide the warnings that tests look for on its stderr.
 */
delete process.env.TAP_TYPE_STRIP_ONLY;
// The test tsconfig covers test/ too; the root one, tsx's default, covers src/ only.
process.env.TSX_TSCONFIG_PATH ??= new URL('../../tsconfig.test.json', import.meta.url).pathname;
await import('tsx');
