"""Native tests of the example (no Wasm): `python3 -m unittest` with sdk/python/src on
PYTHONPATH."""

import unittest

from syncweave_plugin import ReadFixture, Side, testing

from plugin import CONFIGMAPS, OBJECT, PLUGIN, _subnet


class SubnetTest(unittest.TestCase):
    def test_examples(self):
        testing.check_examples(PLUGIN)

    def test_fills_the_field(self):
        out = testing.call(PLUGIN, OBJECT, None,
                           reads=[ReadFixture(Side.KCP, CONFIGMAPS, [_subnet("net-a", "s-1")])])
        self.assertEqual(out.output["spec"]["subnetID"], "s-1")
        self.assertEqual(out.report.warnings, [])

    def test_warns_while_missing(self):
        out = testing.call(PLUGIN, OBJECT, None, reads=[ReadFixture(Side.KCP, CONFIGMAPS, [])])
        self.assertNotIn("subnetID", out.output["spec"])
        self.assertEqual([w[0] for w in out.report.warnings], ["SubnetMissing"])


if __name__ == "__main__":
    unittest.main()
