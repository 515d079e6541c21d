import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidInput, KubeObject } from '../src/index.js';

test('identity and JSON', () => {
  const o = KubeObject.from({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'ns' } });
  assert.deepEqual([o.apiVersion, o.kind, o.getName(), o.getNamespace()], ['v1', 'ConfigMap', 'a', 'ns']);
  assert.equal(KubeObject.from({}).getName(), undefined);
  assert.equal(JSON.stringify(o), '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}');
});

test('reading changes nothing', () => {
  const o = KubeObject.from({ metadata: { name: 'a' } });
  assert.deepEqual(o.labels(), {});
  assert.equal(o.label('x'), undefined);
  assert.equal(o.removeLabel('x'), undefined);
  assert.deepEqual(JSON.parse(JSON.stringify(o)), { metadata: { name: 'a' } });
  assert.throws(() => {
    'use strict';
    o.labels().x = 'y';
  }, TypeError);
});

test('labels and annotations', () => {
  const o = KubeObject.from({});
  o.setLabel('team', 'a');
  o.setAnnotation('example.com/owner', 'alice');
  assert.deepEqual(JSON.parse(JSON.stringify(o)), {
    metadata: { labels: { team: 'a' }, annotations: { 'example.com/owner': 'alice' } },
  });
  assert.equal(o.label('team'), 'a');
  assert.equal(o.annotation('example.com/owner'), 'alice');
  assert.equal(o.removeLabel('team'), 'a');
  assert.deepEqual(o.labels(), {});
  assert.throws(() => o.setLabel('n', 1), TypeError);
});

test('malformed metadata is invalid input', () => {
  for (const [doc, needle] of [
    [{ metadata: 3 }, 'metadata must be an object'],
    [{ metadata: { labels: [] } }, 'metadata.labels must be an object'],
  ]) {
    assert.throws(() => KubeObject.from(doc).setLabel('a', 'b'), (e) => e instanceof InvalidInput && e.message.includes(needle));
  }
});

test('paths and patches', () => {
  const o = KubeObject.from({ spec: { a: 1 } });
  o.setPath('spec.b.c', 'x');
  assert.equal(o.getPath('spec.b.c'), 'x');
  assert.ok(o.hasPath('spec.a'));
  assert.equal(o.deletePath('spec.a'), 1);
  o.mergePatch({ spec: { b: null }, data: { k: 'v' } });
  assert.deepEqual(JSON.parse(JSON.stringify(o)), { spec: {}, data: { k: 'v' } });
  o.jsonPatch([{ op: 'add', path: '/spec/r', value: 2 }]);
  assert.equal(o.getString('spec.r'), '2');
  assert.ok(o instanceof KubeObject, 'patches keep the helpers');
});
