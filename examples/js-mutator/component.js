// Component entry point, bundled and wrapped by componentize-js (`syncweave plugin build`,
// world `mutator` of wit/plugin.wit).
//
// componentize-js exports what this module exports, one object per exported interface;
// the SDK makes them from the plugin in plugin.js and routes its log lines to the host.
import { log } from 'syncweave:plugin/host-log@0.1.0';
import { exportPlugin } from '@syncweave/plugin/component';

import plugin from './plugin.js';

const exported = exportPlugin(plugin, log);
export const meta = exported.meta;
export const mutation = exported.mutation;
