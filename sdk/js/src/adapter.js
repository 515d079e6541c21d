// String-level adapters: JSON text in, role function call, JSON text out, errors typed.
//
// The component exports (component.js) and the local harness (testing.js) both go
// through these functions, so a unit test exercises exactly what the host calls. Not
// needed in plugin code.
//
// Every role function checks the plugin against its contract version (contract.check),
// opens the call that `reads` and `report` use, and returns {output, report}; under
// contract 0.1 the report is always empty.
import { emptyReport, withCall } from './call.js';
import { ContractError, check, needs02 } from './contract.js';
import { Internal, InvalidConfig, InvalidInput, PluginError } from './errors.js';
import { KubeObject } from './object.js';

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Compact JSON text, as the host expects it. */
export function toJson(value, what = 'output') {
  let text;
  try {
    text = JSON.stringify(value, (_k, v) => {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`${v} is not a JSON number`);
      if (typeof v === 'bigint') throw new Error('a BigInt is not a JSON value');
      return v;
    });
  } catch (err) {
    throw new Internal(`the ${what} is not JSON: ${err.message}`);
  }
  if (text === undefined) throw new Internal(`the ${what} is not JSON: ${typeof value}`);
  return text;
}

/** An absent config arrives as `null` or an empty string: both are null. */
export function parseConfig(text) {
  if (text === undefined || text === null || text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InvalidConfig(`the config is not valid JSON: ${err.message}`);
  }
}

function parseInput(what, text) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InvalidInput(`the ${what} is not valid JSON: ${err.message}`);
  }
}

function parseObject(what, text) {
  const value = parseInput(what, text);
  if (!isObject(value)) throw new InvalidInput(`the ${what} must be a JSON object`);
  return KubeObject.from(value);
}

/** Typed errors pass through; anything else is a plugin bug, reported as internal. */
function guard(call) {
  try {
    return call();
  } catch (err) {
    if (err instanceof PluginError) throw err;
    if (err instanceof ContractError) throw new Internal(err.message);
    if (err instanceof Error) {
      const where = (err.stack ?? '').split('\n').find((l) => l.trim() !== '' && !l.includes(err.message));
      throw new Internal(`${err.name}: ${err.message}${where ? ` (at ${where.trim().replace(/^at /, '')})` : ''}`);
    }
    throw new Internal(`uncaught ${typeof err}: ${String(err)}`);
  }
}

const resourceRecord = (r) => ({ group: r.group, version: r.version, resource: r.resource });

/**
 * describe() with the JSON fields serialised (camelCase, as componentize-js wants). Under
 * contract 0.2 it has the plugin's reads and each example's read fixtures and context
 * values too.
 */
export function describe(plugin) {
  const version = check(plugin);
  const info = {
    name: plugin.name,
    version: plugin.version,
    description: plugin.description,
    configSchema: plugin.configSchema === undefined || plugin.configSchema === null ? undefined : toJson(plugin.configSchema, 'config schema'),
    examples: (plugin.examples ?? []).map((ex) => {
      const example = {
        name: ex.name,
        config: toJson(ex.config ?? null, `config of example '${ex.name}'`),
        input: toJson(ex.input ?? null, `input of example '${ex.name}'`),
        expected: ex.expected === undefined || ex.expected === null ? undefined : toJson(ex.expected, `expected output of example '${ex.name}'`),
      };
      if (version !== '0.1') {
        example.reads = (ex.reads ?? []).map((f) => ({
          side: f.side,
          resource: resourceRecord(f.resource),
          objects: (f.objects ?? []).map((o) => toJson(o, `read fixture object of example '${ex.name}'`)),
        }));
        example.values = Object.entries(ex.values ?? {}).map(([key, v]) => ({ key, value: toJson(v, `context value '${key}' of example '${ex.name}'`) }));
      }
      return example;
    }),
  };
  if (version !== '0.1') {
    info.reads = (plugin.reads ?? []).map((d) => ({ side: d.side, resource: resourceRecord(d.resource), purpose: d.purpose }));
  }
  return info;
}

