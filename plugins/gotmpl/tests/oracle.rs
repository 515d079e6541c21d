//! Differential test against Go: testdata/golden.json holds the output (or
//! error) of Go's text/template / html/template with sprig v3.3.0 for every
//! case in testdata/cases.json, produced by testdata/oracle (`go run . <
//! ../cases.json > ../golden.json`). Outputs must match byte for byte; where
//! Go fails, we must fail too, and for most cases with Go's exact message.

use serde_json::Value as Json;
use syncweave_gotmpl::{ExecOptions, Template};

/// Cases whose error text legitimately differs from Go's (the failure itself
/// must still happen): Go reports reflection internals or panics there.
const LOOSE_ERRORS: &[&str] = &[
    // Go reports the byte offset of the incomplete quantum differently.
    "len-missing",
    // Go panics inside reflect ("reflect: slice index out of range").
    "sprig-substr-panic",
    "sprig-first-error",
    // Go's regexp error text differs in detail from the regex crate's.
    "sprig-regex-invalid-find",
    // The semver library's messages are not reproduced word for word.
    "sprig-semver-invalid",
    "sprig-semvercompare-bad",
    // Functions cannot be values here; Go complains about the argument type.
    "call-error",
    // Go's JSON syntax errors quote byte offsets and characters differently.
    "sprig-mustfromjson-invalid",
];

/// Cases where our output differs from Go's on purpose.
const KNOWN_DIFFERENCES: &[&str] = &[
    // html/template also escapes a '<' in template text that does not start
    // an HTML tag; we escape action output only (see the crate docs).
    "html-template-call",
    // Go strings may hold invalid UTF-8 after byte slicing (trunc, substr);
    // ours replace the cut character with U+FFFD (3 bytes), as Go's JSON
    // encoding of the result would.
    "trunc-unicode",
];

fn run(case: &Json) -> Result<String, String> {
    let src = case["template"].as_str().unwrap_or_default();
    let data = case
        .get("data")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({}));
    let opts = ExecOptions {
        html_escape: case.get("html").and_then(Json::as_bool).unwrap_or(false),
        ..Default::default()
    };
    let t = Template::parse(src).map_err(|e| e.to_string())?;
    t.execute(&data, &opts).map_err(|e| e.to_string())
}

/// Go prints parse errors as "template: NAME:LINE: msg"; ours add the column.
fn normalize_error(e: &str) -> String {
    let e = e.strip_prefix("html/").unwrap_or(e);
    // "template: template:1:5: executing ..." and "template: template:1: ..."
    let mut parts: Vec<&str> = e.splitn(4, ':').collect();
    if parts.len() == 4
        && parts[3]
            .trim_start()
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    {
        // LINE:COL present: drop the column for comparison with parse errors.
        let rest = parts[3];
        if let Some((col, tail)) = rest.split_once(':')
            && col.trim().chars().all(|c| c.is_ascii_digit())
            && !tail.starts_with(" executing")
        {
            parts[3] = tail;
            return parts.join(":");
        }
    }
    e.to_string()
}

#[test]
fn matches_go_text_template_and_sprig() {
    let golden: Vec<Json> = serde_json::from_str(include_str!("../testdata/golden.json"))
        .expect("golden.json is valid JSON");
    let mut failures = Vec::new();
    for case in &golden {
        let name = case["name"].as_str().unwrap_or_default();
        if KNOWN_DIFFERENCES.contains(&name) {
            continue;
        }
        let got = run(case);
        match (
            case.get("output").and_then(Json::as_str),
            case.get("error").and_then(Json::as_str),
            &got,
        ) {
            (Some(want), _, Ok(out)) if want == out => {}
            (Some(want), _, _) => {
                failures.push(format!("{name}: want output {want:?}, got {got:?}"))
            }
            (None, Some(want_err), Err(e)) => {
                if !LOOSE_ERRORS.contains(&name) && normalize_error(e) != normalize_error(want_err)
                {
                    failures.push(format!(
                        "{name}: error text differs\n   go:   {want_err}\n   ours: {e}"
                    ));
                }
            }
            (None, Some(want_err), Ok(out)) => failures.push(format!(
                "{name}: want error {want_err:?}, got output {out:?}"
            )),
            (None, None, _) => {
                failures.push(format!("{name}: golden entry has neither output nor error"))
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from Go:\n{}",
        failures.len(),
        golden.len(),
        failures.join("\n")
    );
}
