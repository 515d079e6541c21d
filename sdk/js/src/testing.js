// A local test harness: call a plugin in-process, through the same JSON-text adapters its
// component exports use, and check its worked examples.
//
//   import { test } from 'node:test';
//   import assert from 'node:assert/strict';
//   import { testing } from '@syncweave/plugin';
//   import plugin from '../plugin.js';
//
//   test('examples hold', () => assert.equal(testing.checkExamples(plugin), 1));
//   test('sets the label', () => {
//     const out = testing.mutate(plugin, { metadata: { name: 'a' } }, { config: { team: 'x' } });
//     assert.deepEqual(out.metadata.labels, { team: 'x' });
//   });
//
// Contract 0.2 plugins get read fixtures and context values, and their report comes back
// from call():
//
//   const NAMESPACES = Resource.core('v1', 'namespaces');
//   test('copies the namespace labels', () => {
//     const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns1', labels: { team: 'a' } } };
//     const { output, report } = testing.call(plugin, { metadata: { name: 'x', namespace: 'ns1' } }, {
//       reads: [{ side: Side.KCP, resource: NAMESPACES, objects: [ns] }],
//       ctxValues: { tenant: 't1' },
//     });
//     assert.deepEqual(output.metadata.labels, { team: 'a' });
//     assert.deepEqual(testing.warnings(report), []);
//   });
//
// A read of a declared resource without a fixture sees no objects; a read the plugin does
// not declare throws ReadNotAllowed, as on the host; `readErrors: [{side, resource, error:
// new ReadUnavailable('...')}]` makes reads of a resource fail.
//
// Calls run in fixtureContext() unless `ctx` is given. `config` is a JSON value
// (undefined/null = no config, as the host passes it); `configText` passes raw text
// instead. Failures throw the plugin's PluginError, as the host would classify them.
import * as adapter from './adapter.js';
import { check, contractOf, needs02, resourceKey, resourceSource, resourceText, ContractError } from './contract.js';
import { PluginError, ReadError, ReadInvalid, ReadNotAllowed } from './errors.js';
import { jsonEqual } from './patch.js';
import { checkBounds } from './report.js';
import { SelectorError, matches, parse } from './selector.js';
import { fixtureContext } from './types.js';

const configText = (opts) => (opts.configText !== undefined ? opts.configText : adapter.toJson(opts.config ?? null, 'config'));

/**
 * Answers reads from read fixtures, as the host would from its caches: only declared
 * resources, get by namespace and name, list by namespace and label selector. Objects are
 * copied through JSON, so a plugin cannot change a fixture.
 */
export class FixtureReads {
  /**
   * @param {object} plugin
   * @param {import('./types.js').ReadFixture[]} [fixtures]
   * @param {{side: string, resource: object, error: ReadError}[]} [errors]
   */
  constructor(plugin, fixtures = [], errors = []) {
    this.plugin = plugin;
    this.declared = new Set((plugin.reads ?? []).map((d) => resourceKey(d.side, d.resource)));
    this.objects = new Map();
    fixtures.forEach((f, i) => {
      if (f === null || typeof f !== 'object' || !f.resource) throw new TypeError(`reads[${i}] must be {side, resource, objects}`);
      const key = resourceKey(f.side, f.resource);
      const texts = (f.objects ?? []).map((o) => adapter.toJson(o, `read fixture object for ${resourceText(f.resource)}`));
      this.objects.set(key, [...(this.objects.get(key) ?? []), ...texts]);
    });
    this.errors = new Map();
    for (const e of errors) {
      if (!(e?.error instanceof ReadError)) throw new TypeError("readErrors entries must be {side, resource, error: new ReadUnavailable('...')}");
      this.errors.set(resourceKey(e.side, e.resource), e.error);
    }
  }

  check(side, resource) {
    const key = resourceKey(side, resource);
    if (!this.declared.has(key)) {
      throw new ReadNotAllowed(
        `${resourceText(resource)} on ${side} is not declared in the reads of plugin '${this.plugin.name}'; ` +
          `add { side: '${side}', resource: ${resourceSource(resource)}, purpose } to them`,
      );
    }
    const error = this.errors.get(key);
    if (error) throw error;
    return this.objects.get(key) ?? [];
  }

