// Contract 0.2: opting in, reads, the report, context values, describe(), the component
// exports and the harness's read fixtures.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  ContractError,
  Internal,
  InvalidInput,
  ReadError,
  ReadInvalid,
  ReadNotAllowed,
  ReadNotServed,
  ReadUnavailable,
  Resource,
  Side,
  defineMutator,
  defineNamer,
  defineProjector,
  defineRenderer,
  log,
  reads,
  report,
  selector,
  testing,
} from '../src/index.js';
import * as adapter from '../src/adapter.js';
import { checkWorld, exportPlugin } from '../src/component.js';
import { contract as worldContract } from '@syncweave/plugin/world';

const NAMESPACES = Resource.core('v1', 'namespaces');
const CONFIGMAPS = Resource.core('v1', 'configmaps');
const NS = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { team: 'a', env: 'prod' } } };
const nsFixture = (...objects) => [{ side: Side.KCP, resource: NAMESPACES, objects }];

const copyLabels = defineMutator({
  name: 'copy-labels',
  contract: '0.2',
  reads: [
    { side: Side.KCP, resource: NAMESPACES, purpose: "copies the Namespace's labels" },
    { side: Side.SERVICE, resource: CONFIGMAPS, purpose: "counts the tenant's config maps" },
  ],
  examples: [
    {
      name: 'copies',
      input: { metadata: { name: 'w', namespace: 'shop' } },
      expected: { metadata: { name: 'w', namespace: 'shop', labels: { team: 'a', env: 'prod', tenant: 't1' } } },
      reads: nsFixture(NS),
      values: { tenant: 't1' },
    },
  ],
  mutate(ctx, cfg, obj) {
    if (ctx.values.tenant !== undefined) obj.setLabel('tenant', ctx.values.tenant);
    const ns = reads.get(Side.KCP, NAMESPACES, obj.getNamespace());
    if (ns === null) {
      report.warning('NamespaceMissing', `namespace ${obj.getNamespace()} not found`);
      report.condition('LabelsCopied', false, 'NamespaceMissing', 'nothing copied');
      return obj;
    }
    for (const [k, v] of Object.entries(ns.labels())) obj.setLabel(k, v);
    report.normal('LabelsCopied', `${Object.keys(ns.labels()).length} labels`);
    report.condition('LabelsCopied', 'True', 'Copied');
    report.setContext('copied', Object.keys(ns.labels()).sort());
    return obj;
  },
});

const lister = defineMutator({
  name: 'lister',
  contract: '0.2',
  reads: [{ side: Side.SERVICE, resource: CONFIGMAPS, purpose: 'lists config maps' }],
  mutate(ctx, cfg, obj) {
    const found = reads.list(Side.SERVICE, CONFIGMAPS, { namespace: cfg?.namespace, labelSelector: cfg?.selector });
    obj.setAnnotation('found', found.map((o) => o.getName()).sort().join(','));
  },
});

const oldStyle = defineMutator({
  name: 'old-style',
  mutate(ctx, cfg, obj) {
    if (cfg === 'read') reads.get(Side.KCP, NAMESPACES, 'x');
    if (cfg === 'report') report.warning('Nope', 'no');
    return obj;
  },
});

const cm = (namespace, name, labels) => ({ metadata: { name, namespace, labels } });
const CMS = [cm('a', 'one', { app: 'db', tier: '1' }), cm('a', 'two', { app: 'web' }), cm('b', 'three', { app: 'db', tier: '3' })];

test('plugins target 0.1 unless they opt in', () => {
  assert.equal(oldStyle.contract, '0.1');
  assert.equal(copyLabels.contract, '0.2');
  assert.equal(defineMutator({ name: 'x', contract: '0.2.0', mutate() {} }).contract, '0.2');
  assert.throws(
    () => defineMutator({ name: 'x', contract: '0.3', mutate() {} }),
    (e) => e instanceof ContractError && e.message === `contract of plugin 'x': "0.3" is not a contract version this SDK knows; use one of '0.1', '0.2'`,
  );
});

