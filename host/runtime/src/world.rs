//! Which plugin world a component implements, read from its exports.

use std::fmt;

use wasmtime::Engine;
use wasmtime::component::Component;

/// Package every plugin interface lives in.
pub const PACKAGE: &str = "syncweave:plugin";
/// The contract version this host implements; any 0.1.x plugin is accepted.
pub const CONTRACT_VERSION: &str = "0.1.0";

/// The role a plugin plays, one per WIT world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum World {
    Mutator,
    Namer,
    Projector,
    Renderer,
}

impl World {
    pub const ALL: [World; 4] = [
        World::Mutator,
        World::Namer,
        World::Projector,
        World::Renderer,
    ];

    /// The WIT world name (`mutator`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            World::Mutator => "mutator",
            World::Namer => "namer",
            World::Projector => "projector",
            World::Renderer => "renderer",
        }
    }

    /// The role interface this world exports beside `meta`.
    pub fn role_interface(self) -> &'static str {
        match self {
            World::Mutator => "mutation",
            World::Namer => "naming",
            World::Projector => "projection",
            World::Renderer => "rendering",
        }
    }

    pub fn parse(s: &str) -> Option<World> {
        World::ALL.into_iter().find(|w| w.as_str() == s)
    }
}

impl fmt::Display for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An import or export name split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ItemName<'a> {
    /// `syncweave:plugin`, `wasi:cli`, or empty for plain names.
    pub package: &'a str,
    /// Interface name, or the whole name for plain (non-interface) items.
    pub interface: &'a str,
    pub version: Option<&'a str>,
}

pub(crate) fn split_name(name: &str) -> ItemName<'_> {
    let (path, version) = match name.split_once('@') {
        Some((p, v)) => (p, Some(v)),
        None => (name, None),
    };
    match path.rsplit_once('/') {
        Some((package, interface)) => ItemName {
            package,
            interface,
            version,
        },
        None => ItemName {
            package: "",
            interface: path,
            version,
        },
    }
}

/// Same major and (for 0.x) minor version as the host's contract.
fn version_compatible(v: &str) -> bool {
    let mut ours = CONTRACT_VERSION.split('.');
    let mut theirs = v.split('.');
    let (Some(om), Some(on)) = (ours.next(), ours.next()) else {
        return false;
    };
    let (Some(tm), Some(tn)) = (theirs.next(), theirs.next()) else {
        return false;
    };
    om == tm && (om != "0" || on == tn)
}

/// What a component exports and imports, and the world that fits it.
#[derive(Debug, Clone)]
pub struct Shape {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    pub world: Result<World, String>,
}

impl Shape {
    pub fn imports_wasi(&self) -> bool {
        self.imports.iter().any(|i| i.starts_with("wasi:"))
    }
}

/// Inspect a compiled component's type and decide its world. The error text
/// says what the component exports and what would have fitted.
pub fn shape(engine: &Engine, component: &Component) -> Shape {
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
    let world = world_from_exports(&exports);
    Shape {
        exports,
        imports,
        world,
    }
}

pub(crate) fn world_from_exports(exports: &[String]) -> Result<World, String> {
    let ours: Vec<ItemName<'_>> = exports
        .iter()
        .map(|e| split_name(e))
        .filter(|n| n.package == PACKAGE)
        .collect();
    if let Some(bad) = ours
        .iter()
        .find(|n| !n.version.is_some_and(version_compatible))
    {
        return Err(format!(
            "this component was built against {PACKAGE}@{}, but this host implements \
             {PACKAGE}@{CONTRACT_VERSION} (any 0.1.x); rebuild it against the host's WIT",
            bad.version.unwrap_or("<unversioned>")
        ));
    }
    let has = |iface: &str| ours.iter().any(|n| n.interface == iface);
    let roles: Vec<World> = World::ALL
        .into_iter()
        .filter(|w| has(w.role_interface()))
        .collect();
    let listed = if exports.is_empty() {
        "nothing".to_string()
    } else {
        exports.join(", ")
    };
    let expected = World::ALL
        .iter()
        .map(|w| format!("{w} (meta + {})", w.role_interface()))
        .collect::<Vec<_>>()
        .join(", ");
    match roles.as_slice() {
        [world] if has("meta") => Ok(*world),
        [world] => Err(format!(
            "this component exports {listed}, expected world {world}: it lacks \
             {PACKAGE}/meta (describe, validate-config)"
        )),
        [] => Err(format!(
            "this component exports {listed}, expected one of the {PACKAGE}@{CONTRACT_VERSION} \
             worlds: {expected}"
        )),
        many => Err(format!(
            "this component exports {listed}: that is {} roles at once; a plugin targets \
             exactly one world ({expected})",
            many.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_interface_names() {
        assert_eq!(
            split_name("syncweave:plugin/meta@0.1.0"),
            ItemName {
                package: "syncweave:plugin",
                interface: "meta",
                version: Some("0.1.0")
            }
        );
        assert_eq!(split_name("run").interface, "run");
    }

    #[test]
    fn detects_each_world() {
        for w in World::ALL {
            let exports = names(&[
                "syncweave:plugin/meta@0.1.0",
                &format!("syncweave:plugin/{}@0.1.3", w.role_interface()),
            ]);
            assert_eq!(world_from_exports(&exports), Ok(w));
        }
    }

    #[test]
    fn explains_misfits() {
        let e = world_from_exports(&names(&["wasi:cli/run@0.2.0"])).unwrap_err();
        assert!(
            e.contains("exports wasi:cli/run@0.2.0, expected one of"),
            "{e}"
        );
        assert!(e.contains("mutator (meta + mutation)"), "{e}");
        let e = world_from_exports(&names(&["syncweave:plugin/naming@0.1.0"])).unwrap_err();
        assert!(e.contains("expected world namer"), "{e}");
        let e = world_from_exports(&names(&[
            "syncweave:plugin/meta@0.2.0",
            "syncweave:plugin/naming@0.2.0",
        ]))
        .unwrap_err();
        assert!(e.contains("built against syncweave:plugin@0.2.0"), "{e}");
        let e = world_from_exports(&names(&[
            "syncweave:plugin/meta@0.1.0",
            "syncweave:plugin/naming@0.1.0",
            "syncweave:plugin/mutation@0.1.0",
        ]))
        .unwrap_err();
        assert!(e.contains("2 roles"), "{e}");
    }

    #[test]
    fn version_rules() {
        assert!(version_compatible("0.1.0"));
        assert!(version_compatible("0.1.9"));
        assert!(!version_compatible("0.2.0"));
        assert!(!version_compatible("1.1.0"));
        assert!(!version_compatible("garbage"));
    }
}
