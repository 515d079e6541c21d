"""Tests of plugin.py, run in-process by the SDK's harness (no component needed):
python3 -m unittest (or pytest)."""

import unittest

from syncweave_plugin import InvalidConfig, InvalidInput, testing

from plugin import PLUGIN


class PluginTest(unittest.TestCase):
    def test_examples_hold(self):
        self.assertEqual(testing.check_examples(PLUGIN), 1)

    def test_errors(self):
        with self.assertRaises(InvalidConfig) as caught:
            testing.validate_config(PLUGIN, {"group": "nodots"})
        self.assertTrue(str(caught.exception).startswith("group:"))
        with self.assertRaises(InvalidInput):
            testing.project(PLUGIN, {"spec": {}}, {"group": "a.b"})


if __name__ == "__main__":
    unittest.main()
