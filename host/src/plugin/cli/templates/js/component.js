// Component entry point, bundled and wrapped by componentize-js (`syncweave plugin build`).
//
// The plugin itself is in plugin.js. componentize-js exports what this module exports,
// one object per exported interface of the {{kind}} world; the SDK makes them from the
// plugin, and routes its log lines to the host's `host-log` import.
import { log } from 'syncweave:plugin/host-log@0.1.0';
import { exportPlugin } from '@syncweave/plugin/component';

import plugin from './plugin.js';

const exported = exportPlugin(plugin, log);
export const meta = exported.meta;
export const {{interface}} = exported.{{interface}};
