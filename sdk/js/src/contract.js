// Which version of the plugin contract a plugin targets, and the checks that keep a
// plugin, its declarations and its build on the same one.
//
// A plugin targets contract 0.1 (wit/plugin.wit) unless its definition says otherwise:
//
//   export default defineMutator({
//     name: 'namespace-labels',
//     contract: '0.2',          // wit/v0.2/plugin.wit: reads, report, ctx.values
//     ...
//   });
//
// Its package.json says the same to `syncweave plugin build` ("syncweave": {"contract":
// "0.2"}), which then builds the component against the 0.2 world; exportPlugin refuses to
// build a plugin whose contract is not the world's. Using a 0.2 feature (declaring reads,
// examples with read fixtures or context values, calling `reads` or `report`) under 0.1 is
// an error that names the `contract` field.
import { Side } from './types.js';

/** The contract versions this SDK implements, oldest first. */
export const CONTRACTS = Object.freeze(['0.1', '0.2']);

/** What a plugin without a `contract` field targets (every plugin written before 0.2). */
export const DEFAULT = '0.1';

/** The WIT package of each contract version (wit/plugin.wit, wit/v0.2/plugin.wit). */
export const WIT_PACKAGES = Object.freeze({ '0.1': 'syncweave:plugin@0.1.0', '0.2': 'syncweave:plugin@0.2.0' });

/**
 * A plugin uses something its contract version does not have, or is built against
 * another version than the one it declares. The message names the field to set.
 */
export class ContractError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ContractError';
  }
}

/** '0.2' for '0.2' and '0.2.0'; a ContractError for anything else. */
export function normalize(version, where = 'contract') {
  if (typeof version === 'string') {
    let v = version.trim();
    if (/^\d+\.\d+\.0$/.test(v)) v = v.slice(0, -2);
    if (CONTRACTS.includes(v)) return v;
  }
  throw new ContractError(
    `${where}: ${JSON.stringify(version)} is not a contract version this SDK knows; use one of ${CONTRACTS.map((c) => `'${c}'`).join(', ')}`,
  );
}

const nameOf = (plugin) => `'${plugin?.name ?? '?'}'`;

/** The contract version `plugin` targets. */
export function contractOf(plugin) {
  return normalize(plugin?.contract ?? DEFAULT, `contract of plugin ${nameOf(plugin)}`);
}

/** The error for using `feature` (a 0.2 feature) in a plugin that targets 0.1. */
export function needs02(plugin, feature) {
  return new ContractError(
    `${feature} is a contract 0.2 feature, but plugin ${nameOf(plugin)} targets contract ${contractOf(plugin)}: ` +
      `set contract: '0.2' in its definition, and "contract": "0.2" in the "syncweave" section of package.json ` +
      'so that `syncweave plugin build` uses the 0.2 world (and import the host interfaces @0.2.0 in the entry module)',
  );
}

const SIDES = Object.values(Side);

/** `{group, version, resource}` as Resource.core(...) or new Resource(...) source text. */
export function resourceSource(r) {
  return r.group === '' ? `Resource.core('${r.version}', '${r.resource}')` : `new Resource('${r.group}', '${r.version}', '${r.resource}')`;
}

export const resourceKey = (side, r) => `${side} ${r.group}/${r.version}/${r.resource}`;

export function resourceText(r) {
  return r.group ? `${r.group}/${r.version}/${r.resource}` : `${r.version}/${r.resource}`;
}

function checkResource(r, where) {
  if (r === null || typeof r !== 'object' || typeof r.group !== 'string' || typeof r.version !== 'string' || typeof r.resource !== 'string') {
    throw new ContractError(`${where} must be a Resource (e.g. Resource.core('v1', 'namespaces')), not ${JSON.stringify(r)}`);
  }
}

/**
 * Checks that the plugin's declarations fit its contract version; returns the version.
 * Throws ContractError naming the field and the fix: an unknown `contract`, reads, read
 * fixtures or context values under 0.1, reads in a projector (its world imports no reads),
 * a read fixture for a resource the plugin does not declare.
 */
export function check(plugin) {
  const version = contractOf(plugin);
  const name = nameOf(plugin);
  const declared = plugin.reads ?? [];
  if (!Array.isArray(declared)) throw new ContractError(`reads of plugin ${name} must be an array of {side, resource, purpose}`);
  declared.forEach((d, i) => {
    const where = `reads[${i}] of plugin ${name}`;
    if (d === null || typeof d !== 'object') throw new ContractError(`${where} must be {side, resource, purpose}`);
    if (!SIDES.includes(d.side)) throw new ContractError(`${where}: side must be Side.KCP or Side.SERVICE, not ${JSON.stringify(d.side)}`);
    checkResource(d.resource, `${where}: resource`);
    if (typeof d.purpose !== 'string' || d.purpose.trim() === '') {
      throw new ContractError(`${where}: purpose must say why the plugin reads ${resourceText(d.resource)} (plugin inspect shows it to whoever allows the read)`);
    }
  });
  if (declared.length > 0 && version === '0.1') throw needs02(plugin, `declaring reads (reads of plugin ${name})`);
  if (declared.length > 0 && plugin.world === 'projector') {
    throw new ContractError(
      `plugin ${name} is a projector, which cannot read: the projector world imports no reads (a projection runs once per CRD, for no consumer); remove its reads`,
    );
  }
  const allowed = new Set(declared.map((d) => resourceKey(d.side, d.resource)));
  for (const ex of plugin.examples ?? []) {
    const fixtures = ex.reads ?? [];
    const values = ex.values ?? {};
    if ((fixtures.length > 0 || Object.keys(values).length > 0) && version === '0.1') {
      throw needs02(plugin, `${fixtures.length > 0 ? 'read fixtures' : 'context values'} in example '${ex.name}'`);
    }
    fixtures.forEach((f, i) => {
      const where = `example '${ex.name}': reads[${i}]`;
      if (f === null || typeof f !== 'object' || !SIDES.includes(f.side)) throw new ContractError(`${where} must be {side, resource, objects}`);
      checkResource(f.resource, `${where}: resource`);
      if (!allowed.has(resourceKey(f.side, f.resource))) {
        throw new ContractError(
          `example '${ex.name}' has a read fixture for ${resourceText(f.resource)} on ${f.side}, which plugin ${name} does not declare in reads; ` +
            `add { side: '${f.side}', resource: ${resourceSource(f.resource)}, purpose } to reads, or drop the fixture`,
        );
      }
    });
  }
  return version;
}
