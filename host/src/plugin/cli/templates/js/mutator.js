// {{name}}: a syncweave mutator. It sets the labels named in its config on every object
// it sees.
//
// Config: {"labels": {"team": "platform"}}.
import { InvalidConfig, config, defineMutator, log } from '@syncweave/plugin';

export default defineMutator({
  name: '{{name}}',
  version: '0.1.0',
  description: '{{description}}',
  configSchema: {
    type: 'object',
    required: ['labels'],
    additionalProperties: false,
    properties: { labels: { type: 'object', additionalProperties: { type: 'string' } } },
  },
  // Worked examples: `syncweave plugin test --examples` and test/plugin.test.js run
  // them, and the host can use them as a self-test.
  examples: [
    {
      name: 'sets a label',
      config: { labels: { team: 'platform' } },
      input: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'default' } },
      expected: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'cfg', namespace: 'default', labels: { team: 'platform' } },
      },
    },
  ],

  // Checks the config; what it returns is what mutate() gets as its config.
  parseConfig(cfg) {
    config.fields(cfg, 'config', { required: ['labels'] });
    const labels = config.stringMap(cfg.labels, 'labels');
    if (Object.hasOwn(labels, '')) throw new InvalidConfig('labels: a label key must not be empty');
    return labels;
  },

  mutate(ctx, labels, obj) {
    for (const [key, value] of Object.entries(labels)) obj.setLabel(key, value);
    log.debug(`set ${Object.keys(labels).length} labels on ${obj.getName()}`);
    return obj;
  },
});
