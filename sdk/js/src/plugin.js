// The four plugin roles. Define a plugin with one of these functions; component.js turns
// it into the component's exports and testing.js calls it locally.
//
//   export default defineMutator({
//     name: 'team-label',
//     version: '0.1.0',
//     description: 'Labels every object with its team',
//     examples: [{ name: 'labels', config: { team: 'a' }, input: { metadata: { name: 'x' } },
//                  expected: { metadata: { name: 'x', labels: { team: 'a' } } } }],
//     parseConfig(config) {
//       fields(config, 'config', { required: ['team'] });
//       return string(config.team, 'team', { allowEmpty: false });
//     },
//     mutate(ctx, team, obj) {
//       obj.setLabel('team', team);
//       return obj;
//     },
//   });
//
// Contract 0.2 (wit/v0.2/plugin.wit) is opt-in: `contract: '0.2'` in the definition (and
// "contract": "0.2" in package.json's "syncweave" section). The plugin may then declare
// `reads` and read other objects with `reads`, report Events, conditions and context values
// with `report`, and read the values earlier chain steps set in ctx.values:
//
//   const NAMESPACES = Resource.core('v1', 'namespaces');
//   export default defineMutator({
//     name: 'namespace-labels',
//     contract: '0.2',
//     reads: [{ side: Side.KCP, resource: NAMESPACES, purpose: "copies the labels of the object's Namespace" }],
//     mutate(ctx, cfg, obj) {
//       const ns = reads.get(Side.KCP, NAMESPACES, obj.getNamespace());
//       if (!ns) report.warning('NamespaceMissing', `namespace ${obj.getNamespace()} not found`);
//       else for (const [k, v] of Object.entries(ns.labels())) obj.setLabel(k, v);
//     },
//   });
//
// Configs: the host passes the config as JSON text; the SDK parses it (an absent or empty
// config is null) and hands it to parseConfig, whose result is what the role function
// receives as `config`. validateConfig (the contract's validate-config) calls parseConfig
// too, so one function checks a config everywhere. Throw InvalidConfig naming the field.

import { check, normalize } from './contract.js';

const ROLE_FUNCTION = { mutator: 'mutate', namer: 'nameObject', projector: 'project', renderer: 'render' };
export const WORLDS = Object.freeze(Object.keys(ROLE_FUNCTION));

/**
 * @typedef {object} PluginSpec
 * @property {string} name the plugin's name in describe() (the host shows it in errors)
 * @property {'0.1'|'0.2'} [contract] the plugin contract version it targets; default 0.1
 * @property {string} [version] default 0.1.0
 * @property {string} [description]
 * @property {object} [configSchema] JSON Schema of the config, published in describe()
 * @property {import('./types.js').Example[]} [examples] worked examples
 * @property {(config: any) => any} [parseConfig] checks the parsed config, returns what the role function gets
 * @property {(config: any) => void} [validateConfig] default: parseConfig
 * @property {import('./types.js').ReadDeclaration[]} [reads] contract 0.2: every kind of
 *   object the plugin may read, published by describe()
 */

function define(world, spec) {
  if (spec === null || typeof spec !== 'object') throw new TypeError(`define${world[0].toUpperCase()}${world.slice(1)} takes an object`);
  if (typeof spec.name !== 'string' || spec.name === '') throw new TypeError('a plugin needs a name (a non-empty string)');
  const fn = ROLE_FUNCTION[world];
  if (typeof spec[fn] !== 'function') throw new TypeError(`a ${world} needs a ${fn}() function`);
  const parseConfig = spec.parseConfig ?? ((config) => config);
  const plugin = {
    version: '0.1.0',
    description: '',
    configSchema: undefined,
    examples: [],
    reads: [],
    ...spec,
    contract: normalize(spec.contract ?? '0.1', `contract of plugin '${spec.name}'`),
    world,
    parseConfig,
    validateConfig: spec.validateConfig ?? ((config) => void parseConfig.call(plugin, config)),
  };
  check(plugin);
  return Object.freeze(plugin);
}

/**
 * A mutator: `mutate(ctx, config, obj, other)` returns the full new object (or nothing:
 * `obj`, edited in place). `obj` and `other` (the counterpart on the other side, if it
 * exists yet) are KubeObjects. A mutator may not change apiVersion, kind, metadata.name
 * or metadata.namespace.
 * @param {PluginSpec & {mutate: (ctx: import('./types.js').Context, config: any, obj: import('./object.js').KubeObject & Record<string, any>, other?: import('./object.js').KubeObject & Record<string, any>) => object|void}} spec
 */
export const defineMutator = (spec) => define('mutator', spec);

/**
 * A namer: `nameObject(ctx, config, obj)` returns `{name, namespace}` (namespace
 * undefined for cluster-scoped objects).
 * @param {PluginSpec & {nameObject: (ctx: import('./types.js').Context, config: any, obj: import('./object.js').KubeObject & Record<string, any>) => import('./types.js').ObjectName}} spec
 */
export const defineNamer = (spec) => define('namer', spec);

/**
 * A projector: `project(config, crd)` returns the projected CustomResourceDefinition.
 * @param {PluginSpec & {project: (config: any, crd: Record<string, any>) => object}} spec
 */
export const defineProjector = (spec) => define('projector', spec);

/**
 * A renderer: `render(ctx, config, template, values)` returns one object per rendered
 * document.
 * @param {PluginSpec & {render: (ctx: import('./types.js').Context, config: any, template: string, values: any) => object[]}} spec
 */
export const defineRenderer = (spec) => define('renderer', spec);
