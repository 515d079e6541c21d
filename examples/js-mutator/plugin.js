// Component entry point for componentize-js (world `mutator` of wit/plugin.wit).
//
// Conventions of the generated bindings: records use camelCase fields, enums are
// strings, variants are {tag, val}, and a thrown non-Error value becomes the `err`
// of a result.
import { log } from 'syncweave:plugin/host-log@0.1.0';
import {
  ConfigError,
  CONFIG_SCHEMA,
  DESCRIPTION,
  EXAMPLE,
  InputError,
  NAME,
  VERSION,
  mutate as mutateObject,
  parseConfig,
} from './mutator.js';

function pluginError(err) {
  if (err instanceof ConfigError) return { tag: 'invalid-config', val: err.message };
  if (err instanceof InputError) return { tag: 'invalid-input', val: err.message };
  return { tag: 'internal', val: String(err && err.stack ? err.stack : err) };
}

export const meta = {
  describe() {
    return {
      name: NAME,
      version: VERSION,
      description: DESCRIPTION,
      configSchema: JSON.stringify(CONFIG_SCHEMA),
      examples: [
        {
          name: EXAMPLE.name,
          config: JSON.stringify(EXAMPLE.config),
          input: JSON.stringify(EXAMPLE.input),
          expected: JSON.stringify(EXAMPLE.expected),
        },
      ],
    };
  },

  validateConfig(config) {
    try {
      parseConfig(config);
    } catch (err) {
      throw err instanceof ConfigError ? err.message : String(err);
    }
  },
};

export const mutation = {
  mutate(ctx, config, object, _other) {
    let result;
    try {
      result = mutateObject(config, object);
    } catch (err) {
      throw pluginError(err);
    }
    log('debug', `mutated an object for ${ctx.owner} in ${ctx.clusterName}`);
    return result;
  },
};