  static metadata(text) {
    const md = JSON.parse(text).metadata;
    return md !== null && typeof md === 'object' ? md : {};
  }

  get(side, resource, namespace, name) {
    for (const text of this.check(side, resource)) {
      const md = FixtureReads.metadata(text);
      if (md.name === name && (md.namespace ?? undefined) === (namespace ?? undefined)) return text;
    }
    return undefined;
  }

  list(side, resource, namespace, labelSelector) {
    const objects = this.check(side, resource);
    let requirements;
    try {
      requirements = parse(labelSelector);
    } catch (err) {
      if (err instanceof SelectorError) throw new ReadInvalid(err.message);
      throw err;
    }
    return objects.filter((text) => {
      const md = FixtureReads.metadata(text);
      if (namespace !== undefined && namespace !== null && md.namespace !== namespace) return false;
      const labels = md.labels !== null && typeof md.labels === 'object' ? md.labels : {};
      return matches(requirements, labels);
    });
  }
}

/** The call's context; context values go through JSON text, as the host passes them. */
function context(opts) {
  const ctx = opts.ctx ?? fixtureContext();
  const values = opts.ctxValues ?? ctx.values ?? {};
  const entries = Object.entries(values).map(([key, v]) => ({ key, value: adapter.toJson(v, `context value '${key}'`) }));
  return { ...ctx, values: adapter.contextValues(entries) };
}

function readsFor(plugin, opts) {
  const fixtures = opts.reads ?? [];
  const errors = opts.readErrors ?? [];
  if (contractOf(plugin) === '0.1') {
    if (fixtures.length > 0 || errors.length > 0) throw needs02(plugin, 'read fixtures');
    return null;
  }
  return new FixtureReads(plugin, fixtures, errors);
}

/** The host fails a call whose report is over its bounds; so does the harness. */
function bounded(result) {
  try {
    checkBounds(result.report);
  } catch (err) {
    throw new Error(`the host rejects this report: ${err.message}`);
  }
  return result;
}

/** Runs the plugin's validate-config; throws InvalidConfig when it refuses. */
export function validateConfig(plugin, config, { configText: text } = {}) {
  adapter.validateConfig(plugin, text !== undefined ? text : adapter.toJson(config ?? null, 'config'));
}

function identity(obj) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return {};
  const md = obj.metadata !== null && typeof obj.metadata === 'object' ? obj.metadata : {};
  return { apiVersion: obj.apiVersion, kind: obj.kind, 'metadata.name': md.name, 'metadata.namespace': md.namespace };
}

function callMutate(plugin, obj, opts) {
  const text = opts.objectText !== undefined ? opts.objectText : adapter.toJson(obj, 'object');
  const other = opts.other === undefined ? undefined : adapter.toJson(opts.other, 'other object');
  const { output, report } = adapter.mutate(plugin, context(opts), configText(opts), text, other, readsFor(plugin, opts));
  const out = JSON.parse(output);
  let before = {};
  try {
    before = identity(JSON.parse(text));
  } catch {
    // Not JSON: the adapter has already refused it.
  }
  const after = identity(out);
  for (const [field, was] of Object.entries(before)) {
    if (after[field] !== was) {
      throw new Error(
        `the mutator changed ${field} from ${JSON.stringify(was)} to ${JSON.stringify(after[field])}; the host rejects this ` +
          '(mutators may not change apiVersion, kind, metadata.name or metadata.namespace)',
      );
    }
  }
  return bounded({ output: out, report });
}

function callName(plugin, obj, opts) {
  const text = opts.objectText !== undefined ? opts.objectText : adapter.toJson(obj, 'object');
  return bounded(adapter.name(plugin, context(opts), configText(opts), text, readsFor(plugin, opts)));
}

function callRender(plugin, values, opts) {
  const { output, report } = adapter.render(plugin, context(opts), configText(opts), opts.template ?? '', adapter.toJson(values, 'values'), readsFor(plugin, opts));
  return bounded({ output: output.map((d) => JSON.parse(d)), report });
}

/**
 * @typedef {object} CallOptions
 * @property {unknown} [config] the plugin's config, a JSON value
 * @property {string} [configText] the config as raw text instead
 * @property {string} [objectText] the object as raw text (mutators, namers)
 * @property {unknown} [other] the counterpart object (mutators)
 * @property {string} [template] the template (renderers)
 * @property {object} [ctx] the context; default fixtureContext()
 * @property {import('./types.js').ReadFixture[]} [reads] contract 0.2: what reads see
 * @property {{side: string, resource: object, error: ReadError}[]} [readErrors] contract 0.2: reads that fail
 * @property {Record<string, unknown>} [ctxValues] contract 0.2: context values from earlier steps
 */