test('0.1 plugins cannot use 0.2 features', () => {
  assert.throws(
    () => testing.mutate(oldStyle, {}, { config: 'read' }),
    (e) =>
      e instanceof Internal &&
      e.message.includes("reads.get is a contract 0.2 feature, but plugin 'old-style' targets contract 0.1") &&
      e.message.includes("set contract: '0.2' in its definition") &&
      e.message.includes('"contract": "0.2"'),
  );
  assert.throws(() => testing.mutate(oldStyle, {}, { config: 'report' }), /report.warning is a contract 0.2 feature/);
  assert.throws(() => testing.mutate(oldStyle, {}, { reads: nsFixture() }), (e) => e instanceof ContractError && /read fixtures is a contract 0.2 feature/.test(e.message));
  assert.throws(() => testing.mutate(oldStyle, {}, { ctxValues: { a: 1 } }), /context values \(ctx.values\) is a contract 0.2 feature/);
});

test('declarations are checked against the contract when the plugin is defined', () => {
  const decl = [{ side: Side.KCP, resource: NAMESPACES, purpose: 'x' }];
  assert.throws(() => defineMutator({ name: 'd', reads: decl, mutate() {} }), /declaring reads \(reads of plugin 'd'\) is a contract 0.2 feature/);
  assert.throws(
    () => defineMutator({ name: 'f', examples: [{ name: 'e', input: {}, values: { k: 1 } }], mutate() {} }),
    /context values in example 'e' is a contract 0.2 feature/,
  );
  assert.throws(() => defineProjector({ name: 'p', contract: '0.2', reads: decl, project: (c, crd) => crd }), /is a projector, which cannot read/);
  assert.throws(
    () =>
      defineMutator({
        name: 's',
        contract: '0.2',
        examples: [{ name: 'e', input: {}, reads: [{ side: Side.SERVICE, resource: CONFIGMAPS, objects: [] }] }],
        mutate() {},
      }),
    (e) =>
      e.message ===
      "example 'e' has a read fixture for v1/configmaps on service, which plugin 's' does not declare in reads; add { side: 'service', resource: Resource.core('v1', 'configmaps'), purpose } to reads, or drop the fixture",
  );
  assert.throws(() => defineMutator({ name: 'p', contract: '0.2', reads: [{ side: Side.KCP, resource: NAMESPACES, purpose: ' ' }], mutate() {} }), /purpose must say why/);
  assert.throws(() => defineMutator({ name: 'p', contract: '0.2', reads: [{ side: 'cluster', resource: NAMESPACES, purpose: 'x' }], mutate() {} }), /side must be Side.KCP/);
});