/** The contract's context.values ([{key, value: JSON text}]) as JSON values by key. */
export function contextValues(entries) {
  const values = {};
  for (const { key, value } of entries ?? []) {
    try {
      values[key] = JSON.parse(value);
    } catch (err) {
      throw new InvalidInput(`context value '${key}' is not valid JSON: ${err.message}`);
    }
  }
  return Object.freeze(values);
}

/** The contract's report record, as componentize-js wants it (setContext as JSON text). */
export function reportRecord(report) {
  return {
    results: report.results.map((r) => ({ ...r })),
    conditions: report.conditions.map((c) => ({ ...c })),
    setContext: Object.entries(report.setContext).map(([key, v]) => ({ key, value: toJson(v, `context value '${key}'`) })),
  };
}

/** Throws InvalidConfig (or another PluginError) when the config is unusable. */
export function validateConfig(plugin, config) {
  guard(() => {
    check(plugin);
    plugin.validateConfig(parseConfig(config));
  });
}

const config = (plugin, text) => plugin.parseConfig(parseConfig(text));

/** One role call: contract checked, the call opened for reads and report, typed errors out. */
function callPlugin(plugin, ctx, reads, run) {
  let report;
  const output = guard(() => {
    const version = check(plugin);
    const given = ctx?.values ?? {};
    if (version === '0.1' && Object.keys(given).length > 0) throw needs02(plugin, 'context values (ctx.values)');
    const call = { plugin, contract: version, values: version === '0.1' ? {} : given, reads: reads ?? null, report: emptyReport() };
    const out = withCall(call, run);
    reportRecord(call.report); // every context value must be JSON before it leaves
    report = call.report;
    return out;
  });
  return { output, report };
}

export function mutate(plugin, ctx, configText, object, other, reads) {
  return callPlugin(plugin, ctx, reads, () => {
    const cfg = config(plugin, configText);
    const obj = parseObject('object', object);
    const oth = other === undefined || other === null ? undefined : parseObject('other object', other);
    let result = plugin.mutate(ctx, cfg, obj, oth);
    if (result === undefined) result = obj;
    if (!isObject(result)) throw new Internal(`mutate returned ${Array.isArray(result) ? 'an array' : typeof result}, not an object`);
    return toJson(result, 'mutated object');
  });
}

export function name(plugin, ctx, configText, object, reads) {
  return callPlugin(plugin, ctx, reads, () => {
    const cfg = config(plugin, configText);
    const obj = parseObject('object', object);
    const result = plugin.nameObject(ctx, cfg, obj);
    if (!isObject(result) || typeof result.name !== 'string') {
      throw new Internal('nameObject must return {name: string, namespace?: string}');
    }
    if (result.namespace !== undefined && result.namespace !== null && typeof result.namespace !== 'string') {
      throw new Internal('nameObject returned a namespace that is not a string');
    }
    return { name: result.name, namespace: result.namespace ?? undefined };
  });
}

/** The report is always empty: a projection reports nothing (and reads nothing). */
export function project(plugin, configText, crd) {
  return callPlugin(plugin, undefined, null, () => {
    const cfg = config(plugin, configText);
    const c = parseInput('CRD', crd);
    if (!isObject(c)) throw new InvalidInput('the CRD must be a JSON object');
    const result = plugin.project(cfg, c);
    if (!isObject(result)) throw new Internal(`project returned ${typeof result}, not an object`);
    return toJson(result, 'projected CRD');
  });
}

export function render(plugin, ctx, configText, template, values, reads) {
  return callPlugin(plugin, ctx, reads, () => {
    const cfg = config(plugin, configText);
    const v = parseInput('values', values);
    const result = plugin.render(ctx, cfg, template, v);
    if (!Array.isArray(result)) throw new Internal(`render returned ${typeof result}, not a list of objects`);
    return result.map((doc, i) => toJson(doc, `rendered document ${i}`));
  });
}
