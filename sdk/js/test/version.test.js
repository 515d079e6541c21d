// The SDK's version is the WIT package version: syncweave:plugin@X.Y.Z -> X.Y.Z.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { CONTRACTS, VERSION, WIT_PACKAGE, WIT_PACKAGES } from '../src/index.js';

const wit = readFileSync(new URL('../../../wit/plugin.wit', import.meta.url), 'utf8');
const wit02 = readFileSync(new URL('../../../wit/v0.2/plugin.wit', import.meta.url), 'utf8');
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

function witPackage(text = wit) {
  const m = text.match(/^package\s+([a-z0-9-]+:[a-z0-9-]+)@([0-9][^;\s]*)\s*;/m);
  assert.ok(m, 'wit/plugin.wit has a package line');
  return { name: m[1], version: m[2] };
}

test('the SDK version is the WIT package version', () => {
  const { name, version } = witPackage();
  assert.equal(name, 'syncweave:plugin');
  assert.equal(pkg.version, version, 'package.json version');
  assert.equal(VERSION, version, 'VERSION');
  assert.equal(WIT_PACKAGE, `${name}@${version}`);
  assert.equal(pkg.syncweave.wit, WIT_PACKAGE);
});

test('every contract version the SDK implements is a WIT package of the repository', () => {
  assert.deepEqual(CONTRACTS, ['0.1', '0.2']);
  const v01 = witPackage(wit);
  const v02 = witPackage(wit02);
  assert.equal(WIT_PACKAGES['0.1'], `${v01.name}@${v01.version}`);
  assert.equal(WIT_PACKAGES['0.2'], `${v02.name}@${v02.version}`);
  assert.deepEqual(pkg.syncweave.contracts, WIT_PACKAGES);
});
