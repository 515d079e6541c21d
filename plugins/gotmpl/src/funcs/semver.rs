//! Sprig's `semver` and `semverCompare`, with Masterminds/semver v3's
//! lenient version parsing and constraint rules (`^`, `~`, x-ranges,
//! hyphen ranges, `||`, and prereleases only matching prerelease
//! constraints).

use std::cmp::Ordering;
use std::sync::OnceLock;

use regex::Regex;

use super::{Entry, Ty, sig, str_arg};
use crate::value::{Object, Value};

pub(crate) const FUNCS: &[Entry] = &[
    ("semver", sig(&[Ty::Str], None), |a| {
        Version::parse(str_arg(&a[0])).map(Value::object)
    }),
    ("semverCompare", sig(&[Ty::Str, Ty::Str], None), |a| {
        let c = Constraints::parse(str_arg(&a[0]))?;
        let v = Version::parse(str_arg(&a[1]))?;
        Ok(Value::Bool(c.check(&v)))
    }),
];

const CV: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";

struct Res {
    version: Regex,
    constraint: Regex,
    range: Regex,
    find: Regex,
    valid: Regex,
}

fn res() -> &'static Res {
    static R: OnceLock<Res> = OnceLock::new();
    R.get_or_init(|| {
        let build = |p: &str| Regex::new(p).unwrap_or_else(|e| panic!("built-in semver pattern is invalid: {e}"));
        Res {
            version: build(r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$"),
            constraint: build(&format!(r"^\s*({OPS})\s*({CV})\s*$")),
            range: build(&format!(r"\s*({CV})\s+-\s+({CV})\s*")),
            find: build(&format!(r"({OPS})\s*({CV})")),
            valid: build(&format!(r"^(\s*({OPS})\s*({CV})\s*)((?:\s+|,\s*)({OPS})\s*({CV})\s*)*$")),
        }
    })
}

/// A parsed semantic version (Masterminds' `*semver.Version`).
#[derive(Clone, Debug)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

fn valid_ident(p: &str, allow_leading_zero: bool) -> bool {
    p.split('.').all(|part| {
        if part.bytes().all(|c| c.is_ascii_digit()) {
            allow_leading_zero || part.len() <= 1 || !part.starts_with('0')
        } else {
            part.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
        }
    })
}

impl Version {
    pub fn parse(v: &str) -> Result<Version, String> {
        let caps = res()
            .version
            .captures(v)
            .ok_or("Invalid Semantic Version")?;
        let num = |i: usize| -> Result<u64, String> {
            match caps.get(i) {
                None => Ok(0),
                Some(m) => m
                    .as_str()
                    .trim_start_matches('.')
                    .parse::<u64>()
                    .map_err(|e| format!("Error parsing version segment: {e}")),
            }
        };
        let pre = caps
            .get(5)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        let metadata = caps
            .get(8)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        if !pre.is_empty() && !valid_ident(&pre, false) {
            return Err(
                if pre
                    .split('.')
                    .any(|p| p.bytes().all(|c| c.is_ascii_digit()))
                {
                    "Version segment starts with 0".into()
                } else {
                    "Invalid Prerelease string".into()
                },
            );
        }
        if !metadata.is_empty() && !valid_ident(&metadata, true) {
            return Err("Invalid Metadata string".into());
        }
        Ok(Version {
            major: num(1)?,
            minor: num(2)?,
            patch: num(3)?,
            pre,
            metadata,
            original: v.to_string(),
        })
    }

    fn compare(&self, o: &Version) -> Ordering {
        self.major
            .cmp(&o.major)
            .then(self.minor.cmp(&o.minor))
            .then(self.patch.cmp(&o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &o.pre),
            })
    }
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let (ap, bp): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for i in 0..ap.len().max(bp.len()) {
        let (s, o) = (
            ap.get(i).copied().unwrap_or(""),
            bp.get(i).copied().unwrap_or(""),
        );
        let d = compare_pre_part(s, o);
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => s.cmp(o),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Ok(x), Ok(y)) => x.cmp(&y),
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

impl Object for Version {
    fn type_name(&self) -> String {
        "*semver.Version".into()
    }

