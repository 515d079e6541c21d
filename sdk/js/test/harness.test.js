// The role definitions, adapters, component exports and harness, with one small plugin
// per role.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  Direction,
  Internal,
  InvalidConfig,
  InvalidInput,
  Rejected,
  config,
  defineMutator,
  defineNamer,
  defineProjector,
  defineRenderer,
  log,
  testing,
} from '../src/index.js';
import * as adapter from '../src/adapter.js';
import { exportPlugin } from '../src/component.js';

const label = defineMutator({
  name: 'label',
  description: 'sets one label',
  configSchema: { type: 'object' },
  examples: [
    {
      name: 'sets team',
      config: { key: 'team', value: 'a' },
      input: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } },
      expected: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', labels: { team: 'a' } } },
    },
  ],
  parseConfig(cfg) {
    config.fields(cfg, 'config', { required: ['key', 'value'] });
    return { key: config.string(cfg.key, 'key', { allowEmpty: false }), value: config.string(cfg.value, 'value') };
  },
  mutate(ctx, cfg, obj, other) {
    if (obj.label('locked') === 'true') throw new Rejected('the object is locked');
    obj.setLabel(cfg.key, cfg.value);
    if (other) obj.setAnnotation('other', other.getName() ?? '');
    log.debug(`labelled ${obj.getName()} in ${ctx.clusterName}`);
  },
});

const prefix = defineNamer({
  name: 'prefix',
  examples: [
    { name: 'prefixed', config: { prefix: 'p-' }, input: { metadata: { name: 'a' } }, expected: { name: 'p-a', namespace: 'fixture-cluster' } },
  ],
  nameObject: (ctx, cfg, obj) => ({ name: cfg.prefix + obj.getName(), namespace: ctx.clusterName }),
});

const group = defineProjector({
  name: 'group',
  examples: [{ name: 'group', config: { group: 'b.io' }, input: { spec: { group: 'a.io' } }, expected: { spec: { group: 'b.io' } } }],
  project(cfg, crd) {
    crd.spec.group = cfg.group;
    return crd;
  },
});

const namespaces = defineRenderer({
  name: 'namespaces',
  examples: [
    {
      name: 'one per name',
      config: { template: 'ns-{name}' },
      input: { names: ['a', 'b'] },
      expected: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns-a' } },
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns-b' } },
      ],
    },
  ],
  render: (ctx, cfg, template, values) =>
    values.names.map((n) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: (template || cfg.template).replace('{name}', n) } })),
});

test('examples of every role hold', () => {
  for (const plugin of [label, prefix, group, namespaces]) assert.equal(testing.checkExamples(plugin), 1, plugin.name);
});

test('mutate in place, with other object and log capture', () => {
  log.takeCaptured();
  const ctx = { clusterName: 'c1', clusterPath: 'root:a', direction: Direction.SERVICE_TO_KCP, owner: 'pr' };
  const out = testing.mutate(label, { metadata: { name: 'x' } }, { config: { key: 'k', value: 'v' }, other: { metadata: { name: 'peer' } }, ctx });
  assert.deepEqual(out, { metadata: { name: 'x', labels: { k: 'v' }, annotations: { other: 'peer' } } });
  assert.deepEqual(log.takeCaptured(), [['debug', 'labelled x in c1']]);
});

test('errors are typed', () => {
  assert.throws(() => testing.mutate(label, {}, { configText: '{' }), (e) => e instanceof InvalidConfig && e.message.includes('not valid JSON'));
  assert.throws(() => testing.validateConfig(label, null), (e) => e instanceof InvalidConfig && e.message === 'config must be an object');
  assert.throws(() => testing.validateConfig(label, { key: '', value: 'v' }), (e) => e.message === 'key must not be empty');
  testing.validateConfig(label, { key: 'k', value: 'v' });
  const good = { key: 'k', value: 'v' };
  assert.throws(() => testing.mutate(label, undefined, { config: good, objectText: '[1]' }), (e) => e instanceof InvalidInput && e.message.includes('must be a JSON object'));
  assert.throws(() => testing.mutate(label, undefined, { config: good, objectText: 'nope' }), (e) => e instanceof InvalidInput && e.message.includes('not valid JSON'));
  assert.throws(() => testing.mutate(label, { metadata: { labels: { locked: 'true' } } }, { config: good }), Rejected);
  const buggy = defineMutator({ name: 'buggy', mutate: (ctx, cfg, obj) => obj.spec.deep.value });
  assert.throws(() => testing.mutate(buggy, {}), (e) => e instanceof Internal && e.message.startsWith('TypeError:') && e.message.includes('harness.test.js'));
});

test('the harness applies the host identity rule', () => {
  const renamer = defineMutator({
    name: 'renamer',
    mutate(ctx, cfg, obj) {
      obj.metadata.name = 'other';
    },
  });
  assert.throws(() => testing.mutate(renamer, { metadata: { name: 'a' } }), /changed metadata.name from "a" to "other"/);
});

test('checkExamples reports a mismatch and a plugin without examples', () => {
  const wrong = defineMutator({ ...label, examples: [{ name: 'wrong', config: { key: 'a', value: 'b' }, input: {}, expected: { metadata: {} } }] });
  assert.throws(() => testing.checkExamples(wrong), (e) => e.message.includes("example 'wrong'") && e.message.includes('"labels":{"a":"b"}'));
  assert.throws(() => testing.checkExamples(defineMutator({ ...label, examples: [] })), /publishes no examples/);
});

test('definitions are checked', () => {
  assert.throws(() => defineMutator({ name: 'x' }), /needs a mutate\(\) function/);
  assert.throws(() => defineNamer({ nameObject() {} }), /needs a name/);
});

test('component exports follow componentize-js conventions', () => {
  const lines = [];
  const exported = exportPlugin(label, (level, message) => lines.push([level, message]));
  try {
    const info = exported.meta.describe();
    assert.equal(info.name, 'label');
    assert.equal(info.configSchema, '{"type":"object"}');
    assert.equal(info.examples[0].config, '{"key":"team","value":"a"}');
    assert.throws(() => exported.meta.validateConfig('{}'), (e) => e === "config: missing field 'key'");
    const ctx = { clusterName: 'c', clusterPath: undefined, direction: 'kcp-to-service', owner: 'o' };
    const out = exported.mutation.mutate(ctx, '{"key":"k","value":"v"}', '{"metadata":{"name":"n"}}', undefined);
    assert.equal(out, '{"metadata":{"name":"n","labels":{"k":"v"}}}');
    assert.deepEqual(lines, [['debug', 'labelled n in c']]);
    assert.throws(
      () => exported.mutation.mutate(ctx, '{"key":"k","value":"v"}', '{"metadata":{"labels":{"locked":"true"}}}'),
      (e) => e.tag === 'rejected' && e.val === 'the object is locked',
    );
    assert.deepEqual(exportPlugin(prefix).naming.name(ctx, '{"prefix":"x-"}', '{"metadata":{"name":"a"}}'), { name: 'x-a', namespace: 'c' });
    assert.equal(adapter.parseConfig(''), null);
  } finally {
    log.installSink(null);
  }
});
