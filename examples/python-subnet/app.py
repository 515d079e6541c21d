"""Component entry point, wrapped by componentize-py (world `mutator` of wit/v0.2/plugin.wit).

componentize-py looks here for one class per exported interface (Meta, Mutation); the
SDK makes them from the plugin in plugin.py.
"""

from syncweave_plugin.component import exports

from plugin import PLUGIN

Meta, Mutation = exports(PLUGIN)