    fn kind_name(&self) -> &'static str {
        "ptr"
    }

    fn has_method(&self, name: &str) -> bool {
        matches!(
            name,
            "Major"
                | "Minor"
                | "Patch"
                | "Prerelease"
                | "Metadata"
                | "Original"
                | "String"
                | "Compare"
                | "LessThan"
                | "GreaterThan"
                | "Equal"
        )
    }

    fn call_method(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        let other = || -> Result<Version, String> {
            match args {
                [Value::Object(o)] if o.type_name() == "*semver.Version" => {
                    Version::parse(&o.display())
                }
                [v] => Err(format!(
                    "wrong type for value; expected *semver.Version; got {}",
                    v.type_name()
                )),
                _ => Err(format!(
                    "wrong number of args for {name}: want 1 got {}",
                    args.len()
                )),
            }
        };
        Ok(match name {
            "Major" => Value::Int64(self.major as i64),
            "Minor" => Value::Int64(self.minor as i64),
            "Patch" => Value::Int64(self.patch as i64),
            "Prerelease" => Value::from(self.pre.as_str()),
            "Metadata" => Value::from(self.metadata.as_str()),
            "Original" => Value::from(self.original.as_str()),
            "String" => Value::from(self.to_string()),
            "Compare" => Value::Int(match self.compare(&other()?) {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            }),
            "LessThan" => Value::Bool(self.compare(&other()?) == Ordering::Less),
            "GreaterThan" => Value::Bool(self.compare(&other()?) == Ordering::Greater),
            "Equal" => Value::Bool(self.compare(&other()?) == Ordering::Equal),
            _ => return Err(format!("can't call method {name}")),
        })
    }

    fn display(&self) -> String {
        self.to_string()
    }

    fn to_json(&self) -> Option<Value> {
        Some(Value::from(self.to_string()))
    }
}

#[derive(Debug)]
struct Constraint {
    op: String,
    con: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

impl Constraint {
    fn parse(c: &str) -> Result<Constraint, String> {
        if c.is_empty() {
            return Ok(Constraint {
                op: String::new(),
                con: Version::parse("0.0.0")?,
                minor_dirty: false,
                patch_dirty: false,
                dirty: true,
            });
        }
        let m = res()
            .constraint
            .captures(c)
            .ok_or_else(|| format!("improper constraint: {c}"))?;
        let g = |i: usize| m.get(i).map(|x| x.as_str()).unwrap_or("");
        let (major, minor, patch, pre) = (g(3), g(4), g(5), g(6));
        let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
        let ver = if is_x(major) || major.is_empty() {
            dirty = true;
            format!("0.0.0{pre}")
        } else if minor.is_empty() || is_x(minor.trim_start_matches('.')) {
            minor_dirty = true;
            dirty = true;
            format!("{major}.0.0{pre}")
        } else if patch.is_empty() || is_x(patch.trim_start_matches('.')) {
            dirty = true;
            patch_dirty = true;
            format!("{major}{minor}.0{pre}")
        } else {
            g(2).to_string()
        };
        let con = Version::parse(&ver).map_err(|_| "constraint Parser Error".to_string())?;
        Ok(Constraint {
            op: g(1).to_string(),
            con,
            minor_dirty,
            patch_dirty,
            dirty,
        })
    }

