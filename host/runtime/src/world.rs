//! Which contract version and plugin world a component implements, read
//! from its exports (a 0.2 guest that never reads does not import `reads`,
//! so imports cannot tell), and whether this host provides its imports.

use std::fmt;

use wasmtime::Engine;
use wasmtime::component::Component;

/// Package every plugin interface lives in.
pub const PACKAGE: &str = "syncweave:plugin";
/// The first contract version, `0.1.0`: what this host implemented before
/// 0.2. Every version it serves is in [`ContractVersion::ALL`].
pub const CONTRACT_VERSION: &str = "0.1.0";

/// A version of the plugin contract (`syncweave:plugin@<version>`) that
/// this host serves. A component built against any patch release of one of
/// these (0.1.x, 0.2.x) is accepted.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ContractVersion {
    /// `syncweave:plugin@0.1.0` (`wit/plugin.wit`): one object in, one
    /// result out.
    #[serde(rename = "0.1")]
    V0_1,
    /// `syncweave:plugin@0.2.0` (`wit/v0.2/plugin.wit`): adds reads,
    /// results and conditions, and context values along a chain.
    #[serde(rename = "0.2")]
    V0_2,
}

impl ContractVersion {
    /// Every version this host serves, oldest first.
    pub const ALL: [ContractVersion; 2] = [ContractVersion::V0_1, ContractVersion::V0_2];

    /// The full version this host implements (`0.1.0`, `0.2.0`).
    pub fn as_str(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1.0",
            ContractVersion::V0_2 => "0.2.0",
        }
    }

    /// The version range this host accepts for it (`0.1.x`).
    pub fn range(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1.x",
            ContractVersion::V0_2 => "0.2.x",
        }
    }

    /// The served version that `version` (from an import or export name,
    /// e.g. `0.2.3`) belongs to: same major and, for 0.x, same minor.
    pub fn of(version: &str) -> Option<ContractVersion> {
        ContractVersion::ALL
            .into_iter()
            .find(|c| version_compatible(c.as_str(), version))
    }

    /// The interfaces a component of this version may import from the
    /// host (besides WASI).
    pub fn host_interfaces(self) -> &'static [&'static str] {
        match self {
            ContractVersion::V0_1 => &["types", "host-log"],
            ContractVersion::V0_2 => &["types", "host-log", "reads"],
        }
    }

    /// Where the contract's WIT lives in the syncweave repository.
    pub fn wit_path(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "wit/plugin.wit",
            ContractVersion::V0_2 => "wit/v0.2/plugin.wit",
        }
    }
}

impl fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `syncweave:plugin@0.1.x and syncweave:plugin@0.2.x`: what this host
/// serves, for messages.
pub fn served_versions() -> String {
    ContractVersion::ALL
        .iter()
        .map(|c| format!("{PACKAGE}@{}", c.range()))
        .collect::<Vec<_>>()
        .join(" and ")
}

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

/// Same major and (for 0.x) minor version as `ours`.
fn version_compatible(ours: &str, theirs: &str) -> bool {
    let mut ours = ours.split('.');
    let mut theirs = theirs.split('.');
    let (Some(om), Some(on)) = (ours.next(), ours.next()) else {
        return false;
    };
    let (Some(tm), Some(tn)) = (theirs.next(), theirs.next()) else {
        return false;
    };
    om == tm && (om != "0" || on == tn)
}

/// What a component exports and imports, and the contract version and
/// world that fit it.
#[derive(Debug, Clone)]
pub struct Shape {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    /// The world the exports fit, or why they fit none (the text names the
    /// exports and what would have fitted).
    pub world: Result<World, String>,
    /// The contract version of the exports, when they fit a world.
    pub contract: Option<ContractVersion>,
    /// Imports this host does not provide to a component of that version;
    /// a component with any is refused (see [`Shape::import_error`]).
    pub unknown_imports: Vec<String>,
}

impl Shape {
    pub fn imports_wasi(&self) -> bool {
        self.imports.iter().any(|i| i.starts_with("wasi:"))
    }

