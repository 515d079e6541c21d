// Unit tests of plugin.js through the SDK's in-process harness: `node --test` in
// examples/js-mutator.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidConfig, InvalidInput, testing } from '@syncweave/plugin';

import plugin, { EXAMPLE } from '../plugin.js';

const run = (config, obj) => testing.mutate(plugin, obj, { config });

test('the published example holds', () => {
  assert.deepEqual(run(EXAMPLE.config, EXAMPLE.input), EXAMPLE.expected);
  assert.equal(testing.checkExamples(plugin), 1);
});

test('creates labels and skips a missing annotation', () => {
  const out = run(
    { label: { key: 'app.kubernetes.io/team', value: 'x' }, copyAnnotation: { from: 'a', to: 'b' } },
    { metadata: { name: 'n' } },
  );
  assert.deepEqual(out, { metadata: { name: 'n', labels: { 'app.kubernetes.io/team': 'x' } } });
});

test('config errors name the field', () => {
  const cases = [
    ['', 'config must be an object'],
    ['{', 'not valid JSON'],
    ['{}', "missing field 'label'"],
    ['{"label": {"key": "", "value": ""}}', 'label.key must not be empty'],
    ['{"label": {"key": "k", "value": 1}}', 'label.value must be a string'],
    ['{"label": {"key": "k", "value": "v"}, "extra": 1}', "unknown field 'extra'"],
    ['{"label": {"key": "k", "value": "v"}, "copyAnnotation": {"from": "a"}}', "missing field 'to'"],
  ];
  for (const [text, message] of cases) {
    assert.throws(
      () => testing.validateConfig(plugin, undefined, { configText: text }),
      (err) => err instanceof InvalidConfig && err.message.includes(message),
      text,
    );
  }
});

test('input errors', () => {
  const configText = JSON.stringify({ label: { key: 'k', value: 'v' } });
  for (const text of ['[1]', 'nope', '{"metadata": 3}']) {
    assert.throws(() => testing.mutate(plugin, undefined, { configText, objectText: text }), InvalidInput, text);
  }
});
