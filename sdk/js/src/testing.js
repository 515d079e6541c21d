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
// Calls run in fixtureContext() unless `ctx` is given. `config` is a JSON value
// (undefined/null = no config, as the host passes it); `configText` passes raw text
// instead. Failures throw the plugin's PluginError, as the host would classify them.
import * as adapter from './adapter.js';
import { PluginError } from './errors.js';
import { jsonEqual } from './patch.js';
import { fixtureContext } from './types.js';

const configText = (opts) => (opts.configText !== undefined ? opts.configText : adapter.toJson(opts.config ?? null, 'config'));

/** Runs the plugin's validate-config; throws InvalidConfig when it refuses. */
export function validateConfig(plugin, config, { configText: text } = {}) {
  adapter.validateConfig(plugin, text !== undefined ? text : adapter.toJson(config ?? null, 'config'));
}

function identity(obj) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return {};
  const md = obj.metadata !== null && typeof obj.metadata === 'object' ? obj.metadata : {};
  return { apiVersion: obj.apiVersion, kind: obj.kind, 'metadata.name': md.name, 'metadata.namespace': md.namespace };
}

/**
 * Calls mutate and returns the new object (a plain object). Like the host, fails when the
 * mutator changed apiVersion, kind, metadata.name or metadata.namespace.
 * @param {object} plugin
 * @param {unknown} obj
 * @param {{config?: unknown, configText?: string, objectText?: string, other?: unknown, ctx?: object}} [opts]
 */
export function mutate(plugin, obj, opts = {}) {
  const text = opts.objectText !== undefined ? opts.objectText : adapter.toJson(obj, 'object');
  const other = opts.other === undefined ? undefined : adapter.toJson(opts.other, 'other object');
  const out = JSON.parse(adapter.mutate(plugin, opts.ctx ?? fixtureContext(), configText(opts), text, other));
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
  return out;
}

/** Calls the namer and returns {name, namespace}. */
export function name(plugin, obj, opts = {}) {
  const text = opts.objectText !== undefined ? opts.objectText : adapter.toJson(obj, 'object');
  return adapter.name(plugin, opts.ctx ?? fixtureContext(), configText(opts), text);
}

/** Calls project and returns the projected CRD. */
export function project(plugin, crd, opts = {}) {
  return JSON.parse(adapter.project(plugin, configText(opts), adapter.toJson(crd, 'CRD')));
}

/** Calls render and returns the rendered objects. */
export function render(plugin, values, opts = {}) {
  const docs = adapter.render(plugin, opts.ctx ?? fixtureContext(), configText(opts), opts.template ?? '', adapter.toJson(values, 'values'));
  return docs.map((d) => JSON.parse(d));
}

/**
 * The output of one example, run as `syncweave plugin test --examples` runs it
 * (renderers get an empty template: their examples carry the template in the config).
 */
export function runExample(plugin, example) {
  const text = adapter.toJson(example.config ?? null, 'config');
  validateConfig(plugin, undefined, { configText: text });
  const opts = { configText: text, ctx: fixtureContext() };
  switch (plugin.world) {
    case 'mutator':
      return mutate(plugin, example.input, opts);
    case 'namer': {
      const n = name(plugin, example.input, opts);
      return n.namespace === undefined ? { name: n.name } : { name: n.name, namespace: n.namespace };
    }
    case 'projector':
      return project(plugin, example.input, opts);
    case 'renderer':
      return render(plugin, example.input, opts);
    default:
      throw new TypeError('not a plugin made with defineMutator, defineNamer, defineProjector or defineRenderer');
  }
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