    fn check(&self, v: &Version) -> bool {
        let c = &self.con;
        let pre_block = !v.pre.is_empty() && c.pre.is_empty();
        match self.op.as_str() {
            "" | "=" => {
                if pre_block {
                    return false;
                }
                if self.dirty {
                    self.tilde(v)
                } else {
                    v.compare(c) == Ordering::Equal
                }
            }
            "!=" => {
                if self.dirty {
                    if pre_block {
                        return false;
                    }
                    if c.major != v.major {
                        return true;
                    }
                    if c.minor != v.minor && !self.minor_dirty {
                        return true;
                    } else if self.minor_dirty {
                        return false;
                    } else if c.patch != v.patch && !self.patch_dirty {
                        return true;
                    } else if self.patch_dirty {
                        if !v.pre.is_empty() || !c.pre.is_empty() {
                            return compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
                        }
                        return false;
                    }
                }
                v.compare(c) != Ordering::Equal
            }
            ">" => {
                if pre_block {
                    return false;
                }
                if !self.dirty {
                    return v.compare(c) == Ordering::Greater;
                }
                if v.major > c.major {
                    true
                } else if v.major < c.major || self.minor_dirty {
                    false
                } else if self.patch_dirty {
                    v.minor > c.minor
                } else {
                    v.compare(c) == Ordering::Greater
                }
            }
            "<" => !pre_block && v.compare(c) == Ordering::Less,
            ">=" | "=>" => !pre_block && v.compare(c) != Ordering::Less,
            "<=" | "=<" => {
                if pre_block {
                    return false;
                }
                if !self.dirty {
                    return v.compare(c) != Ordering::Greater;
                }
                !(v.major > c.major
                    || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            "~" | "~>" => !pre_block && self.tilde(v),
            "^" => {
                if pre_block || v.compare(c) == Ordering::Less {
                    return false;
                }
                if c.major > 0 || self.minor_dirty {
                    return v.major == c.major;
                }
                if v.major > 0 {
                    return false;
                }
                if c.minor > 0 || self.patch_dirty {
                    return v.minor == c.minor;
                }
                if v.minor > 0 {
                    return false;
                }
                c.patch == v.patch
            }
            _ => false,
        }
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.con;
        if !v.pre.is_empty() && c.pre.is_empty() {
            return false;
        }
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        if v.major != c.major {
            return false;
        }
        v.minor == c.minor || self.minor_dirty
    }
}

struct Constraints {
    ors: Vec<Vec<Constraint>>,
}

impl Constraints {
    fn parse(c: &str) -> Result<Constraints, String> {
        // Hyphen ranges "1.2 - 1.4" become ">= 1.2, <= 1.4".
        let mut c = c.to_string();
        let ranges: Vec<(String, String, String)> = res()
            .range
            .captures_iter(&c)
            .map(|m| {
                (
                    m[0].to_string(),
                    m.get(1).map(|x| x.as_str().to_string()).unwrap_or_default(),
                    m.get(11)
                        .map(|x| x.as_str().to_string())
                        .unwrap_or_default(),
                )
            })
            .collect();
        for (whole, a, b) in ranges {
            c = c.replacen(&whole, &format!(">= {a}, <= {b} "), 1);
        }
        let mut ors = Vec::new();
        for part in c.split("||") {
            if !res().valid.is_match(part) {
                return Err(format!("improper constraint: {part}"));
            }
            let mut found: Vec<String> = res()
                .find
                .find_iter(part)
                .map(|m| m.as_str().to_string())
                .collect();
            if found.is_empty() {
                found.push(part.to_string());
            }
            ors.push(
                found
                    .iter()
                    .map(|s| Constraint::parse(s))
                    .collect::<Result<Vec<_>, _>>()?,
            );
        }
        Ok(Constraints { ors })
    }

    fn check(&self, v: &Version) -> bool {
        self.ors.iter().any(|and| and.iter().all(|c| c.check(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(c: &str, v: &str) -> bool {
        Constraints::parse(c)
            .unwrap()
            .check(&Version::parse(v).unwrap())
    }

    #[test]
    fn versions_parse_leniently() {
        assert_eq!(Version::parse("v1.2").unwrap().to_string(), "1.2.0");
        assert_eq!(
            Version::parse("1.2.3-beta.1+b5").unwrap().to_string(),
            "1.2.3-beta.1+b5"
        );
        assert!(Version::parse("1.2.3.4").is_err());
        assert!(Version::parse("1.2.3-01").is_err());
    }

    #[test]
    fn constraints_match_masterminds_semver() {
        assert!(cmp(">=1.2.0", "1.2.3"));
        assert!(!cmp(">=1.2.0", "1.1.9"));
        assert!(cmp("^1.2", "1.9.0"));
        assert!(!cmp("^1.2", "2.0.0"));
        assert!(cmp("~1.2.3", "1.2.9"));
        assert!(!cmp("~1.2.3", "1.3.0"));
        assert!(cmp("1.2.x", "1.2.7"));
        assert!(cmp("1.0 - 2.0", "1.5.0"));
        assert!(cmp("<1.0 || >=2.0", "2.1.0"));
        assert!(
            !cmp(">=1.0", "1.5.0-beta"),
            "prereleases need a prerelease constraint"
        );
        assert!(cmp(">=1.5.0-alpha", "1.5.0-beta"));
        assert!(cmp(">1.0, <2.0", "1.5.0"));
        assert!(Constraints::parse("><1").is_err());
    }
}
