import unittest

from syncweave_plugin import path
from syncweave_plugin.path import PathError


class GetTest(unittest.TestCase):
    doc = {
        "metadata": {"name": "a", "labels": {"app": "web", "example.com/team": "x"}},
        "spec": {"items": [{"name": "one", "n": 1}, {"name": "two"}], "replicas": 3, "on": True},
    }

    def test_keys_indexes_and_escapes(self):
        self.assertEqual(path.get(self.doc, "metadata.name"), "a")
        self.assertEqual(path.get(self.doc, "spec.items.1.name"), "two")
        self.assertEqual(path.get(self.doc, "metadata.labels.example\\.com/team"), "x")
        self.assertEqual(path.get(self.doc, ["metadata", "labels", "example.com/team"]), "x")
        self.assertEqual(path.get(self.doc, path.key("example.com/team")), None)
        self.assertEqual(path.get(self.doc["metadata"]["labels"], path.key("example.com/team")), "x")
        self.assertIsNone(path.get(self.doc, "spec.items.5.name"))
        self.assertEqual(path.get(self.doc, "spec.nothing", "dflt"), "dflt")
        self.assertTrue(path.exists(self.doc, "spec.on"))
        self.assertFalse(path.exists(self.doc, "spec.off"))

    def test_hash_and_wildcards(self):
        self.assertEqual(path.get(self.doc, "spec.items.#"), 2)
        self.assertEqual(path.get(self.doc, "spec.items.#.name"), ["one", "two"])
        self.assertEqual(path.get(self.doc, "spec.items.#.n"), [1])
        self.assertEqual(path.get(self.doc, "metadata.labels.ex*"), "x")
        self.assertEqual(path.get(self.doc, "metadata.labels.a?p"), "web")

    def test_get_string_coerces_like_gjson(self):
        self.assertEqual(path.get_string(self.doc, "spec.replicas"), "3")
        self.assertEqual(path.get_string(self.doc, "spec.on"), "true")
        self.assertEqual(path.get_string(self.doc, "spec.missing"), "")
        self.assertEqual(path.get_string(self.doc, "spec.items.1"), '{"name":"two"}')


class SetDeleteTest(unittest.TestCase):
    def test_set_creates_objects_and_arrays(self):
        doc = {}
        path.set(doc, "metadata.labels.app", "web")
        path.set(doc, "spec.ports.1.port", 80)
        path.set(doc, "spec.args.-1", "--x")
        path.set(doc, "spec.args.-1", "--y")
        path.set(doc, "data.:1", "key one")
        self.assertEqual(
            doc,
            {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"ports": [None, {"port": 80}], "args": ["--x", "--y"]},
                "data": {"1": "key one"},
            },
        )

    def test_scalar_in_the_way_is_replaced(self):
        doc = {"spec": "text"}
        path.set(doc, "spec.a", 1)
        self.assertEqual(doc, {"spec": {"a": 1}})

    def test_write_errors_say_why(self):
        for p, needle in [("", "empty"), ("a.*", "wildcard"), ("a.#", "'#'")]:
            with self.assertRaises(PathError, msg=p) as caught:
                path.set({}, p, 1)
            self.assertIn(needle, str(caught.exception))
        with self.assertRaises(PathError) as caught:
            path.set({"a": [1]}, "a.x", 1)
        self.assertIn("numeric index or -1", str(caught.exception))

    def test_delete(self):
        doc = {"a": {"b": 1, "c": 2}, "l": [1, 2, 3]}
        self.assertEqual(path.delete(doc, "a.b"), 1)
        self.assertEqual(path.delete(doc, "l.-1"), 3)
        self.assertEqual(path.delete(doc, "l.0"), 1)
        self.assertIsNone(path.delete(doc, "a.zzz"))
        self.assertEqual(doc, {"a": {"c": 2}, "l": [2]})


if __name__ == "__main__":
    unittest.main()
