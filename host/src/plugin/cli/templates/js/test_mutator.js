// Tests of plugin.js, run in-process by the SDK's harness (no component needed): npm test
// (node --test).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidConfig, testing } from '@syncweave/plugin';

import plugin from '../plugin.js';

test('the examples hold', () => {
  assert.equal(testing.checkExamples(plugin), 1);
});

test('keeps other labels', () => {
  const out = testing.mutate(plugin, { metadata: { name: 'a', labels: { app: 'web' } } }, { config: { labels: { 'example.com/tier': 'gold' } } });
  assert.deepEqual(out, { metadata: { name: 'a', labels: { app: 'web', 'example.com/tier': 'gold' } } });
});

test('bad configs name the field', () => {
  testing.validateConfig(plugin, { labels: { a: 'b' } });
  for (const [cfg, message] of [
    [null, 'config must be an object'],
    [{}, "missing field 'labels'"],
    [{ labels: { a: 1 } }, 'labels.a must be a string'],
    [{ labels: { '': 'x' } }, 'must not be empty'],
  ]) {
    assert.throws(() => testing.validateConfig(plugin, cfg), (e) => e instanceof InvalidConfig && e.message.includes(message), JSON.stringify(cfg));
  }
});
