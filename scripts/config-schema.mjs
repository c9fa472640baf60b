#!/usr/bin/env node
// Writes config/switchyard.schema.json, the configuration's JSON Schema, from the one zod schema
// (src/config/schema.ts, built into dist/): editors that read `# yaml-language-server: $schema=`
// complete and check the YAML with it. Run after `npm run build`: `npm run schema`.
// test/config/json-schema.test.ts checks the committed file equals what this writes.
import { writeFileSync } from 'node:fs';
import { configJsonSchema } from '../dist/config/json-schema.js';

const file = new URL('../config/switchyard.schema.json', import.meta.url);
writeFileSync(file, `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
