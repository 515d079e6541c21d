// JavaScript SDK for syncweave Wasm plugins.
//
// Define a plugin with defineMutator/defineNamer/defineProjector/defineRenderer; the
// component entry module exports it with exportPlugin ('@syncweave/plugin/component'),
// and `testing` calls it locally with a context and config. Helpers: KubeObject (typed
// access to a Kubernetes object), `path` (gjson/sjson-style paths), `patch` (JSON merge
// patch and JSON patch), `config` (config checks that name the field) and `log` (the
// host's log).
export { Internal, InvalidConfig, InvalidInput, PluginError, Rejected } from './errors.js';
export { KubeObject } from './object.js';
export { defineMutator, defineNamer, defineProjector, defineRenderer, WORLDS } from './plugin.js';
export { Direction, fixtureContext } from './types.js';
export * as config from './config.js';
export * as log from './log.js';
export * as patch from './patch.js';
export * as path from './path.js';
export * as testing from './testing.js';

/** The SDK's version: always the version of the WIT package it implements. */
export const VERSION = '0.1.0';

/** The plugin contract (wit/plugin.wit) this SDK implements. */
export const WIT_PACKAGE = 'syncweave:plugin@0.1.0';
