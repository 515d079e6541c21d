"""Unit tests of plugin.py through the SDK's in-process harness:
PYTHONPATH=sdk/python/src python3 -m unittest discover -s examples/python-mutator"""

import json
import unittest

from syncweave_plugin import InvalidConfig, InvalidInput, testing

from plugin import EXAMPLE, PLUGIN


class MutateTest(unittest.TestCase):
    def test_example_holds(self):
        self.assertEqual(testing.mutate(PLUGIN, EXAMPLE.input, EXAMPLE.config), EXAMPLE.expected)
        self.assertEqual(testing.check_examples(PLUGIN), 1)

    def test_creates_labels_and_skips_missing_annotation(self):
        out = testing.mutate(
            PLUGIN,
            {"metadata": {"name": "n"}},
            {"label": {"key": "app.kubernetes.io/team", "value": "x"}, "copyAnnotation": {"from": "a", "to": "b"}},
        )
        self.assertEqual(out, {"metadata": {"name": "n", "labels": {"app.kubernetes.io/team": "x"}}})

    def test_config_errors_name_the_field(self):
        cases = [
            ("", "config must be an object"),
            ("{", "not valid JSON"),
            ("{}", "missing field 'label'"),
            ('{"label": {"key": "", "value": ""}}', "label.key must not be empty"),
            ('{"label": {"key": "k", "value": 1}}', "label.value must be a string"),
            ('{"label": {"key": "k", "value": "v"}, "extra": 1}', "unknown field 'extra'"),
            ('{"label": {"key": "k", "value": "v"}, "copyAnnotation": {"from": "a"}}', "missing field 'to'"),
        ]
        for text, message in cases:
            with self.assertRaises(InvalidConfig, msg=text) as caught:
                testing.validate_config(PLUGIN, config_text=text)
            self.assertIn(message, str(caught.exception))

    def test_input_errors(self):
        config = json.dumps({"label": {"key": "k", "value": "v"}})
        for text in ["[1]", "nope", '{"metadata": 3}']:
            with self.assertRaises(InvalidInput, msg=text):
                testing.mutate(PLUGIN, config_text=config, object_text=text)


if __name__ == "__main__":
    unittest.main()
