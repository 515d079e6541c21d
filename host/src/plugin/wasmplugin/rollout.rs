//! Staged rollout: which objects a WasmPlugin's canary digest serves.
//!
//! The choice is made per call on the sync path, so it allocates nothing:
//! a fraction compares a hash of the object's identity with a threshold
//! fixed when the rule is built, and a selector looks the object's labels
//! up in place.

use crate::apis::WasmPluginCanary;
use crate::apis::selector::Expression;

pub use crate::apis::wasmplugin::{Labels, Subject};

/// Which objects a canary digest serves.
#[derive(Debug, Clone, PartialEq)]
pub enum CanaryRule {
    /// Objects whose [`subject_hash`] is below `threshold`.
    Fraction { fraction: f64, threshold: u64 },
    /// Objects whose labels match every expression.
    Selector {
        expressions: Vec<Expression>,
        /// The selector as a string, for status and messages.
        text: String,
    },
}

impl CanaryRule {
    /// The rule of a validated `spec.rollout.canary`; `None` when it selects
    /// every object (fraction 1), which is a promotion.
    pub fn from_spec(c: &WasmPluginCanary, field: &str) -> Result<Option<CanaryRule>, String> {
        c.validate(field)?;
        if let Some(fraction) = c.fraction {
            if fraction >= 1.0 {
                return Ok(None);
            }
            // fraction × 2^64, below u64::MAX since fraction < 1.
            let threshold = (fraction * 18_446_744_073_709_551_616.0) as u64;
            return Ok(Some(CanaryRule::Fraction {
                fraction,
                threshold,
            }));
        }
        let sel = c
            .selector
            .as_ref()
            .expect("validated: fraction or selector");
        let selector = crate::apis::selector::from_label_selector(sel)
            .map_err(|e| format!("{field}.selector: {e}"))?;
        Ok(Some(CanaryRule::Selector {
            text: selector.to_string(),
            expressions: selector.into_iter().collect(),
        }))
    }

    /// Whether the canary digest serves `s`.
    pub fn selects(&self, s: &Subject<'_>) -> bool {
        match self {
            CanaryRule::Fraction { threshold, .. } => subject_hash(s) < *threshold,
            CanaryRule::Selector { expressions, .. } => {
                expressions.iter().all(|e| expression_matches(e, &s.labels))
            }
        }
    }

    /// "10% of objects", "objects labelled team=a", for messages.
    pub fn describe(&self) -> String {
        match self {
            CanaryRule::Fraction { fraction, .. } => {
                format!("{}% of objects", fraction * 100.0)
            }
            CanaryRule::Selector { text, .. } => format!("objects matching {text}"),
        }
    }

    /// Stable text for change detection.
    pub fn key(&self) -> String {
        match self {
            CanaryRule::Fraction { fraction, .. } => format!("fraction={fraction}"),
            CanaryRule::Selector { text, .. } => format!("selector={text}"),
        }
    }
}

fn expression_matches(e: &Expression, labels: &Labels<'_>) -> bool {
    match e {
        Expression::In(k, values) => labels.get(k).is_some_and(|v| values.contains(v)),
        Expression::NotIn(k, values) => labels.get(k).is_none_or(|v| !values.contains(v)),
        Expression::Equal(k, value) => labels.get(k) == Some(value.as_str()),
        Expression::NotEqual(k, value) => labels.get(k) != Some(value.as_str()),
        Expression::Exists(k) => labels.get(k).is_some(),
        Expression::DoesNotExist(k) => labels.get(k).is_none(),
    }
}

