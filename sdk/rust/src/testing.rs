//! Run a plugin natively, through the same JSON-string adapters the component
//! exports use, so unit tests exercise exactly what the host will call. 0.2 plugins
//! (reads, reports, context values) run through [`v2`].
//!
//! ```no_run
//! # use syncweave_plugin::{Context, Mutator, Object, PluginError, PluginInfo, Value};
//! # struct MyPlugin;
//! # impl Mutator for MyPlugin {
//! #     fn info() -> PluginInfo { PluginInfo::new("p", "0", "") }
//! #     fn mutate(_: &Context, _: &Value, _: &mut Object<'_>, _: Option<&Object<'_>>) -> Result<(), PluginError> { Ok(()) }
//! # }
//! #[test]
//! fn examples_hold() {
//!     syncweave_plugin::testing::check_mutator_examples::<MyPlugin>().unwrap();
//! }
//! ```
use crate::{
    Context, Fixture, Mutator, Namer, ObjectName, PluginError, Projector, Renderer, Value,
};

pub mod v2;

/// Calls the plugin's `mutate` export with JSON text, as the host would.
pub fn mutate<P: Mutator>(
    ctx: &Context,
    config: &Value,
    object: &Value,
    other: Option<&Value>,
) -> Result<Value, PluginError> {
    let other = other.map(Value::to_string);
    let out = crate::__private::mutate::<P>(
        ctx,
        &config.to_string(),
        &object.to_string(),
        other.as_deref(),
    )?;
    Ok(serde_json::from_str(&out).expect("the adapter serialises valid JSON"))
}

/// Calls the plugin's `name` export with JSON text, as the host would.
pub fn name<P: Namer>(
    ctx: &Context,
    config: &Value,
    object: &Value,
) -> Result<ObjectName, PluginError> {
    crate::__private::name::<P>(ctx, &config.to_string(), &object.to_string())
}

/// Calls the plugin's `project` export with JSON text, as the host would.
pub fn project<P: Projector>(config: &Value, crd: &Value) -> Result<Value, PluginError> {
    let out = crate::__private::project::<P>(&config.to_string(), &crd.to_string())?;
    Ok(serde_json::from_str(&out).expect("the adapter serialises valid JSON"))
}

/// Calls the plugin's `render` export with JSON text, as the host would.
pub fn render<P: Renderer>(
    ctx: &Context,
    config: &Value,
    template: &str,
    values: &Value,
) -> Result<Vec<Value>, PluginError> {
    let out =
        crate::__private::render::<P>(ctx, &config.to_string(), template, &values.to_string())?;
    Ok(out
        .iter()
        .map(|doc| serde_json::from_str(doc).expect("the adapter serialises valid JSON"))
        .collect())
}

fn check(
    examples: &[Fixture],
    validate: fn(&Value) -> Result<(), String>,
    run: impl Fn(&Fixture) -> Result<Value, PluginError>,
) -> Result<usize, String> {
    if examples.is_empty() {
        return Err("the plugin publishes no examples".into());
    }
    for fixture in examples {
        validate(&fixture.config).map_err(|err| {
            format!(
                "example {:?}: config rejected by validate_config: {err}",
                fixture.name
            )
        })?;
        let actual =
            run(fixture).map_err(|err| format!("example {:?} failed: {err}", fixture.name))?;
        if let Some(expected) = &fixture.expected
            && &actual != expected
        {
            return Err(format!(
                "example {:?}: expected {expected}, got {actual}",
                fixture.name
            ));
        }
    }
    Ok(examples.len())
}

/// Runs every example of a mutator in [`Context::fixture`] and compares the output;
/// returns how many ran.
pub fn check_mutator_examples<P: Mutator>() -> Result<usize, String> {
    let ctx = Context::fixture();
    check(&P::info().examples, P::validate_config, |f| {
        mutate::<P>(&ctx, &f.config, &f.input, None)
    })
}

/// Runs every example of a namer in [`Context::fixture`]; expected outputs are
/// `{"name": …, "namespace": …}`.
pub fn check_namer_examples<P: Namer>() -> Result<usize, String> {
    let ctx = Context::fixture();
    check(&P::info().examples, P::validate_config, |f| {
        name::<P>(&ctx, &f.config, &f.input).map(|n| n.to_json())
    })
}

