// Builds plugin.js into a component: node build.mjs [output.wasm]
// (default output: <repo>/target/plugins/js-mutator.wasm).
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { componentize } from '@bytecodealliance/componentize-js';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? resolve(here, '../../target/plugins/js-mutator.wasm'));

const { component } = await componentize({
  sourcePath: resolve(here, 'plugin.js'),
  witPath: resolve(here, '../../wit'),
  worldName: 'mutator',
  // No randomness, clocks or network in the sandbox; stdio stays so that uncaught
  // errors are reported instead of trapping silently.
  disableFeatures: ['random', 'clocks', 'http', 'fetch-event'],
});

await mkdir(dirname(out), { recursive: true });
// Write next to the target and rename, so a half-written file is never picked up.
await writeFile(`${out}.tmp`, component);
await rename(`${out}.tmp`, out);
console.log(`wrote ${out} (${component.length} bytes)`);
