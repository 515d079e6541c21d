//! Any rendered text, however malformed, decodes to objects or an error:
//! never a panic (which would trap the renderer plugin).

use proptest::prelude::*;

/// Pieces of YAML and JSON syntax, glued in any order.
fn document() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("---\n"), Just("...\n"), Just("\n"), Just("  "), Just("- "), Just("key: "),
        Just("apiVersion: v1\n"), Just("kind: ConfigMap\n"), Just("metadata:\n  name: x\n"),
        Just("&a "), Just("*a"), Just("<<: *a\n"), Just("!!str "), Just("!!int "), Just("!tag "),
        Just("{"), Just("}"), Just("["), Just("]"), Just(", "), Just("\""), Just("'"),
        Just("|\n"), Just(">-\n"), Just("? "), Just(": "), Just("# c\n"), Just("%YAML 1.2\n"),
        Just("yes"), Just("~"), Just("null"), Just("1e3"), Just("0o17"), Just("\t"),
        Just("\\u00e9"), Just("é"), Just("a"),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_document_decodes_or_fails_cleanly(text in document()) {
        let _ = renderer::documents::decode(&text);
    }

    #[test]
    fn any_text_decodes_or_fails_cleanly(text in "\\PC{0,80}") {
        let _ = renderer::documents::decode(&text);
    }
}
