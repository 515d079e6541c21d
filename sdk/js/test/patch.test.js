import assert from 'node:assert/strict';
import { test } from 'node:test';

import { patch } from '../src/index.js';

test('merge patch: RFC 7386 examples', () => {
  const cases = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, p, want] of cases) assert.deepEqual(patch.mergePatch(target, p), want);
  const target = { a: { b: 1 } };
  patch.mergePatch(target, { a: { b: null } });
  assert.deepEqual(target, { a: { b: 1 } }, 'input untouched');
});

test('createMergePatch', () => {
  const original = { a: 1, b: { c: 2, d: 3 }, l: [1] };
  const modified = { a: 1, b: { c: 5 }, l: [1, 2], n: null };
  const p = patch.createMergePatch(original, modified);
  assert.deepEqual(p, { b: { c: 5, d: null }, l: [1, 2], n: null });
  assert.deepEqual(patch.createMergePatch(original, original), {});
});

test('JSON patch: all operations', () => {
  const doc = { metadata: { labels: { a: '1' } }, list: [1, 2, 3] };
  const out = patch.jsonPatch(doc, [
    { op: 'add', path: '/metadata/labels/b~1c', value: '2' },
    { op: 'remove', path: '/metadata/labels/a' },
    { op: 'replace', path: '/list/0', value: 10 },
    { op: 'add', path: '/list/-', value: 4 },
    { op: 'move', from: '/list/1', path: '/moved' },
    { op: 'copy', from: '/moved', path: '/copied' },
    { op: 'test', path: '/copied', value: 2 },
  ]);
  assert.deepEqual(out, { metadata: { labels: { 'b/c': '2' } }, list: [10, 3, 4], moved: 2, copied: 2 });
  assert.deepEqual(doc.list, [1, 2, 3], 'input untouched');
});

test('JSON patch errors name the operation and change nothing', () => {
  const doc = { a: 1 };
  const cases = [
    [[{ op: 'remove', path: '/b' }], 0, 'does not exist'],
    [[{ op: 'add', path: '/x', value: 1 }, { op: 'test', path: '/a', value: 2 }], 1, 'test failed'],
    [[{ op: 'nope', path: '/a' }], 0, 'unknown op'],
    [[{ op: 'add', path: 'a', value: 1 }], 0, 'JSON pointer'],
    [[{ op: 'add', path: '/a' }], 0, 'value'],
  ];
  for (const [ops, index, needle] of cases) {
    assert.throws(
      () => patch.jsonPatch(doc, ops),
      (e) => e instanceof patch.PatchError && e.index === index && e.message.includes(needle),
      JSON.stringify(ops),
    );
  }
  assert.deepEqual(doc, { a: 1 });
});