/// Runs every example of a projector and compares the projected CRDs.
pub fn check_projector_examples<P: Projector>() -> Result<usize, String> {
    check(&P::info().examples, P::validate_config, |f| {
        project::<P>(&f.config, &f.input)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Object, PluginInfo, json};

    struct Upper;

    impl Mutator for Upper {
        fn info() -> PluginInfo {
            PluginInfo::new("upper", "0.0.1", "upper-cases a field").example(
                Fixture::new(
                    "name",
                    json!({"path": "spec.name"}),
                    json!({"spec": {"name": "a"}}),
                )
                .expect(json!({"spec": {"name": "A"}})),
            )
        }

        fn validate_config(config: &Value) -> Result<(), String> {
            match config.get("path") {
                Some(Value::String(_)) => Ok(()),
                _ => Err("path: must be a string".into()),
            }
        }

        fn mutate(
            _: &Context,
            config: &Value,
            object: &mut Object<'_>,
            other: Option<&Object<'_>>,
        ) -> Result<(), PluginError> {
            let p = config["path"]
                .as_str()
                .ok_or_else(|| PluginError::InvalidConfig("path: must be a string".into()))?;
            let current = object.get_string(p);
            object
                .set(p, current.to_uppercase())
                .map_err(|e| PluginError::InvalidConfig(e.to_string()))?;
            if let Some(other) = other {
                object.set("seenOther", other.to_value()).unwrap();
            }
            Ok(())
        }
    }

    #[test]
    fn adapters_round_trip_json() {
        let ctx = Context::fixture();
        let out = mutate::<Upper>(
            &ctx,
            &json!({"path": "spec.name"}),
            &json!({"spec": {"name": "x"}}),
            Some(&json!({"kind": "Other"})),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"name": "X"}, "seenOther": {"kind": "Other"}})
        );
        assert_eq!(check_mutator_examples::<Upper>(), Ok(1));
    }

    #[test]
    fn adapters_classify_bad_json() {
        let ctx = Context::fixture();
        let err = crate::__private::mutate::<Upper>(&ctx, "{", "{}", None).unwrap_err();
        assert!(
            matches!(err, PluginError::InvalidConfig(ref m) if m.contains("not valid JSON")),
            "{err}"
        );
        let err =
            crate::__private::mutate::<Upper>(&ctx, "{\"path\":\"a\"}", "nope", None).unwrap_err();
        assert!(
            matches!(err, PluginError::InvalidInput(ref m) if m.contains("object")),
            "{err}"
        );
        let err = crate::__private::mutate::<Upper>(&ctx, "", "{}", None).unwrap_err();
        assert_eq!(
            err,
            PluginError::InvalidConfig("path: must be a string".into())
        );
        assert_eq!(
            crate::__private::validate_config("", Upper::validate_config),
            Err("path: must be a string".into())
        );
    }

    #[test]
    fn describe_serialises_examples() {
        let raw = crate::__private::RawInfo::from(Upper::info());
        assert_eq!(raw.examples[0].config, r#"{"path":"spec.name"}"#);
        assert_eq!(
            raw.examples[0].expected.as_deref(),
            Some(r#"{"spec":{"name":"A"}}"#)
        );
        assert!(raw.config_schema.is_none());
    }

    #[test]
    fn example_mismatch_is_reported() {
        struct Broken;
        impl Mutator for Broken {
            fn info() -> PluginInfo {
                PluginInfo::new("broken", "0", "").example(
                    Fixture::new("id", json!(null), json!({"a": 1})).expect(json!({"a": 2})),
                )
            }
            fn mutate(
                _: &Context,
                _: &Value,
                _: &mut Object<'_>,
                _: Option<&Object<'_>>,
            ) -> Result<(), PluginError> {
                Ok(())
            }
        }
        let err = check_mutator_examples::<Broken>().unwrap_err();
        assert!(err.contains("expected {\"a\":2}, got {\"a\":1}"), "{err}");
    }
}
