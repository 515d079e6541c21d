//! Small validators for Kubernetes names.

/// A DNS-1035 label: lower-case alphanumerics and '-', starting with a
/// letter, ending with an alphanumeric, at most 63 characters.
pub fn dns1035_label(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 63 {
        return Err("must be 1 to 63 characters long");
    }
    if !b[0].is_ascii_lowercase() {
        return Err("must start with a lower-case letter");
    }
    if !b[b.len() - 1].is_ascii_lowercase() && !b[b.len() - 1].is_ascii_digit() {
        return Err("must end with a lower-case letter or digit");
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    {
        return Err("may contain only lower-case letters, digits and '-'");
    }
    Ok(())
}

/// A DNS-1123 label (namespace names): lower-case alphanumerics and '-',
/// starting and ending with an alphanumeric, at most 63 characters.
pub fn dns1123_label(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 63 {
        return Err("must be 1 to 63 characters long");
    }
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !alnum(&b[0]) || !alnum(&b[b.len() - 1]) {
        return Err("must start and end with a lower-case letter or digit");
    }
    if !b.iter().all(|c| alnum(c) || *c == b'-') {
        return Err("may contain only lower-case letters, digits and '-'");
    }
    Ok(())
}

/// A qualified name (label and annotation keys): an optional DNS-subdomain
/// prefix and `/`, then a name of at most 63 alphanumerics, '-', '_' or
/// '.', starting and ending with an alphanumeric.
pub fn qualified_name(s: &str) -> Result<(), &'static str> {
    let (prefix, name) = match s.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        let ok = !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                let b = part.as_bytes();
                !b.is_empty()
                    && b.len() <= 63
                    && b[0].is_ascii_alphanumeric()
                    && b[b.len() - 1].is_ascii_alphanumeric()
                    && b.iter()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            });
        if !ok {
            return Err("has a prefix that is not a lower-case DNS subdomain");
        }
    }
    if name.is_empty() || name.len() > 63 {
        return Err("must have a name part of 1 to 63 characters");
    }
    label_value(name).map_err(|_| {
        "must have a name part of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
    })
}

/// A label value: empty, or at most 63 alphanumerics, '-', '_' or '.',
/// starting and ending with an alphanumeric.
pub fn label_value(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Ok(());
    }
    if b.len() > 63 {
        return Err("must be at most 63 characters long");
    }
    if !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric() {
        return Err("must start and end with a letter or digit");
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        return Err("may contain only letters, digits, '-', '_' and '.'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_and_label_values() {
        for ok in ["team", "example.com/team", "a.b-c/x_y.z", "A1"] {
            assert!(qualified_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/team",
            "Example.com/team",
            "example.com/",
            "-x",
            "a/b/c",
            &"x".repeat(64),
        ] {
            assert!(qualified_name(bad).is_err(), "{bad}");
        }
        for ok in ["", "blue", "a-b_c.d"] {
            assert!(label_value(ok).is_ok(), "{ok}");
        }
        for bad in ["-a", "a b", &"v".repeat(64)] {
            assert!(label_value(bad).is_err(), "{bad}");
        }
    }
    #[test]
    fn dns1035() {
        assert!(dns1035_label("my-agent-1").is_ok());
        assert!(dns1035_label("1agent").is_err());
        assert!(dns1035_label("agent-").is_err());
        assert!(dns1035_label("Agent").is_err());
        assert!(dns1035_label(&"a".repeat(64)).is_err());
    }
}
