// {{name}}: a syncweave namer. It places each object in a namespace named after the
// consumer's logical cluster, under its own name with a prefix from the config.
//
// Config: {"prefix": "team-a-"} (optional; default no prefix).
import { InvalidInput, config, defineNamer, log } from '@syncweave/plugin';

export default defineNamer({
  name: '{{name}}',
  version: '0.1.0',
  description: '{{description}}',
  configSchema: { type: 'object', additionalProperties: false, properties: { prefix: { type: 'string' } } },
  examples: [
    {
      name: "prefixed name in the cluster's namespace",
      config: { prefix: 'team-a-' },
      input: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'default' } },
      expected: { name: 'team-a-w1', namespace: 'fixture-cluster' },
    },
  ],

  parseConfig(cfg) {
    if (cfg === null) return '';
    config.fields(cfg, 'config', { optional: ['prefix'] });
    return config.string(cfg.prefix ?? '', 'prefix');
  },

  nameObject(ctx, prefix, obj) {
    if (!obj.getName()) throw new InvalidInput('metadata.name is missing');
    const name = prefix + obj.getName();
    log.debug(`naming ${name} in ${ctx.clusterName}`);
    // A cluster-scoped object (no namespace) stays cluster-scoped.
    return { name, namespace: obj.getNamespace() === undefined ? undefined : ctx.clusterName };
  },
});
