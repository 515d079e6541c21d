// Tests of plugin.js, run in-process by the SDK's harness (no component needed): npm test
// (node --test).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidInput, testing } from '@syncweave/plugin';

import plugin from '../plugin.js';

test('the examples hold', () => {
  // Renderer examples carry their template in the config and run with an empty one.
  assert.equal(testing.checkExamples(plugin), 1);
});

test('values are escaped and unknown keys refused', () => {
  const out = testing.render(plugin, { X: 'say "hi"' }, { template: '[{"kind": "A", "v": "${X}"}, {"kind": "B"}]' });
  assert.deepEqual(out, [{ kind: 'A', v: 'say "hi"' }, { kind: 'B' }]);
  assert.throws(() => testing.render(plugin, {}, { template: '${Nope}' }), (e) => e instanceof InvalidInput && e.message.includes('Nope'));
});
