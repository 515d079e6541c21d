//! Any template text, however malformed, is parsed and executed to a result
//! or an error: never a panic (which would trap the plugin that renders it).

use proptest::prelude::*;
use serde_json::json;

/// Pieces of Go template syntax, glued in any order.
fn template() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{{"), Just("}}"), Just("{{-"), Just("-}}"), Just(" "), Just("\n"),
        Just("if "), Just("else"), Just("else if "), Just("end"), Just("range "),
        Just("with "), Just("define \"t\""), Just("template \"t\" ."), Just("block \"b\" ."),
        Just("break"), Just("continue"), Just("$x := "), Just("$x = "), Just("$x"), Just("$"),
        Just("."), Just(".a"), Just(".a.b"), Just(".c"), Just("|"), Just("("), Just(")"),
        Just(","), Just("\"s\""), Just("`raw`"), Just("'c'"), Just("1"), Just("-2.5e3"),
        Just("0x1F"), Just("nil"), Just("true"), Just("printf \"%v %d %s\""), Just("len"),
        Just("index"), Just("slice"), Just("eq"), Just("and"), Just("or"), Just("not"),
        Just("default"), Just("toJson"), Just("fromJson"), Just("b64enc"), Just("b64dec"),
        Just("sha3sum"), Just("regexReplaceAll \"(a\" "), Just("repeat 3"), Just("dict"),
        Just("list"), Just("get"), Just("/*"), Just("*/"), Just("text"),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_template_renders_or_fails_cleanly(src in template()) {
        let data = json!({"a": {"b": [1, "two", null]}, "c": "x", "n": 3});
        let _ = syncweave_gotmpl::render(&src, &data);
    }

    #[test]
    fn any_text_renders_or_fails_cleanly(src in "\\PC{0,60}") {
        let _ = syncweave_gotmpl::render(&src, &json!({}));
    }
}
