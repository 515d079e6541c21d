// {{name}}: a syncweave projector. It publishes a CRD under another API group (the one in
// its config) and renames it to match.
//
// Config: {"group": "example.org"}.
import { InvalidConfig, InvalidInput, config, defineProjector, log, path } from '@syncweave/plugin';

const crd = (name, group) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name },
  spec: { group, scope: 'Namespaced', names: { plural: 'widgets', kind: 'Widget' } },
});

export default defineProjector({
  name: '{{name}}',
  version: '0.1.0',
  description: '{{description}}',
  configSchema: {
    type: 'object',
    required: ['group'],
    additionalProperties: false,
    properties: { group: { type: 'string', minLength: 1 } },
  },
  examples: [
    {
      name: 'moves the CRD to another group',
      config: { group: 'example.org' },
      input: crd('widgets.internal.example.com', 'internal.example.com'),
      expected: crd('widgets.example.org', 'example.org'),
    },
  ],

  parseConfig(cfg) {
    config.fields(cfg, 'config', { required: ['group'] });
    const group = config.string(cfg.group, 'group', { allowEmpty: false });
    if (!group.includes('.')) throw new InvalidConfig(`group: '${group}' is not a fully qualified API group (e.g. example.org)`);
    return group;
  },

  project(group, input) {
    const plural = path.get(input, 'spec.names.plural');
    if (typeof plural !== 'string' || plural === '') throw new InvalidInput('spec.names.plural is missing');
    path.set(input, 'spec.group', group);
    path.set(input, 'metadata.name', `${plural}.${group}`);
    log.debug(`projected ${plural} into ${group}`);
    return input;
  },
});
