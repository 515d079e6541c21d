import json
import unittest

from syncweave_plugin import InvalidInput, Object


class ObjectTest(unittest.TestCase):
    def test_identity_and_metadata(self):
        o = Object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}})
        self.assertEqual((o.api_version, o.kind, o.name, o.namespace), ("v1", "ConfigMap", "a", "ns"))
        self.assertIsNone(Object({}).name)
        self.assertEqual(json.loads(json.dumps(o)), o, "an Object is a dict")

    def test_reading_changes_nothing(self):
        o = Object({"metadata": {"name": "a"}})
        self.assertEqual(dict(o.labels), {})
        self.assertIsNone(o.label("x"))
        self.assertIsNone(o.remove_label("x"))
        self.assertEqual(o, {"metadata": {"name": "a"}})
        with self.assertRaises(TypeError):
            o.labels["x"] = "y"  # read-only view

    def test_labels_and_annotations(self):
        o = Object({})
        o.set_label("team", "a")
        o.set_annotation("example.com/owner", "alice")
        self.assertEqual(o, {"metadata": {"labels": {"team": "a"}, "annotations": {"example.com/owner": "alice"}}})
        self.assertEqual(o.label("team"), "a")
        self.assertEqual(o.annotation("example.com/owner"), "alice")
        self.assertEqual(o.remove_label("team"), "a")
        self.assertEqual(o.labels, {})
        with self.assertRaises(TypeError):
            o.set_label("n", 1)

    def test_malformed_metadata_is_invalid_input(self):
        for doc, needle in [({"metadata": 3}, "metadata must be an object"),
                            ({"metadata": {"labels": []}}, "metadata.labels must be an object")]:
            with self.assertRaises(InvalidInput, msg=doc) as caught:
                Object(doc).set_label("a", "b")
            self.assertIn(needle, str(caught.exception))

    def test_paths_and_patches(self):
        o = Object({"spec": {"a": 1}})
        o.set_path("spec.b.c", "x")
        self.assertEqual(o.get_path("spec.b.c"), "x")
        self.assertTrue(o.has_path("spec.a"))
        self.assertEqual(o.delete_path("spec.a"), 1)
        o.merge_patch({"spec": {"b": None}, "data": {"k": "v"}})
        self.assertEqual(o, {"spec": {}, "data": {"k": "v"}})
        o.json_patch([{"op": "add", "path": "/spec/r", "value": 2}])
        self.assertEqual(o.get_string("spec.r"), "2")


if __name__ == "__main__":
    unittest.main()
