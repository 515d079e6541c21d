import unittest

from syncweave_plugin import patch
from syncweave_plugin.patch import PatchError


class MergePatchTest(unittest.TestCase):
    def test_rfc7386_examples(self):
        # A selection of RFC 7386 appendix A.
        cases = [
            ({"a": "b"}, {"a": "c"}, {"a": "c"}),
            ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
            ({"a": "b"}, {"a": None}, {}),
            ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
            (["a", "b"], ["c", "d"], ["c", "d"]),
            ({"a": "foo"}, "bar", "bar"),
            ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
            ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
            ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        ]
        for target, p, want in cases:
            self.assertEqual(patch.merge_patch(target, p), want, (target, p))

    def test_inputs_are_not_modified(self):
        target = {"a": {"b": 1}}
        patch.merge_patch(target, {"a": {"b": None}})
        self.assertEqual(target, {"a": {"b": 1}})

    def test_create_merge_patch_round_trips(self):
        original = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1], "t": True}
        modified = {"a": 1, "b": {"c": 5}, "l": [1, 2], "n": None, "t": 1}
        p = patch.create_merge_patch(original, modified)
        self.assertEqual(p, {"b": {"c": 5, "d": None}, "l": [1, 2], "n": None, "t": 1})
        self.assertEqual(patch.create_merge_patch(original, original), {})


class JsonPatchTest(unittest.TestCase):
    def test_all_operations(self):
        doc = {"metadata": {"labels": {"a": "1"}}, "list": [1, 2, 3]}
        out = patch.json_patch(
            doc,
            [
                {"op": "add", "path": "/metadata/labels/b~1c", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "replace", "path": "/list/0", "value": 10},
                {"op": "add", "path": "/list/-", "value": 4},
                {"op": "move", "from": "/list/1", "path": "/moved"},
                {"op": "copy", "from": "/moved", "path": "/copied"},
                {"op": "test", "path": "/copied", "value": 2},
            ],
        )
        self.assertEqual(
            out, {"metadata": {"labels": {"b/c": "2"}}, "list": [10, 3, 4], "moved": 2, "copied": 2}
        )
        self.assertEqual(doc["list"], [1, 2, 3], "input untouched")

    def test_errors_name_the_operation_and_change_nothing(self):
        doc = {"a": 1}
        cases = [
            ([{"op": "remove", "path": "/b"}], 0, "does not exist"),
            ([{"op": "add", "path": "/x", "value": 1}, {"op": "test", "path": "/a", "value": 2}], 1, "test failed"),
            ([{"op": "test", "path": "/a", "value": True}], 0, "test failed"),
            ([{"op": "nope", "path": "/a"}], 0, "unknown op"),
            ([{"op": "add", "path": "a", "value": 1}], 0, "JSON pointer"),
            ([{"op": "add", "path": "/a"}], 0, "value"),
        ]
        for ops, index, needle in cases:
            with self.assertRaises(PatchError, msg=ops) as caught:
                patch.json_patch(doc, ops)
            self.assertEqual(caught.exception.index, index)
            self.assertIn(needle, str(caught.exception))
        self.assertEqual(doc, {"a": 1})
        with self.assertRaises(PatchError):
            patch.json_patch(doc, {"op": "add"})


if __name__ == "__main__":
    unittest.main()
