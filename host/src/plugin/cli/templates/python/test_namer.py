"""Tests of plugin.py, run in-process by the SDK's harness (no component needed):
python3 -m unittest (or pytest)."""

import unittest

from syncweave_plugin import InvalidConfig, InvalidInput, ObjectName, testing

from plugin import PLUGIN


class PluginTest(unittest.TestCase):
    def test_examples_hold(self):
        self.assertEqual(testing.check_examples(PLUGIN), 1)

    def test_cluster_scoped_objects_stay_cluster_scoped(self):
        self.assertEqual(testing.name(PLUGIN, {"metadata": {"name": "global"}}), ObjectName("global", None))

    def test_errors(self):
        with self.assertRaises(InvalidInput):
            testing.name(PLUGIN, {"metadata": {}})
        with self.assertRaises(InvalidConfig):
            testing.validate_config(PLUGIN, {"prefix": 1})


if __name__ == "__main__":
    unittest.main()
