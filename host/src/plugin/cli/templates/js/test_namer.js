// Tests of plugin.js, run in-process by the SDK's harness (no component needed): npm test
// (node --test).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidConfig, InvalidInput, testing } from '@syncweave/plugin';

import plugin from '../plugin.js';

test('the examples hold', () => {
  assert.equal(testing.checkExamples(plugin), 1);
});

test('cluster-scoped objects stay cluster-scoped', () => {
  assert.deepEqual(testing.name(plugin, { metadata: { name: 'global' } }), { name: 'global', namespace: undefined });
});

test('errors', () => {
  assert.throws(() => testing.name(plugin, { metadata: {} }), InvalidInput);
  assert.throws(() => testing.validateConfig(plugin, { prefix: 1 }), InvalidConfig);
});