/// A hash of an object's identity (logical cluster, namespace, name) that
/// never changes between agents, versions or restarts: FNV-1a over the
/// three parts (each followed by a byte no name contains), then a 64-bit
/// finalizer (MurmurHash3's fmix64) so similar names spread over the
/// whole range.
pub fn subject_hash(s: &Subject<'_>) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h = OFFSET;
    for part in [s.cluster, s.namespace.unwrap_or_default(), s.name] {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn subject<'a>(cluster: &'a str, ns: Option<&'a str>, name: &'a str) -> Subject<'a> {
        Subject {
            cluster,
            namespace: ns,
            name,
            labels: Labels::None,
        }
    }

    fn fraction(f: f64) -> Option<CanaryRule> {
        CanaryRule::from_spec(
            &WasmPluginCanary {
                fraction: Some(f),
                selector: None,
            },
            "spec.rollout.canary",
        )
        .unwrap()
    }

    /// The hash is fixed: an object stays on its side across agents,
    /// restarts and releases. These values must never change.
    #[test]
    fn the_identity_hash_is_stable() {
        assert_eq!(
            subject_hash(&subject("2x8fkdtr3b1z", Some("default"), "a")),
            subject_hash(&subject("2x8fkdtr3b1z", Some("default"), "a"))
        );
        let pinned = [
            subject_hash(&subject("2x8fkdtr3b1z", Some("default"), "a")),
            subject_hash(&subject("2x8fkdtr3b1z", None, "a")),
            subject_hash(&subject("", None, "")),
        ];
        assert_eq!(
            pinned,
            // Also computed independently (Python) from the definition.
            [
                0xe9a7_6e44_41a2_cdc2_u64,
                0x30ea_7cd4_badb_8800,
                0x3db8_f5d7_91a7_7001
            ],
            "{pinned:#x?}"
        );
        // The separators keep the parts apart.
        assert_ne!(
            subject_hash(&subject("ab", Some("c"), "d")),
            subject_hash(&subject("a", Some("bc"), "d"))
        );
        assert_ne!(
            subject_hash(&subject("c", Some("ns"), "x")),
            subject_hash(&subject("c", None, "nsx"))
        );
    }

    /// A fraction selects about that share of objects, and raising it only
    /// adds objects (none moves back to stable).
    #[test]
    fn fractions_select_that_share_and_grow_monotonically() {
        let names: Vec<String> = (0..20_000).map(|i| format!("object-{i}")).collect();
        let tenth = fraction(0.1).unwrap();
        let half = fraction(0.5).unwrap();
        let mut in_tenth = 0;
        let mut in_half = 0;
        for (i, n) in names.iter().enumerate() {
            let cluster = if i % 2 == 0 {
                "clusterone"
            } else {
                "clustertwo"
            };
            let s = subject(cluster, Some("default"), n);
            let (t, h) = (tenth.selects(&s), half.selects(&s));
            assert!(!t || h, "{n} is in the 10% canary but not in the 50% one");
            in_tenth += usize::from(t);
            in_half += usize::from(h);
        }
        assert!(
            (1_800..=2_200).contains(&in_tenth),
            "{in_tenth} of 20000 at 0.1"
        );
        assert!(
            (9_600..=10_400).contains(&in_half),
            "{in_half} of 20000 at 0.5"
        );
        assert_eq!(fraction(1.0), None, "1 promotes: no canary");
        let tiny = fraction(f64::MIN_POSITIVE).unwrap();
        assert!(names.iter().all(|n| !tiny.selects(&subject("c", None, n))));
        assert_eq!(tenth.describe(), "10% of objects");
    }

    #[test]
    fn selectors_match_the_labels_in_place() {
        let rule = CanaryRule::from_spec(
            &WasmPluginCanary {
                fraction: None,
                selector: Some(LabelSelector {
                    match_labels: Some([("team".to_string(), "a".to_string())].into()),
                    match_expressions: Some(vec![LabelSelectorRequirement {
                        key: "tier".into(),
                        operator: "NotIn".into(),
                        values: Some(vec!["prod".into()]),
                    }]),
                }),
            },
            "spec.rollout.canary",
        )
        .unwrap()
        .unwrap();
        assert_eq!(rule.describe(), "objects matching team=a,tier notin (prod)");
        let labels: BTreeMap<String, String> = [("team".to_string(), "a".to_string())].into();
        let s = |labels| Subject {
            cluster: "c",
            namespace: None,
            name: "x",
            labels,
        };
        assert!(rule.selects(&s(Labels::Map(&labels))));
        let prod: BTreeMap<String, String> = [
            ("team".to_string(), "a".to_string()),
            ("tier".to_string(), "prod".to_string()),
        ]
        .into();
        assert!(!rule.selects(&s(Labels::Map(&prod))));
        assert!(!rule.selects(&s(Labels::None)));

        // The same object as JSON (what a namer sees) selects the same way.
        let obj = json!({"metadata": {"name": "x", "namespace": "ns", "labels": {"team": "a"}}});
        let js = Subject::of_json("c", &obj);
        assert_eq!((js.name, js.namespace), ("x", Some("ns")));
        assert!(rule.selects(&js));
        let other = json!({"metadata": {"name": "x", "labels": {"team": "b"}}});
        assert!(!rule.selects(&Subject::of_json("c", &other)));
        assert!(!rule.selects(&Subject::of_json("c", &json!({}))));
    }

    #[test]
    fn bad_canaries_name_the_field() {
        let f = "spec.rollout.canary";
        let err = |c: WasmPluginCanary| CanaryRule::from_spec(&c, f).unwrap_err();
        for bad in [0.0, -0.5, 1.5, f64::NAN] {
            let e = err(WasmPluginCanary {
                fraction: Some(bad),
                selector: None,
            });
            assert!(e.starts_with("spec.rollout.canary.fraction: "), "{e}");
            assert!(e.contains("outside (0, 1]"), "{e}");
        }
        let e = err(WasmPluginCanary::default());
        assert!(e.starts_with("spec.rollout.canary: sets neither"), "{e}");
        let e = err(WasmPluginCanary {
            fraction: Some(0.5),
            selector: Some(LabelSelector {
                match_labels: Some([("a".to_string(), "b".to_string())].into()),
                ..Default::default()
            }),
        });
        assert!(e.contains("sets both fraction and selector"), "{e}");
        let e = err(WasmPluginCanary {
            fraction: None,
            selector: Some(LabelSelector::default()),
        });
        assert!(
            e.starts_with("spec.rollout.canary.selector: is empty"),
            "{e}"
        );
        let e = err(WasmPluginCanary {
            fraction: None,
            selector: Some(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "a".into(),
                    operator: "Maybe".into(),
                    values: None,
                }]),
                ..Default::default()
            }),
        });
        assert!(e.starts_with("spec.rollout.canary.selector: "), "{e}");
        assert!(e.contains("unknown operator"), "{e}");
    }
}