    /// Why the imports cannot be linked, when some are unknown.
    pub fn import_error(&self) -> Option<String> {
        if self.unknown_imports.is_empty() {
            return None;
        }
        let allowed = match self.contract {
            Some(c) => format!(
                "a {PACKAGE}@{} plugin may import only {} of its own version and WASI 0.2 \
                 (granted nothing)",
                c.range(),
                c.host_interfaces()
                    .iter()
                    .map(|i| format!("{PACKAGE}/{i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "plugins may import only the host interfaces of their contract version \
                     and WASI 0.2 (granted nothing)"
                .to_string(),
        };
        Some(format!(
            "this component imports {}, which this host does not provide; {allowed}. \
             This host serves {}",
            self.unknown_imports.join(", "),
            served_versions()
        ))
    }
}

/// Inspect a compiled component's type and decide its contract version and
/// world. The error text says what the component exports and what would
/// have fitted.
pub fn shape(engine: &Engine, component: &Component) -> Shape {
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
    shape_of(exports, imports)
}

pub(crate) fn shape_of(exports: Vec<String>, imports: Vec<String>) -> Shape {
    let fit = world_from_exports(&exports);
    let unknown_imports = match &fit {
        Ok((contract, _)) => unknown_imports(*contract, &imports),
        Err(_) => Vec::new(),
    };
    Shape {
        contract: fit.as_ref().ok().map(|(c, _)| *c),
        world: fit.map(|(_, w)| w),
        exports,
        imports,
        unknown_imports,
    }
}

/// Imports outside WASI and the host interfaces of `contract`.
fn unknown_imports(contract: ContractVersion, imports: &[String]) -> Vec<String> {
    imports
        .iter()
        .filter(|i| {
            let n = split_name(i);
            if n.package.starts_with("wasi:") {
                return false;
            }
            let provided = n.package == PACKAGE
                && contract.host_interfaces().contains(&n.interface)
                && n.version.and_then(ContractVersion::of) == Some(contract);
            !provided
        })
        .cloned()
        .collect()
}

/// The worlds of every served version, for messages.
fn expected_worlds() -> String {
    World::ALL
        .iter()
        .map(|w| format!("{w} (meta + {})", w.role_interface()))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn world_from_exports(exports: &[String]) -> Result<(ContractVersion, World), String> {
    let ours: Vec<ItemName<'_>> = exports
        .iter()
        .map(|e| split_name(e))
        .filter(|n| n.package == PACKAGE)
        .collect();
    let listed = if exports.is_empty() {
        "nothing".to_string()
    } else {
        exports.join(", ")
    };
    let unserved: Vec<&str> = exports
        .iter()
        .filter(|e| {
            let n = split_name(e);
            n.package == PACKAGE && n.version.and_then(ContractVersion::of).is_none()
        })
        .map(String::as_str)
        .collect();
    if let Some(first) = unserved.first() {
        let version = split_name(first).version.unwrap_or("<unversioned>");
        return Err(format!(
            "this component was built against {PACKAGE}@{version} (it exports {}), but this \
             host serves {}; rebuild it against one of those ({}), or run it on a host that \
             serves {PACKAGE}@{version}",
            unserved.join(", "),
            served_versions(),
            ContractVersion::ALL
                .iter()
                .map(|c| c.wit_path())
                .collect::<Vec<_>>()
                .join(" or "),
        ));
    }
    let mut versions: Vec<ContractVersion> = ours
        .iter()
        .filter_map(|n| n.version.and_then(ContractVersion::of))
        .collect();
    versions.sort();
    versions.dedup();
    let contract = match versions.as_slice() {
        [] => {
            return Err(format!(
                "this component exports {listed}, expected one of the worlds of {}: {}",
                served_versions(),
                expected_worlds()
            ));
        }
        [one] => *one,
        _ => {
            return Err(format!(
                "this component exports {listed}: that mixes contract versions {}; every \
                 {PACKAGE} interface of a plugin must come from one version",
                versions
                    .iter()
                    .map(|v| v.range())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
    };
    let has = |iface: &str| ours.iter().any(|n| n.interface == iface);
    let roles: Vec<World> = World::ALL
        .into_iter()
        .filter(|w| has(w.role_interface()))
        .collect();
    match roles.as_slice() {
        [world] if has("meta") => Ok((contract, *world)),
        [world] => Err(format!(
            "this component exports {listed}, expected world {world}: it lacks \
             {PACKAGE}/meta@{} (describe, validate-config)",
            contract.as_str()
        )),
        [] => Err(format!(
            "this component exports {listed}, expected one of the {PACKAGE}@{} worlds: {}",
            contract.as_str(),
            expected_worlds()
        )),
        many => Err(format!(
            "this component exports {listed}: that is {} roles at once; a plugin targets \
             exactly one world ({})",
            many.len(),
            expected_worlds()
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
    fn detects_each_world_in_each_version() {
        for w in World::ALL {
            let exports = names(&[
                "syncweave:plugin/meta@0.1.0",
                &format!("syncweave:plugin/{}@0.1.3", w.role_interface()),
            ]);
            assert_eq!(world_from_exports(&exports), Ok((ContractVersion::V0_1, w)));
            let exports = names(&[
                "syncweave:plugin/meta@0.2.0",
                &format!("syncweave:plugin/{}@0.2.1", w.role_interface()),
            ]);
            assert_eq!(world_from_exports(&exports), Ok((ContractVersion::V0_2, w)));
        }
    }

    #[test]
    fn explains_misfits() {
        let e = world_from_exports(&names(&["wasi:cli/run@0.2.0"])).unwrap_err();
        assert!(
            e.contains("exports wasi:cli/run@0.2.0, expected one of the worlds of syncweave:plugin@0.1.x and syncweave:plugin@0.2.x"),
            "{e}"
        );
        assert!(e.contains("mutator (meta + mutation)"), "{e}");
        let e = world_from_exports(&names(&["syncweave:plugin/naming@0.1.0"])).unwrap_err();
        assert!(e.contains("expected world namer"), "{e}");
        let e = world_from_exports(&names(&[
            "syncweave:plugin/meta@0.3.0",
            "syncweave:plugin/naming@0.3.0",
        ]))
        .unwrap_err();
        assert!(
            e.starts_with(
                "this component was built against syncweave:plugin@0.3.0 (it exports \
                 syncweave:plugin/meta@0.3.0, syncweave:plugin/naming@0.3.0), but this host \
                 serves syncweave:plugin@0.1.x and syncweave:plugin@0.2.x"
            ),
            "{e}"
        );
        let e = world_from_exports(&names(&[
            "syncweave:plugin/meta@0.1.0",
            "syncweave:plugin/naming@0.2.0",
        ]))
        .unwrap_err();
        assert!(e.contains("mixes contract versions 0.1.x and 0.2.x"), "{e}");
        let e = world_from_exports(&names(&[
            "syncweave:plugin/meta@0.1.0",
            "syncweave:plugin/naming@0.1.0",
            "syncweave:plugin/mutation@0.1.0",
        ]))
        .unwrap_err();
        assert!(e.contains("2 roles"), "{e}");
    }

    #[test]
    fn imports_must_be_what_the_version_provides() {
        let v2 = names(&[
            "syncweave:plugin/meta@0.2.0",
            "syncweave:plugin/mutation@0.2.0",
        ]);
        let s = shape_of(
            v2.clone(),
            names(&[
                "syncweave:plugin/types@0.2.0",
                "syncweave:plugin/host-log@0.2.0",
                "syncweave:plugin/reads@0.2.0",
                "wasi:cli/stdout@0.2.3",
            ]),
        );
        assert_eq!(s.contract, Some(ContractVersion::V0_2));
        assert!(s.unknown_imports.is_empty(), "{:?}", s.unknown_imports);
        assert!(s.import_error().is_none());
        // A 0.2 guest that never reads imports nothing at all.
        assert!(shape_of(v2.clone(), vec![]).unknown_imports.is_empty());

        let v1 = names(&[
            "syncweave:plugin/meta@0.1.0",
            "syncweave:plugin/mutation@0.1.0",
        ]);
        let s = shape_of(
            v1,
            names(&[
                "syncweave:plugin/host-log@0.1.0",
                "syncweave:plugin/reads@0.2.0",
                "acme:secrets/vault@1.0.0",
            ]),
        );
        assert_eq!(
            s.unknown_imports,
            names(&["syncweave:plugin/reads@0.2.0", "acme:secrets/vault@1.0.0"])
        );
        let e = s.import_error().unwrap();
        assert!(
            e.starts_with(
                "this component imports syncweave:plugin/reads@0.2.0, acme:secrets/vault@1.0.0, \
                 which this host does not provide; a syncweave:plugin@0.1.x plugin may import \
                 only syncweave:plugin/types, syncweave:plugin/host-log of its own version"
            ),
            "{e}"
        );
        assert!(
            e.ends_with("This host serves syncweave:plugin@0.1.x and syncweave:plugin@0.2.x"),
            "{e}"
        );
    }

    #[test]
    fn version_rules() {
        assert_eq!(ContractVersion::of("0.1.0"), Some(ContractVersion::V0_1));
        assert_eq!(ContractVersion::of("0.1.9"), Some(ContractVersion::V0_1));
        assert_eq!(ContractVersion::of("0.2.0"), Some(ContractVersion::V0_2));
        assert_eq!(ContractVersion::of("0.3.0"), None);
        assert_eq!(ContractVersion::of("1.1.0"), None);
        assert_eq!(ContractVersion::of("garbage"), None);
        assert!(version_compatible("1.0.0", "1.4.2"));
    }
}
