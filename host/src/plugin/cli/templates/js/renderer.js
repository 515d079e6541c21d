// {{name}}: a syncweave renderer. Its templates are JSON documents (one object, or a list
// of objects) in which ${Key} is replaced by the string value of Key in the values (for
// InitTemplates: ClusterName and ClusterPath).
//
// Config: {"template": "..."} (optional): rendered when the call passes an empty template,
// so that the config alone is a complete example.
import { InvalidInput, config, defineRenderer, log } from '@syncweave/plugin';

/** Replaces ${Key} with the values' Key (escaped for a JSON string). */
export function substitute(template, values) {
  const placeholder = /\$\{([^}]*)\}/g;
  if (template.replace(placeholder, '').includes('${')) throw new InvalidInput('the template has a ${ without a closing }');
  return template.replace(placeholder, (_, key) => {
    const v = values !== null && typeof values === 'object' ? values[key] : undefined;
    if (!['string', 'number', 'boolean'].includes(typeof v)) {
      throw new InvalidInput(`the template refers to '${key}', but the values have no string or number of that name`);
    }
    return JSON.stringify(String(v)).slice(1, -1);
  });
}

export default defineRenderer({
  name: '{{name}}',
  version: '0.1.0',
  description: '{{description}}',
  configSchema: { type: 'object', additionalProperties: false, properties: { template: { type: 'string' } } },
  examples: [
    {
      name: 'a namespace per workspace',
      config: {
        template:
          '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ws-${ClusterName}", "annotations": {"path": "${ClusterPath}"}}}',
      },
      input: { ClusterName: '2x8fkdtr3b1z', ClusterPath: 'root:org:team' },
      expected: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ws-2x8fkdtr3b1z', annotations: { path: 'root:org:team' } } },
      ],
    },
  ],

  parseConfig(cfg) {
    if (cfg === null) return undefined;
    config.fields(cfg, 'config', { optional: ['template'] });
    return cfg.template === undefined ? undefined : config.string(cfg.template, 'template');
  },

  render(ctx, defaultTemplate, template, values) {
    const text = template.trim() !== '' ? template : defaultTemplate;
    if (!text) throw new InvalidInput('no template: pass one, or set template in the config');
    let doc;
    try {
      doc = JSON.parse(substitute(text, values));
    } catch (err) {
      if (err instanceof InvalidInput) throw err;
      throw new InvalidInput(`the rendered template is not JSON: ${err.message}`);
    }
    const docs = Array.isArray(doc) ? doc : [doc];
    log.debug(`rendered ${docs.length} objects for ${ctx.clusterName}`);
    return docs;
  },
});
