"""Tests of plugin.py, run in-process by the SDK's harness (no component needed):
python3 -m unittest (or pytest)."""

import unittest

from syncweave_plugin import InvalidInput, testing

from plugin import PLUGIN


class PluginTest(unittest.TestCase):
    def test_examples_hold(self):
        # Renderer examples carry their template in the config and run with an empty one.
        self.assertEqual(testing.check_examples(PLUGIN), 1)

    def test_values_are_escaped_and_unknown_keys_refused(self):
        out = testing.render(PLUGIN, {"X": 'say "hi"'}, template='[{"kind": "A", "v": "${X}"}, {"kind": "B"}]')
        self.assertEqual(out, [{"kind": "A", "v": 'say "hi"'}, {"kind": "B"}])
        with self.assertRaises(InvalidInput) as caught:
            testing.render(PLUGIN, {}, template="${Nope}")
        self.assertIn("Nope", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
