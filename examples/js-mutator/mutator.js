// Plugin logic, free of component bindings so that `node --test` can run it.
//
// Behaviour (identical to examples/rust-mutator and examples/python-mutator): set one
// label from the config and, optionally, copy one annotation to another key.
//
// Config:
//   {"label": {"key": "team", "value": "platform"},
//    "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}}

export const NAME = 'js-mutator';
export const VERSION = '0.1.0';
export const DESCRIPTION = 'Adds a label from the config and copies an annotation to another key';

export const CONFIG_SCHEMA = {
  type: 'object',
  required: ['label'],
  additionalProperties: false,
  properties: {
    label: {
      type: 'object',
      required: ['key', 'value'],
      properties: { key: { type: 'string', minLength: 1 }, value: { type: 'string' } },
    },
    copyAnnotation: {
      type: 'object',
      required: ['from', 'to'],
      properties: { from: { type: 'string', minLength: 1 }, to: { type: 'string', minLength: 1 } },
    },
  },
};

export const EXAMPLE = {
  name: 'label and copy',
  config: {
    label: { key: 'team', value: 'platform' },
    copyAnnotation: { from: 'example.com/owner', to: 'example.com/previous-owner' },
  },
  input: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cfg', namespace: 'default', annotations: { 'example.com/owner': 'alice' } },
  },
  expected: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'cfg',
      namespace: 'default',
      labels: { team: 'platform' },
      annotations: { 'example.com/owner': 'alice', 'example.com/previous-owner': 'alice' },
    },
  },
};

/** The config is unusable; the message names the field. */
export class ConfigError extends Error {}

/** The object does not have the shape this plugin needs. */
export class InputError extends Error {}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function fields(value, where, required, optional = []) {
  if (!isObject(value)) throw new ConfigError(`${where} must be an object`);
  for (const key of Object.keys(value)) {
    if (!required.includes(key) && !optional.includes(key)) {
      throw new ConfigError(`${where}: unknown field '${key}'`);
    }
  }
  for (const key of required) {
    if (!(key in value)) throw new ConfigError(`${where}: missing field '${key}'`);
  }
}

function string(value, where, allowEmpty = true) {
  if (typeof value !== 'string') throw new ConfigError(`${where} must be a string`);
  if (!allowEmpty && value === '') throw new ConfigError(`${where} must not be empty`);
  return value;
}

/** Parses and checks the config JSON text. */
export function parseConfig(text) {
  let config = null;
  if (text.trim() !== '') {
    try {
      config = JSON.parse(text);
    } catch (err) {
      throw new ConfigError(`the config is not valid JSON: ${err.message}`);
    }
  }
  fields(config, 'config', ['label'], ['copyAnnotation']);
  fields(config.label, 'label', ['key', 'value']);
  const parsed = {
    key: string(config.label.key, 'label.key', false),
    value: string(config.label.value, 'label.value'),
    copy: null,
  };
  if (config.copyAnnotation !== undefined && config.copyAnnotation !== null) {
    fields(config.copyAnnotation, 'copyAnnotation', ['from', 'to']);
    parsed.copy = {
      from: string(config.copyAnnotation.from, 'copyAnnotation.from', false),
      to: string(config.copyAnnotation.to, 'copyAnnotation.to', false),
    };
  }
  return parsed;
}

/** Returns the mutated object as JSON text. */
export function mutate(configText, objectText) {
  const config = parseConfig(configText);
  let obj;
  try {
    obj = JSON.parse(objectText);
  } catch (err) {
    throw new InputError(`the object is not valid JSON: ${err.message}`);
  }
  if (!isObject(obj)) throw new InputError('the object must be a JSON object');
  if (obj.metadata === undefined) obj.metadata = {};
  if (!isObject(obj.metadata)) throw new InputError('metadata must be an object');
  if (!isObject(obj.metadata.labels)) obj.metadata.labels = {};
  obj.metadata.labels[config.key] = config.value;
  const annotations = obj.metadata.annotations;
  if (config.copy && isObject(annotations) && config.copy.from in annotations) {
    annotations[config.copy.to] = annotations[config.copy.from];
  }
  return JSON.stringify(obj);
}
