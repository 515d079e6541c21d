"""Component entry point for componentize-py (world `mutator` of wit/plugin.wit).

The classes are named after the exported interfaces, as componentize-py expects.
"""

import json

import logic
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host_log, types


class Meta(exports.Meta):
    def describe(self) -> types.PluginInfo:
        example = logic.EXAMPLE
        return types.PluginInfo(
            name=logic.NAME,
            version=logic.VERSION,
            description=logic.DESCRIPTION,
            config_schema=json.dumps(logic.CONFIG_SCHEMA),
            examples=[
                types.Fixture(
                    name=example["name"],
                    config=json.dumps(example["config"]),
                    input=json.dumps(example["input"]),
                    expected=json.dumps(example["expected"]),
                )
            ],
        )

    def validate_config(self, config: str) -> None:
        try:
            logic.parse_config(config)
        except logic.ConfigError as err:
            raise Err(str(err))


class Mutation(exports.Mutation):
    def mutate(self, ctx: types.Context, config: str, object: str, other: str | None) -> str:
        try:
            result = logic.mutate(config, object)
        except logic.ConfigError as err:
            raise Err(types.PluginError_InvalidConfig(str(err)))
        except logic.InputError as err:
            raise Err(types.PluginError_InvalidInput(str(err)))
        host_log.log(host_log.Level.DEBUG, f"mutated an object for {ctx.owner} in {ctx.cluster_name}")
        return result
