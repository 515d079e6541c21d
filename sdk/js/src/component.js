// Turns a plugin into the objects componentize-js exports.
//
// The component's entry module (component.js of a scaffolded project) is:
//
//   import { log } from 'syncweave:plugin/host-log@0.1.0';
//   import { exportPlugin } from '@syncweave/plugin/component';
//   import plugin from './plugin.js';
//
//   const exported = exportPlugin(plugin, log);
//   export const meta = exported.meta;
//   export const mutation = exported.mutation;   // naming, projection or rendering
//
// The WIT import is passed in (rather than imported here) so that this package stays
// importable by node for unit tests. The exports follow componentize-js's conventions:
// records use camelCase fields, enums are strings, variants are {tag, val}, and a thrown
// non-Error value becomes the `err` of a result.
import * as adapter from './adapter.js';
import { PluginError } from './errors.js';
import { installSink } from './log.js';

const INTERFACE = { mutator: 'mutation', namer: 'naming', projector: 'projection', renderer: 'rendering' };

function context(ctx) {
  return {
    clusterName: ctx.clusterName,
    clusterPath: ctx.clusterPath ?? undefined,
    direction: ctx.direction,
    owner: ctx.owner,
  };
}

// A typed error becomes the WIT variant; anything else was already made internal by the
// adapter, so this never lets an exception trap the component.
function failure(err) {
  if (err instanceof PluginError) return { tag: err.tag, val: err.message };
  return { tag: 'internal', val: String(err?.stack ?? err) };
}

/**
 * `{meta, <interface>}` for the plugin's world: `mutation`, `naming`, `projection` or
 * `rendering`. `hostLog` is the `log` function imported from
 * 'syncweave:plugin/host-log@0.1.0'.
 */
export function exportPlugin(plugin, hostLog) {
  if (!plugin || !INTERFACE[plugin.world]) {
    throw new TypeError('exportPlugin takes a plugin made with defineMutator, defineNamer, defineProjector or defineRenderer');
  }
  if (typeof hostLog === 'function') installSink((level, message) => hostLog(level, message));

  const meta = {
    describe() {
      return adapter.describe(plugin);
    },
    validateConfig(config) {
      try {
        adapter.validateConfig(plugin, config);
      } catch (err) {
        const f = failure(err);
        throw f.tag === 'invalid-config' ? f.val : `${f.tag}: ${f.val}`;
      }
    },
  };

  const role = {
    mutator: {
      mutate(ctx, config, object, other) {
        try {
          return adapter.mutate(plugin, context(ctx), config, object, other);
        } catch (err) {
          throw failure(err);
        }
      },
    },
    namer: {
      name(ctx, config, object) {
        try {
          return adapter.name(plugin, context(ctx), config, object);
        } catch (err) {
          throw failure(err);
        }
      },
    },
    projector: {
      project(config, crd) {
        try {
          return adapter.project(plugin, config, crd);
        } catch (err) {
          throw failure(err);
        }
      },
    },
    renderer: {
      render(ctx, config, template, values) {
        try {
          return adapter.render(plugin, context(ctx), config, template, values);
        } catch (err) {
          throw failure(err);
        }
      },
    },
  }[plugin.world];

  return { meta, [INTERFACE[plugin.world]]: role };
}
