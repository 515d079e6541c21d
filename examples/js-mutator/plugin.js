// The example mutator, written with the syncweave JavaScript SDK.
//
// Behaviour (identical to examples/rust-mutator and examples/python-mutator): set one
// label from the config and, optionally, copy one annotation to another key.
//
// Config:
//   {"label": {"key": "team", "value": "platform"},
//    "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}}
import { config, defineMutator, log } from '@syncweave/plugin';

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

export default defineMutator({
  name: 'js-mutator',
  version: '0.1.0',
  description: 'Adds a label from the config and copies an annotation to another key',
  configSchema: {
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
  },
  examples: [EXAMPLE],

  // Returns {key, value, copy}; errors name the field.
  parseConfig(cfg) {
    config.fields(cfg, 'config', { required: ['label'], optional: ['copyAnnotation'] });
    config.fields(cfg.label, 'label', { required: ['key', 'value'] });
    const parsed = {
      key: config.string(cfg.label.key, 'label.key', { allowEmpty: false }),
      value: config.string(cfg.label.value, 'label.value'),
      copy: null,
    };
    if (cfg.copyAnnotation !== undefined && cfg.copyAnnotation !== null) {
      config.fields(cfg.copyAnnotation, 'copyAnnotation', { required: ['from', 'to'] });
      parsed.copy = {
        from: config.string(cfg.copyAnnotation.from, 'copyAnnotation.from', { allowEmpty: false }),
        to: config.string(cfg.copyAnnotation.to, 'copyAnnotation.to', { allowEmpty: false }),
      };
    }
    return parsed;
  },

  mutate(ctx, cfg, obj) {
    obj.setLabel(cfg.key, cfg.value);
    if (cfg.copy) {
      const source = obj.annotation(cfg.copy.from);
      if (source !== undefined) obj.setAnnotation(cfg.copy.to, source);
    }
    log.debug(`mutated an object for ${ctx.owner} in ${ctx.clusterName}`);
    return obj;
  },
});
