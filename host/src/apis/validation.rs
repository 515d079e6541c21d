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

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn dns1035() {
        assert!(dns1035_label("my-agent-1").is_ok());
        assert!(dns1035_label("1agent").is_err());
        assert!(dns1035_label("agent-").is_err());
        assert!(dns1035_label("Agent").is_err());
        assert!(dns1035_label(&"a".repeat(64)).is_err());
    }
}
