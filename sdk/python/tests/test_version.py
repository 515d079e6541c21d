"""The SDK's version is the WIT package version: syncweave:plugin@X.Y.Z -> X.Y.Z."""

import pathlib
import re
import unittest

import syncweave_plugin

HERE = pathlib.Path(__file__).resolve().parent
SDK = HERE.parent
WIT = SDK.parent.parent / "wit" / "plugin.wit"
WIT_02 = SDK.parent.parent / "wit" / "v0.2" / "plugin.wit"


def wit_package(wit=WIT):
    match = re.search(r"^package\s+([a-z0-9-]+:[a-z0-9-]+)@([0-9][^;\s]*)\s*;", wit.read_text(), re.M)
    assert match, f"no package line in {wit}"
    return match.group(1), match.group(2)


class VersionTest(unittest.TestCase):
    def test_sdk_version_is_the_wit_package_version(self):
        package, version = wit_package()
        self.assertEqual(package, "syncweave:plugin")
        self.assertEqual(syncweave_plugin.__version__, version)
        self.assertEqual(syncweave_plugin.WIT_PACKAGE, f"{package}@{version}")

    def test_pyproject_version_matches(self):
        _, version = wit_package()
        pyproject = (SDK / "pyproject.toml").read_text()
        match = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.M)
        self.assertIsNotNone(match, "pyproject.toml has no version")
        self.assertEqual(match.group(1), version)


    def test_every_contract_version_is_a_wit_package_of_the_repository(self):
        self.assertEqual(syncweave_plugin.CONTRACTS, ("0.1", "0.2"))
        for version, wit in (("0.1", WIT), ("0.2", WIT_02)):
            package, full = wit_package(wit)
            self.assertEqual(syncweave_plugin.WIT_PACKAGES[version], f"{package}@{full}")


if __name__ == "__main__":
    unittest.main()