/**
 * Calls mutate and returns the new object (a plain object). Like the host, fails when the
 * mutator changed apiVersion, kind, metadata.name or metadata.namespace. call() returns
 * the report too.
 * @param {object} plugin
 * @param {unknown} obj
 * @param {CallOptions} [opts]
 */
export function mutate(plugin, obj, opts = {}) {
  return callMutate(plugin, obj, opts).output;
}

/** Calls the namer and returns {name, namespace}. */
export function name(plugin, obj, opts = {}) {
  return callName(plugin, obj, opts).output;
}

/** Calls project and returns the projected CRD. */
export function project(plugin, crd, opts = {}) {
  return JSON.parse(adapter.project(plugin, configText(opts), adapter.toJson(crd, 'CRD')).output);
}

/** Calls render and returns the rendered objects. */
export function render(plugin, values, opts = {}) {
  return callRender(plugin, values, opts).output;
}

/**
 * Calls the plugin's role function with `input` (the object, the CRD or the template's
 * values) and returns `{output, report}`, for assertions on the report's results,
 * conditions and setContext.
 * @param {object} plugin
 * @param {unknown} input
 * @param {CallOptions} [opts]
 * @returns {{output: any, report: import('./types.js').Report}}
 */
export function call(plugin, input, opts = {}) {
  switch (plugin?.world) {
    case 'mutator':
      return callMutate(plugin, input, opts);
    case 'namer':
      return callName(plugin, input, opts);
    case 'projector':
      if (opts.reads || opts.readErrors || opts.ctxValues) throw new ContractError(`plugin '${plugin.name}' is a projector: it has no reads and no context values`);
      return { output: project(plugin, input, opts), report: { results: [], conditions: [], setContext: {} } };
    case 'renderer':
      return callRender(plugin, input, opts);
    default:
      throw new TypeError('not a plugin made with defineMutator, defineNamer, defineProjector or defineRenderer');
  }
}

/** [reason, message] of every warning of a report, in order. */
export const warnings = (report) => report.results.filter((r) => r.severity === 'warning').map((r) => [r.reason, r.message]);

/** [reason, message] of every normal result of a report, in order. */
export const normals = (report) => report.results.filter((r) => r.severity === 'normal').map((r) => [r.reason, r.message]);

/**
 * The output of one example, run as `syncweave plugin test --examples` runs it
 * (renderers get an empty template: their examples carry the template in the config;
 * contract 0.2 examples see their read fixtures and context values).
 */
export function runExample(plugin, example) {
  check(plugin);
  const text = adapter.toJson(example.config ?? null, 'config');
  validateConfig(plugin, undefined, { configText: text });
  const opts = { configText: text, ctx: fixtureContext() };
  if (example.reads?.length) opts.reads = example.reads;
  if (example.values && Object.keys(example.values).length > 0) opts.ctxValues = example.values;
  const { output } = call(plugin, example.input, opts);
  if (plugin.world === 'namer') return output.namespace === undefined ? { name: output.name } : { name: output.name, namespace: output.namespace };
  return output;
}

/**
 * Runs every example in plugin.examples and compares its output with the expected one
 * (as JSON: key order does not matter). Returns how many ran; throws an Error naming the
 * first example that fails, and why.
 */
export function checkExamples(plugin) {
  const examples = plugin.examples ?? [];
  if (examples.length === 0) throw new Error(`${plugin.name} publishes no examples`);
  for (const ex of examples) {
    let got;
    try {
      got = runExample(plugin, ex);
    } catch (err) {
      if (err instanceof PluginError) throw new Error(`example '${ex.name}' failed: ${err.tag}: ${err.message}`);
      throw err;
    }
    if (ex.expected !== undefined && ex.expected !== null && !jsonEqual(got, ex.expected)) {
      throw new Error(`example '${ex.name}':\n  expected ${JSON.stringify(ex.expected)}\n  got      ${JSON.stringify(got)}`);
    }
  }
  return examples.length;
}
