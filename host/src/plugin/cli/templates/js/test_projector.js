// Tests of plugin.js, run in-process by the SDK's harness (no component needed): npm test
// (node --test).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidConfig, InvalidInput, testing } from '@syncweave/plugin';

import plugin from '../plugin.js';

test('the examples hold', () => {
  assert.equal(testing.checkExamples(plugin), 1);
});

test('errors', () => {
  assert.throws(() => testing.validateConfig(plugin, { group: 'nodots' }), (e) => e instanceof InvalidConfig && e.message.startsWith('group:'));
  assert.throws(() => testing.project(plugin, { spec: {} }, { config: { group: 'a.b' } }), InvalidInput);
});