test('resources refuse what the host would', () => {
  assert.throws(() => Resource.core('v1', 'Namespace'), /looks like a kind/);
  assert.throws(() => new Resource('', 'apps/v1', 'deployments'), /Resource.of\('apps\/v1'/);
  assert.deepEqual(Resource.of('apps/v1', 'deployments'), new Resource('apps', 'v1', 'deployments'));
  assert.equal(String(Resource.of('v1', 'configmaps')), 'v1/configmaps');
});

test('get finds by namespace and name', () => {
  const { output } = testing.call(copyLabels, { metadata: { name: 'w', namespace: 'shop' } }, { reads: nsFixture(NS) });
  assert.deepEqual(output.metadata.labels, { team: 'a', env: 'prod' });
  // A Namespace is cluster-scoped: a fixture with a namespace is not found by a get without one.
  const namespaced = { ...NS, metadata: { ...NS.metadata, namespace: 'shop' } };
  const { report: r } = testing.call(copyLabels, { metadata: { name: 'w', namespace: 'shop' } }, { reads: nsFixture(namespaced) });
  assert.deepEqual(testing.warnings(r), [['NamespaceMissing', 'namespace shop not found']]);
});

test('list filters by namespace and label selector', () => {
  const found = (config) => testing.mutate(lister, {}, { config, reads: [{ side: Side.SERVICE, resource: CONFIGMAPS, objects: CMS }] }).metadata.annotations.found;
  assert.equal(found(null), 'one,three,two');
  assert.equal(found({ namespace: 'a' }), 'one,two');
  assert.equal(found({ selector: 'app=db' }), 'one,three');
  assert.equal(found({ selector: { app: 'db', tier: '3' } }), 'three');
  assert.equal(found({ selector: 'app in (db, web),tier notin (3)' }), 'one,two');
  assert.equal(found({ selector: '!tier' }), 'two');
  assert.equal(found({ selector: 'tier>1' }), 'three');
  assert.equal(found({ namespace: 'b', selector: 'app!=db' }), '');
});

test('read errors carry their kind and the read', () => {
  assert.throws(
    () => testing.mutate(lister, {}, { config: { selector: 'app in (db' }, reads: [{ side: Side.SERVICE, resource: CONFIGMAPS, objects: CMS }] }),
    (e) =>
      e instanceof ReadInvalid &&
      e.kind === 'invalid' &&
      e.tag === 'internal' &&
      e.message.startsWith('reads.list(service, v1/configmaps, labelSelector="app in (db"): invalid: label selector'),
  );
  const undeclared = defineMutator({ name: 'undeclared', contract: '0.2', mutate: () => void reads.get(Side.KCP, NAMESPACES, 'x') });
  assert.throws(
    () => testing.mutate(undeclared, {}),
    (e) =>
      e instanceof ReadNotAllowed &&
      e.message.includes("v1/namespaces on kcp is not declared in the reads of plugin 'undeclared'; add { side: 'kcp', resource: Resource.core('v1', 'namespaces'), purpose }"),
  );
  for (const err of [new ReadUnavailable('cache not synced'), new ReadNotServed('no such resource')]) {
    assert.throws(
      () => testing.mutate(copyLabels, { metadata: { name: 'w', namespace: 'shop' } }, { readErrors: [{ side: Side.KCP, resource: NAMESPACES, error: err }] }),
      (e) => e.constructor === err.constructor && e.detail === err.detail && e.read === 'reads.get(kcp, v1/namespaces, name="shop")',
    );
  }
});

test('a plugin can catch a read error', () => {
  const tolerant = defineMutator({
    name: 'tolerant',
    contract: '0.2',
    reads: [{ side: Side.KCP, resource: NAMESPACES, purpose: 'x' }],
    mutate(ctx, cfg, obj) {
      try {
        reads.get(Side.KCP, NAMESPACES, 'x');
      } catch (err) {
        if (!(err instanceof ReadError)) throw err;
        report.warning('ReadLater', err.kind);
      }
    },
  });
  const { report: r } = testing.call(tolerant, {}, { readErrors: [{ side: Side.KCP, resource: NAMESPACES, error: new ReadUnavailable('later') }] });
  assert.deepEqual(testing.warnings(r), [['ReadLater', 'unavailable']]);
});

test('fixtures cannot be changed by the plugin, and reads outside a call are refused', () => {
  const scribbler = defineMutator({
    name: 'scribbler',
    contract: '0.2',
    reads: [{ side: Side.KCP, resource: NAMESPACES, purpose: 'x' }],
    mutate(ctx, cfg, obj) {
      reads.get(Side.KCP, NAMESPACES, 'shop').setLabel('team', 'changed');
      obj.setLabel('team', reads.get(Side.KCP, NAMESPACES, 'shop').label('team'));
    },
  });
  assert.deepEqual(testing.mutate(scribbler, {}, { reads: nsFixture(NS) }).metadata.labels, { team: 'a' });
  assert.equal(NS.metadata.labels.team, 'a');
  assert.throws(() => reads.get(Side.KCP, NAMESPACES, 'x'), (e) => e instanceof ContractError && /outside a plugin call/.test(e.message));
  assert.throws(() => reads.get(Side.KCP, { group: '', version: 'v1', resource: 'namespaces' }, 'x'), /resource must be a Resource/);
});

test('the report of a call', () => {
  let { report: r } = testing.call(copyLabels, { metadata: { name: 'w', namespace: 'shop' } }, { reads: nsFixture(NS) });
  assert.deepEqual(r.results, [{ severity: 'normal', reason: 'LabelsCopied', message: '2 labels' }]);
  assert.deepEqual(testing.normals(r), [['LabelsCopied', '2 labels']]);
  assert.deepEqual(r.conditions, [{ type: 'LabelsCopied', status: 'True', reason: 'Copied', message: '' }]);
  assert.deepEqual(r.setContext, { copied: ['env', 'team'] });
  ({ report: r } = testing.call(copyLabels, { metadata: { name: 'w', namespace: 'gone' } }));
  assert.deepEqual(r.conditions, [{ type: 'LabelsCopied', status: 'False', reason: 'NamespaceMissing', message: 'nothing copied' }]);
  assert.deepEqual(adapter.reportRecord({ ...r, setContext: { k: { a: [1] } } }), {
    results: [{ severity: 'warning', reason: 'NamespaceMissing', message: 'namespace gone not found' }],
    conditions: [{ type: 'LabelsCopied', status: 'False', reason: 'NamespaceMissing', message: 'nothing copied' }],
    setContext: [{ key: 'k', value: '{"a":[1]}' }],
  });
});

test('report fields are checked', () => {
  const plugin = (body) => defineMutator({ name: 'p', contract: '0.2', mutate: (ctx) => void body(ctx) });
  const cases = [
    [() => report.warning('not camel', 'm'), `reason "not camel" is not a valid reason; use CamelCase`],
    [() => report.normal('', 'm'), `reason "" is not a valid reason`],
    [() => report.condition('Not Ready', 'True', 'R'), `type "Not Ready" is not a valid condition type`],
    [() => report.condition('Ready', 'True', 'R', 'm'.repeat(40000)), 'message is 40000 bytes'],
    [() => report.setContext('a key', 1), `key "a key" is not a valid context key`],
    [() => report.condition('Ready', 'yes', 'R'), `status "yes" must be one of`],
    [() => report.setContext('', 1), `key "" is not a valid context key`],
    [() => report.setContext('k', 1n), "context value 'k' is not JSON"],
    [() => report.setContext('tenant', 'again'), "context key 'tenant' was set by an earlier step"],
  ];
  for (const [body, needle] of cases) {
    assert.throws(() => testing.mutate(plugin(body), {}, { ctxValues: { tenant: 't' } }), (e) => e instanceof Internal && e.message.includes(needle), needle);
  }
  const twice = defineMutator({
    name: 'twice',
    contract: '0.2',
    mutate() {
      report.condition('Ready', 'Unknown', 'Checking');
      report.condition('Ready', true, 'Checked', 'ok');
    },
  });
  assert.deepEqual(testing.call(twice, {}).report.conditions, [{ type: 'Ready', status: 'True', reason: 'Checked', message: 'ok' }]);
});

test('reasons, types and keys follow the host rules, not only CamelCase; the harness applies the bounds', () => {
  const lenient = defineMutator({
    name: 'lenient',
    contract: '0.2',
    mutate() {
      report.warning('subnet_missing:v2', 'Kubernetes accepts this reason');
      report.condition('example.com/Ready', 'True', 'Ok');
      report.setContext('example.com/subnet', 's1');
    },
  });
  assert.equal(testing.call(lenient, {}).report.conditions[0].type, 'example.com/Ready');
  const plugin = (body) => defineMutator({ name: 'p', contract: '0.2', mutate: () => void body() });
  const many = () => {
    for (let i = 0; i < 33; i++) report.warning('W', String(i));
  };
  const big = () => report.setContext('k', 'x'.repeat(70000));
  for (const [body, needle] of [[many, "report.results has 33 entries, over the host's limit of 32"], [big, "over the host's limit of 65536 bytes"]]) {
    assert.throws(() => testing.call(plugin(body), {}), (e) => e.message.startsWith('the host rejects this report: ') && e.message.includes(needle), needle);
  }
});

test('context values reach the plugin through JSON', () => {
  const out = testing.mutate(copyLabels, { metadata: { name: 'w', namespace: 'gone' } }, { ctxValues: { tenant: 't9' } });
  assert.deepEqual(out.metadata.labels, { tenant: 't9' });
  assert.throws(() => testing.mutate(copyLabels, { metadata: { name: 'w', namespace: 'gone' } }, { ctxValues: { tenant: 1n } }), Internal);
  assert.deepEqual(adapter.contextValues([{ key: 'a', value: '{"b":1}' }, { key: 'c', value: '"d"' }]), { a: { b: 1 }, c: 'd' });
  assert.throws(() => adapter.contextValues([{ key: 'a', value: '{' }]), (e) => e instanceof InvalidInput && e.message.startsWith("context value 'a' is not valid JSON"));
});

test('describe() under 0.2 has reads, fixtures and values; under 0.1 it is unchanged', () => {
  const info = adapter.describe(copyLabels);
  assert.deepEqual(info.reads, [
    { side: 'kcp', resource: { group: '', version: 'v1', resource: 'namespaces' }, purpose: "copies the Namespace's labels" },
    { side: 'service', resource: { group: '', version: 'v1', resource: 'configmaps' }, purpose: "counts the tenant's config maps" },
  ]);
  const ex = info.examples[0];
  assert.equal(ex.config, 'null');
  assert.deepEqual(ex.values, [{ key: 'tenant', value: '"t1"' }]);
  assert.deepEqual(ex.reads, [
    { side: 'kcp', resource: { group: '', version: 'v1', resource: 'namespaces' }, objects: ['{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"team":"a","env":"prod"}}}'] },
  ]);
  assert.deepEqual(Object.keys(adapter.describe(oldStyle)).sort(), ['configSchema', 'description', 'examples', 'name', 'version']);
});

test('examples run with their fixtures and values', () => {
  assert.equal(testing.checkExamples(copyLabels), 1);
  const wrong = defineMutator({ ...copyLabels, examples: [{ ...copyLabels.examples[0], expected: { metadata: {} } }] });
  assert.throws(() => testing.checkExamples(wrong), /"tenant":"t1"/);
});

test('namers and renderers read and report; projectors cannot report', () => {
  const fromMap = defineNamer({
    name: 'from-map',
    contract: '0.2',
    reads: [{ side: Side.SERVICE, resource: CONFIGMAPS, purpose: 'the name map' }],
    nameObject(ctx, cfg, obj) {
      const map = reads.get(Side.SERVICE, CONFIGMAPS, 'names', { namespace: 'sys' });
      report.normal('Named', 'from the map');
      return { name: map.data[obj.getName()], namespace: 'tenant' };
    },
  });
  const { output, report: r } = testing.call(fromMap, { metadata: { name: 'a' } }, {
    reads: [{ side: Side.SERVICE, resource: CONFIGMAPS, objects: [{ metadata: { name: 'names', namespace: 'sys' }, data: { a: 'z' } }] }],
  });
  assert.deepEqual(output, { name: 'z', namespace: 'tenant' });
  assert.deepEqual(testing.normals(r), [['Named', 'from the map']]);

  const teams = defineRenderer({
    name: 'teams',
    contract: '0.2',
    reads: [{ side: Side.KCP, resource: NAMESPACES, purpose: 'one object per namespace' }],
    render() {
      report.setContext('count', 1);
      return reads.list(Side.KCP, NAMESPACES).map((ns) => ({ kind: 'Team', metadata: { name: ns.getName() } }));
    },
  });
  const rendered = testing.call(teams, {}, { reads: nsFixture(NS) });
  assert.deepEqual(rendered.output, [{ kind: 'Team', metadata: { name: 'shop' } }]);
  assert.deepEqual(rendered.report.setContext, { count: 1 });

  const reporting = defineProjector({ name: 'reporting', contract: '0.2', project: (cfg, crd) => (report.warning('X', 'y'), crd) });
  assert.throws(() => testing.project(reporting, {}), (e) => e instanceof Internal && /a projector cannot report/.test(e.message));
});

test('label selectors parse and match like Kubernetes', () => {
  for (const [bad, needle] of [
    ['a in ()', 'needs at least one value'],
    ['a=b,,c', 'empty requirement'],
    ['a in (b', "unbalanced '('"],
    ['-a=b', 'not a valid label key'],
    ['a=b c', 'is not one of'],
  ]) {
    assert.throws(() => selector.parse(bad), (e) => e instanceof selector.SelectorError && e.message.includes(needle), bad);
  }
  const labels = { app: 'db', n: '5', 'example.com/x': '' };
  for (const [sel, want] of [
    ['', true], ['app', true], ['!app', false], ['app==db', true], ['app!=db', false], ['missing!=x', true],
    ['app notin (web)', true], ['n>4', true], ['n<5', false], ['example.com/x=', true], ['app=db,n>9', false],
  ]) {
    assert.equal(selector.matches(sel, labels), want, sel);
  }
});

// --- the component exports -----------------------------------------------------------

/** What componentize-js's bindings throw for an imported function's err result. */
class ComponentError extends Error {
  constructor(value) {
    super(`${String(value)} (see error.payload)`);
    Object.defineProperty(this, 'payload', { value, enumerable: true });
  }
}

test('outside a build the world is unknown; a build states it', () => {
  assert.equal(worldContract, undefined);
  assert.equal(checkWorld(copyLabels, undefined), '0.2');
  assert.equal(checkWorld(copyLabels, '0.2'), '0.2');
  assert.throws(
    () => checkWorld(copyLabels, '0.1'),
    (e) =>
      e instanceof ContractError &&
      e.message.startsWith("plugin 'copy-labels' targets contract 0.2 (its contract field) but this component is being built against syncweave:plugin@0.1.0") &&
      e.message.includes('set "contract": "0.2" in the "syncweave" section of package.json'),
  );
  assert.throws(() => checkWorld(oldStyle, '0.2'), /set contract: '0.2' in the plugin's definition/);
});

test('the entry module must pass what the contract imports', () => {
  assert.throws(() => exportPlugin(copyLabels, () => {}), /targets contract 0.2, but the entry module passes no reads: import \* as reads from 'syncweave:plugin\/reads@0.2.0'/);
  assert.throws(() => exportPlugin(oldStyle, { log() {}, reads: {} }), /targets contract 0.1, but the entry module passes reads/);
});

test('0.2 component exports: reads through the host, reports out, values in', (t) => {
  t.after(() => log.installSink(null));
  const calls = [];
  const lines = [];
  const hostReads = {
    get(side, resource, namespace, name) {
      calls.push([side, resource, namespace, name]);
      if (name === 'down') throw new ComponentError({ tag: 'unavailable', val: 'cache not synced' });
      return name === 'shop' ? '{"metadata":{"name":"shop","labels":{"team":"a"}}}' : undefined;
    },
    list() {
      return [];
    },
  };
  const exported = exportPlugin(copyLabels, { log: (level, message) => lines.push([level, message]), reads: hostReads });
  const ctx = (values = []) => ({ clusterName: 'c', clusterPath: undefined, direction: 'kcp-to-service', owner: 'o', values });
  const out = exported.mutation.mutate(ctx([{ key: 'tenant', value: '"t1"' }]), 'null', '{"metadata":{"name":"w","namespace":"shop"}}', undefined);
  assert.deepEqual(calls, [['kcp', { group: '', version: 'v1', resource: 'namespaces' }, undefined, 'shop']]);
  assert.equal(out.object, '{"metadata":{"name":"w","namespace":"shop","labels":{"tenant":"t1","team":"a"}}}');
  assert.deepEqual(out.report, {
    results: [{ severity: 'normal', reason: 'LabelsCopied', message: '1 labels' }],
    conditions: [{ type: 'LabelsCopied', status: 'True', reason: 'Copied', message: '' }],
    setContext: [{ key: 'copied', value: '["team"]' }],
  });
  const missing = exported.mutation.mutate(ctx(), 'null', '{"metadata":{"name":"w","namespace":"gone"}}');
  assert.deepEqual(missing.report.results, [{ severity: 'warning', reason: 'NamespaceMissing', message: 'namespace gone not found' }]);
  assert.throws(
    () => exported.mutation.mutate(ctx(), 'null', '{"metadata":{"name":"w","namespace":"down"}}'),
    (e) => e.tag === 'internal' && e.val === 'reads.get(kcp, v1/namespaces, name="down"): unavailable: cache not synced',
  );
  assert.throws(() => exported.mutation.mutate(ctx([{ key: 'tenant', value: '{' }]), 'null', '{}'), (e) => e.tag === 'invalid-input');
  const info = exported.meta.describe();
  assert.equal(info.reads.length, 2);
  assert.deepEqual(info.examples[0].values, [{ key: 'tenant', value: '"t1"' }]);

  const namer = defineNamer({
    name: 'n',
    contract: '0.2',
    nameObject: (c, cfg, obj) => (report.normal('Named', 'ok'), { name: `x-${obj.getName()}` }),
  });
  const named = exportPlugin(namer, { log() {}, reads: hostReads }).naming.name(ctx(), 'null', '{"metadata":{"name":"a"}}');
  assert.deepEqual(named, { name: { name: 'x-a', namespace: undefined }, report: { results: [{ severity: 'normal', reason: 'Named', message: 'ok' }], conditions: [], setContext: [] } });
  const renderer = defineRenderer({ name: 'r', contract: '0.2', render: (c, cfg, t, v) => [{ kind: v.kind }] });
  assert.deepEqual(exportPlugin(renderer, { log() {}, reads: hostReads }).rendering.render(ctx(), 'null', '', '{"kind":"K"}'), {
    documents: ['{"kind":"K"}'],
    report: { results: [], conditions: [], setContext: [] },
  });
  const projector = defineProjector({ name: 'p', contract: '0.2', project: (cfg, crd) => crd });
  const projection = exportPlugin(projector, { log() {} });
  assert.equal(projection.projection.project('null', '{"a":1}'), '{"a":1}');
  assert.deepEqual(projection.meta.describe().reads, []);
});
