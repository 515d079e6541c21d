"""Unit tests for logic.py: python3 -m unittest discover -s examples/python-mutator"""

import json
import unittest

import logic


def run(config, obj):
    return json.loads(logic.mutate(json.dumps(config), json.dumps(obj)))


class MutateTest(unittest.TestCase):
    def test_example_holds(self):
        example = logic.EXAMPLE
        self.assertEqual(run(example["config"], example["input"]), example["expected"])

    def test_creates_labels_and_skips_missing_annotation(self):
        out = run(
            {"label": {"key": "app.kubernetes.io/team", "value": "x"}, "copyAnnotation": {"from": "a", "to": "b"}},
            {"metadata": {"name": "n"}},
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
            with self.assertRaises(logic.ConfigError, msg=text) as caught:
                logic.parse_config(text)
            self.assertIn(message, str(caught.exception))

    def test_input_errors(self):
        config = json.dumps({"label": {"key": "k", "value": "v"}})
        for text in ["[1]", "nope", '{"metadata": 3}']:
            with self.assertRaises(logic.InputError, msg=text):
                logic.mutate(config, text)


if __name__ == "__main__":
    unittest.main()
