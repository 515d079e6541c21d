import assert from 'node:assert/strict';
import { test } from 'node:test';

import { path } from '../src/index.js';
import { PathError } from '../src/path.js';

const doc = {
  metadata: { name: 'a', labels: { app: 'web', 'example.com/team': 'x' } },
  spec: { items: [{ name: 'one', n: 1 }, { name: 'two' }], replicas: 3, on: true },
};

test('get: keys, indexes and escapes', () => {
  assert.equal(path.get(doc, 'metadata.name'), 'a');
  assert.equal(path.get(doc, 'spec.items.1.name'), 'two');
  assert.equal(path.get(doc, 'metadata.labels.example\\.com/team'), 'x');
  assert.equal(path.get(doc, ['metadata', 'labels', 'example.com/team']), 'x');
  assert.equal(path.get(doc.metadata.labels, path.key('example.com/team')), 'x');
  assert.equal(path.get(doc, 'spec.items.5.name'), undefined);
  assert.equal(path.get(doc, 'spec.nothing', 'dflt'), 'dflt');
  assert.ok(path.has(doc, 'spec.on'));
  assert.ok(!path.has(doc, 'spec.off'));
});

test('get: # and wildcards', () => {
  assert.equal(path.get(doc, 'spec.items.#'), 2);
  assert.deepEqual(path.get(doc, 'spec.items.#.name'), ['one', 'two']);
  assert.deepEqual(path.get(doc, 'spec.items.#.n'), [1]);
  assert.equal(path.get(doc, 'metadata.labels.ex*'), 'x');
  assert.equal(path.get(doc, 'metadata.labels.a?p'), 'web');
});

test('getString coerces like gjson', () => {
  assert.equal(path.getString(doc, 'spec.replicas'), '3');
  assert.equal(path.getString(doc, 'spec.on'), 'true');
  assert.equal(path.getString(doc, 'spec.missing'), '');
  assert.equal(path.getString(doc, 'spec.items.1'), '{"name":"two"}');
});

test('set creates objects and arrays', () => {
  const d = {};
  path.set(d, 'metadata.labels.app', 'web');
  path.set(d, 'spec.ports.1.port', 80);
  path.set(d, 'spec.args.-1', '--x');
  path.set(d, 'spec.args.-1', '--y');
  path.set(d, 'data.:1', 'key one');
  assert.deepEqual(d, {
    metadata: { labels: { app: 'web' } },
    spec: { ports: [null, { port: 80 }], args: ['--x', '--y'] },
    data: { 1: 'key one' },
  });
  const s = { spec: 'text' };
  path.set(s, 'spec.a', 1);
  assert.deepEqual(s, { spec: { a: 1 } });
});

test('write errors say why', () => {
  for (const [p, needle] of [['', 'empty'], ['a.*', 'wildcard'], ['a.#', "'#'"]]) {
    assert.throws(() => path.set({}, p, 1), (e) => e instanceof PathError && e.message.includes(needle), p);
  }
  assert.throws(() => path.set({ a: [1] }, 'a.x', 1), /numeric index or -1/);
});

test('del', () => {
  const d = { a: { b: 1, c: 2 }, l: [1, 2, 3] };
  assert.equal(path.del(d, 'a.b'), 1);
  assert.equal(path.del(d, 'l.-1'), 3);
  assert.equal(path.del(d, 'l.0'), 1);
  assert.equal(path.del(d, 'a.zzz'), undefined);
  assert.deepEqual(d, { a: { c: 2 }, l: [2] });
});
