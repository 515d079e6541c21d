// Turns a plugin into the objects componentize-js exports.
//
// The component's entry module (component.js of a scaffolded project) is, for contract 0.1:
//
//   import { log } from 'syncweave:plugin/host-log@0.1.0';
//   import { exportPlugin } from '@syncweave/plugin/component';
//   import plugin from './plugin.js';
//
//   const exported = exportPlugin(plugin, log);
//   export const meta = exported.meta;
//   export const mutation = exported.mutation;   // naming, projection or rendering
//
// and for contract 0.2 (plugin defined with contract: '0.2', package.json "syncweave":
// {"contract": "0.2"}) it imports the host's interfaces @0.2.0 and passes reads too:
//
//   import { log } from 'syncweave:plugin/host-log@0.2.0';
//   import * as reads from 'syncweave:plugin/reads@0.2.0';   // not in the projector world
//   ...
//   const exported = exportPlugin(plugin, { log, reads });
//
// The WIT imports are passed in (rather than imported here) so that this package stays
// importable by node for unit tests. The exports follow componentize-js's conventions:
// records use camelCase fields, enums are strings, variants are {tag, val}, and a thrown
// non-Error value becomes the `err` of a result. componentize-js runs the entry module
// while it builds, so a plugin whose `contract` is not the world's stops the build here.
import * as adapter from './adapter.js';
import { ContractError, WIT_PACKAGES, check, normalize } from './contract.js';
import { Internal, PluginError, READ_ERRORS } from './errors.js';
import { installSink } from './log.js';
import { contract as worldContract } from '@syncweave/plugin/world';

const INTERFACE = { mutator: 'mutation', namer: 'naming', projector: 'projection', renderer: 'rendering' };

function context(ctx, v02) {
  return {
    clusterName: ctx.clusterName,
    clusterPath: ctx.clusterPath ?? undefined,
    direction: ctx.direction,
    owner: ctx.owner,
    values: v02 ? adapter.contextValues(ctx.values) : Object.freeze({}),
  };
}

// A typed error becomes the WIT variant; anything else was already made internal by the
// adapter, so this never lets an exception trap the component.
function failure(err) {
  if (err instanceof PluginError) return { tag: err.tag, val: err.message };
  return { tag: 'internal', val: String(err?.stack ?? err) };
}

/**
 * The plugin's contract version, when it is `built` (the version of the world the
 * component is being built against; undefined when unknown); otherwise a ContractError
 * that says how to make them agree.
 */
export function checkWorld(plugin, built) {
  const declared = check(plugin);
  if (built === undefined || built === null) return declared;
  const world = normalize(built, 'the world being built');
  if (world === declared) return declared;
  const fix =
    declared === '0.2'
      ? `set "contract": "0.2" in the "syncweave" section of package.json so that \`syncweave plugin build\` uses the 0.2 world, or remove contract: '0.2' from the plugin to stay on 0.1`
      : `set contract: '0.2' in the plugin's definition (the project builds against 0.2), or remove "contract" from the "syncweave" section of package.json to stay on 0.1`;
  throw new ContractError(
    `plugin '${plugin.name}' targets contract ${declared} (its contract field) but this component is being built against ${WIT_PACKAGES[world]}: ${fix}`,
  );
}

function readError(err) {
  const payload = err !== null && typeof err === 'object' && Object.prototype.hasOwnProperty.call(err, 'payload') ? err.payload : err;
  if (payload && typeof payload.tag === 'string' && READ_ERRORS[payload.tag]) return new READ_ERRORS[payload.tag](String(payload.val));
  if (err instanceof Error) return new Internal(`the host's reads import failed: ${err.message}`);
  return new Internal(`the host's reads import failed with ${JSON.stringify(payload)}`);
}

const record = (r) => ({ group: r.group, version: r.version, resource: r.resource });

/** The reads backend over the host's `reads` import (its read-error variants become ReadError subclasses). */
function hostReadsBackend(hostReads) {
  return {
    get(side, resource, namespace, name) {
      try {
        return hostReads.get(side, record(resource), namespace, name);
      } catch (err) {
        throw readError(err);
      }
    },
    list(side, resource, namespace, labelSelector) {
      try {
        return hostReads.list(side, record(resource), namespace, labelSelector);
      } catch (err) {
        throw readError(err);
      }
    },
  };
}

/**
 * `{meta, <interface>}` for the plugin's world: `mutation`, `naming`, `projection` or
 * `rendering`. `host` is, for contract 0.1, the `log` function imported from
 * 'syncweave:plugin/host-log@0.1.0'; for contract 0.2, `{log, reads}` imported from
 * 'syncweave:plugin/host-log@0.2.0' and 'syncweave:plugin/reads@0.2.0' (a projector has
 * no reads).
 */
export function exportPlugin(plugin, host) {
  if (!plugin || !INTERFACE[plugin.world]) {
    throw new TypeError('exportPlugin takes a plugin made with defineMutator, defineNamer, defineProjector or defineRenderer');
  }
  const version = checkWorld(plugin, worldContract);
  const v02 = version === '0.2';
  const hostLog = typeof host === 'function' ? host : host?.log;
  const hostReads = host !== null && typeof host === 'object' ? host.reads : undefined;
  if (v02 && plugin.world !== 'projector' && !hostReads) {
    throw new ContractError(
      `plugin '${plugin.name}' targets contract 0.2, but the entry module passes no reads: import * as reads from 'syncweave:plugin/reads@0.2.0' ` +
        "(and log from 'syncweave:plugin/host-log@0.2.0') and call exportPlugin(plugin, { log, reads })",
    );
  }
  if (!v02 && hostReads) {
    throw new ContractError(
      `plugin '${plugin.name}' targets contract 0.1, but the entry module passes reads (a 0.2 import): set contract: '0.2' in the plugin's definition, ` +
        `or import log from 'syncweave:plugin/host-log@0.1.0' and call exportPlugin(plugin, log)`,
    );
  }
  if (typeof hostLog === 'function') installSink((level, message) => hostLog(level, message));
  const reads = v02 && hostReads ? hostReadsBackend(hostReads) : null;

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

  // Under 0.2 the outputs carry their report; reportRecord cannot fail here (the adapter
  // has checked every context value).
  const role = {
    mutator: {
      mutate(ctx, config, object, other) {
        try {
          const { output, report } = adapter.mutate(plugin, context(ctx, v02), config, object, other, reads);
          return v02 ? { object: output, report: adapter.reportRecord(report) } : output;
        } catch (err) {
          throw failure(err);
        }
      },
    },
    namer: {
      name(ctx, config, object) {
        try {
          const { output, report } = adapter.name(plugin, context(ctx, v02), config, object, reads);
          return v02 ? { name: output, report: adapter.reportRecord(report) } : output;
        } catch (err) {
          throw failure(err);
        }
      },
    },
    projector: {
      project(config, crd) {
        try {
          return adapter.project(plugin, config, crd).output;
        } catch (err) {
          throw failure(err);
        }
      },
    },
    renderer: {
      render(ctx, config, template, values) {
        try {
          const { output, report } = adapter.render(plugin, context(ctx, v02), config, template, values, reads);
          return v02 ? { documents: output, report: adapter.reportRecord(report) } : output;
        } catch (err) {
          throw failure(err);
        }
      },
    },
  }[plugin.world];

  return { meta, [INTERFACE[plugin.world]]: role };
}
