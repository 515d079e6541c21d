// JavaScript SDK for syncweave Wasm plugins.
//
// Define a plugin with defineMutator/defineNamer/defineProjector/defineRenderer; the
// component entry module exports it with exportPlugin ('@syncweave/plugin/component'),
// and `testing` calls it locally with a context and config. Helpers: KubeObject (typed
// access to a Kubernetes object), `path` (gjson/sjson-style paths), `patch` (JSON merge
// patch and JSON patch), `config` (config checks that name the field) and `log` (the
// host's log).
//
// Contract 0.2 (opt in with contract: '0.2' in the definition, see contract.js) adds
// `reads` (get and list other objects), `report` (Events, conditions, context values for
// later steps) and ctx.values.
export {
  Internal,
  InvalidConfig,
  InvalidInput,
  PluginError,
  ReadError,
  ReadInvalid,
  ReadNotAllowed,
  ReadNotServed,
  ReadUnavailable,
  Rejected,
} from './errors.js';
export { CONTRACTS, ContractError, WIT_PACKAGES } from './contract.js';
export { KubeObject } from './object.js';
export { defineMutator, defineNamer, defineProjector, defineRenderer, WORLDS } from './plugin.js';
export { Direction, Resource, Severity, Side, fixtureContext } from './types.js';
export * as config from './config.js';
export * as log from './log.js';
export * as patch from './patch.js';
export * as path from './path.js';
export * as reads from './reads.js';
export * as report from './report.js';
export * as selector from './selector.js';
export * as testing from './testing.js';

/**
 * The SDK's version: the version of wit/plugin.wit, the contract plugins target by
 * default. The SDK implements every version in CONTRACTS.
 */
export const VERSION = '0.1.0';

/** The default plugin contract (wit/plugin.wit); WIT_PACKAGES has each version this SDK implements. */
export const WIT_PACKAGE = 'syncweave:plugin@0.1.0';
