"""Component entry point, wrapped by componentize-py (`syncweave plugin build`).

The plugin itself is in plugin.py. componentize-py looks here for one class per exported
interface of the {{kind}} world; the SDK makes them from the plugin.
"""

from syncweave_plugin.component import exports

from plugin import PLUGIN

Meta, {{interface_class}} = exports(PLUGIN)
