"""Tests of plugin.py, run in-process by the SDK's harness (no component needed):
python3 -m unittest (or pytest)."""

import unittest

from syncweave_plugin import InvalidConfig, testing

from plugin import PLUGIN


class PluginTest(unittest.TestCase):
    def test_examples_hold(self):
        self.assertEqual(testing.check_examples(PLUGIN), 1)

    def test_keeps_other_labels(self):
        out = testing.mutate(
            PLUGIN,
            {"metadata": {"name": "a", "labels": {"app": "web"}}},
            {"labels": {"example.com/tier": "gold"}},
        )
        self.assertEqual(out, {"metadata": {"name": "a", "labels": {"app": "web", "example.com/tier": "gold"}}})

    def test_bad_configs_name_the_field(self):
        testing.validate_config(PLUGIN, {"labels": {"a": "b"}})
        for cfg, message in [
            (None, "config must be an object"),
            ({}, "missing field 'labels'"),
            ({"labels": {"a": 1}}, "labels.a must be a string"),
            ({"labels": {"": "x"}}, "must not be empty"),
        ]:
            with self.assertRaises(InvalidConfig, msg=cfg) as caught:
                testing.validate_config(PLUGIN, cfg)
            self.assertIn(message, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
