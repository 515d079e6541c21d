//! The self-test gate: a digest is used only once the worked examples it
//! ships in `describe()` pass (run by [`Plugin::run_examples`], the same
//! runner as `syncweave plugin test --examples`). The WasmPlugin
//! controller gates every digest it loads, the resolver every inline
//! `source:`, and the plugin host every built-in (once per digest).

use std::sync::Arc;

use syncweave_runtime::{
    CallPool, ExampleFailure, ExampleOutcome, ExampleVerdict, Plugin, PluginFailure,
};

/// What running a plugin's examples found.
#[derive(Debug, Clone, Default)]
pub struct SelfTest {
    pub passed: usize,
    /// Failed examples, by name, in the plugin's order.
    pub failed: Vec<(String, ExampleFailure)>,
}

impl SelfTest {
    pub fn from_outcomes(outcomes: Vec<ExampleOutcome>) -> SelfTest {
        let mut t = SelfTest::default();
        for o in outcomes {
            match o.verdict {
                ExampleVerdict::Passed => t.passed += 1,
                ExampleVerdict::Failed(f) => t.failed.push((o.name, f)),
            }
        }
        t
    }

    pub fn total(&self) -> usize {
        self.passed + self.failed.len()
    }

    pub fn ok(&self) -> bool {
        self.failed.is_empty()
    }

    /// Which example failed and how (the first in full, the others by
    /// name), or `None` when all passed.
    pub fn failure_summary(&self) -> Option<String> {
        let ((first, why), rest) = self.failed.split_first()?;
        let mut s = format!("example {first:?} failed: {why}");
        if !rest.is_empty() {
            let names: Vec<String> = rest.iter().map(|(n, _)| format!("{n:?}")).collect();
            s.push_str(&format!(" (and {} more: {})", rest.len(), names.join(", ")));
        }
        Some(s)
    }

    /// Whether running again may pass with the same bytes: every failure
    /// is a call that ran out of time (the machine may have been busy).
    pub fn is_transient(&self) -> bool {
        !self.failed.is_empty()
            && self
                .failed
                .iter()
                .all(|(_, f)| matches!(f, ExampleFailure::Call(e) if e.kind.is_transient()))
    }

    /// "all 3 examples passed", "no examples" …, for Ready messages.
    pub fn passed_summary(&self) -> String {
        match self.total() {
            0 => "it ships no examples to self-test".to_string(),
            1 => "its example passed".to_string(),
            n => format!("its {n} examples passed"),
        }
    }
}

/// Run `plugin`'s examples on the call pool (they are guest calls like any
/// other, under the plugin's limits). Fails only when `describe()` does.
pub async fn run(pool: &CallPool, plugin: &Arc<Plugin>) -> Result<SelfTest, PluginFailure> {
    let outcomes = pool.run(plugin, |p| p.run_examples()).await?;
    Ok(SelfTest::from_outcomes(outcomes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use syncweave_runtime::{Difference, FailureKind};

    fn failed(name: &str, f: ExampleFailure) -> ExampleOutcome {
        ExampleOutcome {
            name: name.into(),
            verdict: ExampleVerdict::Failed(f),
        }
    }

    fn mismatch() -> ExampleFailure {
        ExampleFailure::Mismatch(Difference {
            path: "/metadata/labels/stamp".into(),
            expected: "\"v2\"".into(),
            got: "\"v3\"".into(),
        })
    }

    fn timeout() -> ExampleFailure {
        ExampleFailure::Call(PluginFailure::new(
            "p",
            "sha256:00",
            FailureKind::Timeout,
            "call exceeded 100ms",
        ))
    }

    #[test]
    fn the_summary_names_the_failing_example_and_how() {
        let ok = ExampleOutcome {
            name: "fine".into(),
            verdict: ExampleVerdict::Passed,
        };
        let t = SelfTest::from_outcomes(vec![ok.clone()]);
        assert!(t.ok());
        assert_eq!(t.failure_summary(), None);
        assert_eq!(t.passed_summary(), "its example passed");

        let t = SelfTest::from_outcomes(vec![
            ok,
            failed("wrong stamp", mismatch()),
            failed("slow", timeout()),
            failed("other", mismatch()),
        ]);
        assert!(!t.ok());
        assert_eq!((t.passed, t.total()), (1, 4));
        assert_eq!(
            t.failure_summary().unwrap(),
            "example \"wrong stamp\" failed: output differs at /metadata/labels/stamp: \
             expected \"v2\", got \"v3\" (and 2 more: \"slow\", \"other\")"
        );
        assert!(!t.is_transient(), "a wrong answer is not retried");

        let t = SelfTest::from_outcomes(vec![failed("slow", timeout())]);
        assert!(
            t.is_transient(),
            "only timeouts: the machine may have been busy"
        );
        assert!(
            t.failure_summary()
                .unwrap()
                .starts_with("example \"slow\" failed: the call failed: plugin \"p\""),
            "{:?}",
            t.failure_summary()
        );
        assert_eq!(
            SelfTest::default().passed_summary(),
            "it ships no examples to self-test"
        );
    }
}
