"""Unit tests of tests/bench/report.py (python3 -m unittest discover -s tests/bench)."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402


def agent(name, rate, p50, complete=True, quiet=True, hwm=100_000, bpo=2500.0):
    lat = [p50 * (0.5 + i / 100) for i in range(100)]
    p1 = {
        "label": "sustained",
        "objects": 100,
        "rate": 5.0,
        "seen": 100,
        "quiet": quiet,
        "p50_ms": p50,
        "p99_ms": p50 * 1.5,
        "latencies_ms": lat,
    }
    return {
        "agent": name,
        "error": None,
        "idle": {"rss_kb": 30_000, "ready_seconds": 0.2},
        "p1_sustained": None if name == "ceiling" else p1,
        "p1_under_load": None,
        "p2": {
            "objects": 1000,
            "synced": 1000 if complete else 400,
            "complete": complete,
            "seconds": 1000 / rate,
            "objects_per_second": rate,
            "ready_seconds": 0.3 if name == "syncweave" else None,
            "cpu_seconds_per_1000_objects": 2.0,
        },
        "p3": None if name == "ceiling" else {
            "hwm_kb": hwm,
            "rss_kb_settled": hwm - 1000,
            "settled_quiet": quiet,
            "objects_held": 1100,
            "bytes_per_object": bpo,
        },
        "cost": {
            "writes_per_object": 5.0,
            "writes_kcp_per_object": 3.0,
            "writes_service_per_object": 2.0,
            "requests_per_object": 6.0,
            "plugin_calls_per_object": None,
        },
        "p4": None if name == "ceiling" else {
            "quiet": quiet,
            "window_seconds": 310,
            "requests_kcp": 0 if name == "syncweave" else 40,
            "requests_service": 0,
            "requests_per_object": 0.0 if name == "syncweave" else 0.036,
            "probes": {"/readyz": {"200": 31}} if name == "syncweave" else {"/readyz": {"404": 31}, "/healthz": {"404": 31}},
        },
        "samples": [
            {"t": 5.0 * i, "rss_kb": 30_000 + 100 * i, "kcp_requests": 10 * i, "service_requests": 8 * i}
            for i in range(20)
        ],
    }


def run_json(agents):
    return {
        "kind": "side-by-side",
        "commit": "0123456789abcdef",
        "options": {"objects": 1000, "workspaces": 10, "latency_objects": 100, "load_latency_objects": 0, "rate": 5.0, "window": 310, "probe_interval": 10},
        "machine": {"nproc": 2, "cpu_model": "Test CPU", "mem_total_mb": 1000, "load_avg": "0.01 0.02 0.03"},
        "load_avg_at_end": "0.5 0.1 0.0",
        "total_seconds": 600,
        "agents": agents,
    }


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        os.mkdir(os.path.join(d, "bench"))
        with open(os.path.join(d, "bench", "a.json"), "w") as f:
            json.dump(run_json([agent("upstream", 2.0, 400.0, complete=False, quiet=False, hwm=300_000), agent("syncweave", 30.0, 80.0)]), f)
        with open(os.path.join(d, "bench", "b.json"), "w") as f:
            json.dump(run_json([agent("ceiling", 60.0, 1.0)]), f)
        self.doc = os.path.join(d, "perf.md")
        with open(self.doc, "w") as f:
            f.write(
                "intro\n\n<!-- bench:begin side-by-side bench/a.json bench/b.json -->\nold\n<!-- bench:end -->\n"
                "middle\n<!-- bench:begin targets bench/a.json -->\n<!-- bench:end -->\n"
                "<!-- bench:begin charts t bench/a.json -->\n<!-- bench:end -->\nend\n"
            )

    def tearDown(self):
        self.dir.cleanup()

    def test_each_run_is_compared_with_its_own_ceiling(self):
        d = self.dir.name
        for name, agent_rate, ceiling_rate in (("r1", 80.0, 100.0), ("r2", 80.0, 160.0)):
            with open(os.path.join(d, "bench", f"{name}.json"), "w") as f:
                json.dump(run_json([agent("syncweave", agent_rate, 1.0), agent("ceiling", ceiling_rate, 1.0)]), f)
        with open(self.doc, "w") as f:
            f.write("<!-- bench:begin side-by-side bench/r1.json bench/r2.json -->\n<!-- bench:end -->\n")
        self.assertEqual(report.doc(self.doc, check=False), 0)
        with open(self.doc) as f:
            text = f.read()
        self.assertIn("| P2 as a share of the ceiling | 80 % | 50 % | – | – |", text)

    def test_doc_is_generated_between_markers_and_then_checks_clean(self):
        self.assertEqual(report.doc(self.doc, check=True), 1, "stale before generating")
        self.assertEqual(report.doc(self.doc, check=False), 0)
        with open(self.doc) as f:
            text = f.read()
        self.assertTrue(text.startswith("intro\n"))
        self.assertIn("middle\n", text)
        self.assertTrue(text.endswith("end\n"))
        self.assertNotIn("\nold\n", text)
        # One column per agent across both files, in a fixed order.
        header = next(l for l in text.splitlines() if l.startswith("|  |"))
        self.assertEqual(header, "|  | upstream v0.7.0 | syncweave | ceiling (plain client) |")
        # P2 share of the ceiling, an incomplete P2, and upstream's probe answers.
        self.assertIn("| P2 as a share of the ceiling | 3 % | 50 % | – |", text)
        self.assertIn("≥ 2.0 (400 in 500 s): incomplete at the timeout", text)
        self.assertIn("/healthz 404×31; /readyz 404×31", text)
        self.assertIn("| P2 ≥ 2× | upstream v0.7.0 | ≥ 15.00× | met |", text)
        self.assertIn("| ≤ 3 KB per cached object | – | 2500 B | met |", text)
        for svg in ("t-p1-cdf.svg", "t-timeline.svg"):
            with open(os.path.join(self.dir.name, "bench", svg)) as f:
                content = f.read()
            self.assertTrue(content.startswith("<svg"), svg)
            self.assertIn("<polyline", content)
        self.assertEqual(report.doc(self.doc, check=True), 0)

    def test_a_changed_result_makes_the_check_fail(self):
        report.doc(self.doc, check=False)
        path = os.path.join(self.dir.name, "bench", "b.json")
        with open(path) as f:
            run = json.load(f)
        run["agents"][0]["p2"]["objects_per_second"] = 61.0
        with open(path, "w") as f:
            json.dump(run, f)
        self.assertEqual(report.doc(self.doc, check=True), 1)

    def test_startup_builds_are_labelled_by_their_binary(self):
        run = {"kind": "startup", "agents": [{"agent": "syncweave", "binary": "/tmp/syncweave-179367c",
                                              "ready_seconds": 0.19, "first_copies_seconds": 0.44,
                                              "vm_hwm_kb": 52440, "vm_rss_kb": 45212, "rss_anon_kb": 5632,
                                              "rss_file_kb": 39580, "cpu_seconds": 0.14}]}
        out = report.startup([run], by_binary=True)
        self.assertIn("| 1 | `syncweave-179367c` | 0.19 s | 0.44 s | 51.2 MiB | 44.2 MiB | 5.5 MiB | 38.7 MiB | 0.14 s |", out)

    def test_runs_with_a_wasm_step_are_labelled_by_it(self):
        plain = {"kind": "side-by-side", "options": {"plugin": "none"}, "agents": [agent("syncweave", 50.0, 30.0)]}
        reads = {"kind": "side-by-side", "options": {"plugin": "wasm-reads"}, "agents": [agent("syncweave", 48.0, 31.0)]}
        header = report.side_by_side([plain, reads]).splitlines()[0]
        self.assertIn("| syncweave |", header)
        self.assertIn("| syncweave, --plugin wasm-reads |", header)

    def test_rust_symbols_are_demangled(self):
        self.assertEqual(
            report.demangle("_ZN9syncweave4sync6syncer6Syncer9reconcile17h0123456789abcdefE"),
            "syncweave::sync::syncer::Syncer::reconcile",
        )
        self.assertEqual(report.demangle("_ZN4core3ptr42drop_in_place$LT$alloc..string..String$GT$17habcdefabcdefabcdE"), "core::ptr::drop_in_place<alloc::string::String>")
        self.assertEqual(report.demangle("malloc"), "malloc")

    def test_flame_graph_of_folded_stacks(self):
        svg = report.flame_svg({"agent;main;a;b": 3, "agent;main;c": 1}, "t")
        self.assertIn("b: 3 samples (75.0 %)", svg)
        self.assertIn("c: 1 samples (25.0 %)", svg)


if __name__ == "__main__":
    unittest.main()
