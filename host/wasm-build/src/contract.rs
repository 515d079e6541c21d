//! Which version of the plugin contract a Python or JavaScript project is
//! built against.
//!
//! The contract is versioned WIT: 0.1 in `wit/plugin.wit`, 0.2 in
//! `wit/v0.2/plugin.wit`. Both are embedded here, so a build needs no
//! checkout. A project names its version in its manifest, beside its world:
//!
//! - `pyproject.toml`: `contract = "0.2"` under `[tool.syncweave]`;
//! - `package.json`: `"syncweave": {"contract": "0.2", …}`.
//!
//! Without the key a project targets 0.1, so every project written before
//! 0.2 builds as it did. A version this build does not know is an error that
//! names the file, the key and the versions it knows. The SDKs check the
//! other half at build time: a plugin whose own `contract` differs from the
//! world it is being built against stops the build with the fix.

use std::fs;
use std::path::{Path, PathBuf};

use crate::BuildError;

/// A version of the plugin contract (`syncweave:plugin@X.Y.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ContractVersion {
    /// `wit/plugin.wit`, `syncweave:plugin@0.1.0`.
    V0_1,
    /// `wit/v0.2/plugin.wit`, `syncweave:plugin@0.2.0`: reads, reports and
    /// context values.
    V0_2,
}

const WIT_0_1: &str = include_str!("../../../wit/plugin.wit");
const WIT_0_2: &str = include_str!("../../../wit/v0.2/plugin.wit");

impl ContractVersion {
    /// Every version this build knows, oldest first.
    pub const ALL: [ContractVersion; 2] = [ContractVersion::V0_1, ContractVersion::V0_2];

    /// What a project that names no version targets.
    pub const DEFAULT: ContractVersion = ContractVersion::V0_1;

    /// `"0.1"`, as projects write it.
    pub fn as_str(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1",
            ContractVersion::V0_2 => "0.2",
        }
    }

    /// The WIT package, e.g. `syncweave:plugin@0.2.0`.
    pub fn package(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "syncweave:plugin@0.1.0",
            ContractVersion::V0_2 => "syncweave:plugin@0.2.0",
        }
    }

    /// The contract's WIT document, as embedded at build time.
    pub fn wit(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => WIT_0_1,
            ContractVersion::V0_2 => WIT_0_2,
        }
    }

    /// `"0.2"` or `"0.2.0"` (surrounding spaces ignored); `None` for a version
    /// this build does not know.
    pub fn parse(text: &str) -> Option<ContractVersion> {
        let text = text.trim();
        ContractVersion::ALL
            .into_iter()
            .find(|v| text == v.as_str() || text == format!("{}.0", v.as_str()))
    }

    /// `"0.1, 0.2"`: the versions this build knows, for messages.
    pub fn known() -> String {
        ContractVersion::ALL
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Writes the contract into `dir/plugin.wit` (creating `dir`) for tools
    /// that read WIT from disk; returns `dir`.
    pub fn write_wit(self, dir: &Path) -> std::io::Result<PathBuf> {
        fs::create_dir_all(dir)?;
        fs::write(dir.join("plugin.wit"), self.wit())?;
        Ok(dir.to_path_buf())
    }
}

impl std::fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A project's contract version and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectContract {
    pub version: ContractVersion,
    /// E.g. `pyproject.toml [tool.syncweave] contract`, or `default` when the
    /// project names no version.
    pub source: String,
}

impl ProjectContract {
    fn default_for() -> ProjectContract {
        ProjectContract {
            version: ContractVersion::DEFAULT,
            source: "default".into(),
        }
    }
}

fn checked(
    value: Option<&str>,
    file: &Path,
    key: &str,
    example: &str,
) -> Result<ProjectContract, BuildError> {
    let Some(value) = value else {
        return Ok(ProjectContract::default_for());
    };
    match ContractVersion::parse(value) {
        Some(version) => Ok(ProjectContract {
            version,
            source: format!(
                "{} {key}",
                file.file_name().unwrap_or_default().to_string_lossy()
            ),
        }),
        None => Err(BuildError::UnknownContract {
            file: file.to_path_buf(),
            key: key.to_string(),
            value: value.to_string(),
            known: ContractVersion::known(),
            example: example.to_string(),
        }),
    }
}

/// The contract version of the Python project at `dir`: `[tool.syncweave]
/// contract` in its `pyproject.toml`, else 0.1.
pub fn python_contract(dir: &Path) -> Result<ProjectContract, BuildError> {
    let file = dir.join("pyproject.toml");
    let Ok(text) = fs::read_to_string(&file) else {
        return Ok(ProjectContract::default_for());
    };
    let doc: toml::Table = toml::from_str(&text).map_err(|e| BuildError::BadProject {
        project: dir.to_path_buf(),
        detail: format!("{} is not valid TOML: {e}", file.display()),
    })?;
    let key = "[tool.syncweave] contract";
    let value = doc
        .get("tool")
        .and_then(|t| t.get("syncweave"))
        .and_then(|s| s.get("contract"));
    let text = match value {
        None => None,
        Some(toml::Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            return Err(BuildError::BadProject {
                project: dir.to_path_buf(),
                detail: format!(
                    "{}: {key} must be a string such as \"0.2\" (quoted), not a {}",
                    file.display(),
                    other.type_str()
                ),
            });
        }
    };
    checked(text, &file, key, "contract = \"0.2\"")
}

/// The contract version of the JavaScript project at `dir`: `"syncweave":
/// {"contract"}` in its `package.json`, else 0.1.
pub fn js_contract(dir: &Path) -> Result<ProjectContract, BuildError> {
    let file = dir.join("package.json");
    let Ok(text) = fs::read_to_string(&file) else {
        return Ok(ProjectContract::default_for());
    };
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| BuildError::BadProject {
            project: dir.to_path_buf(),
            detail: format!("{} is not valid JSON: {e}", file.display()),
        })?;
    let key = "\"syncweave\".contract";
    let text = match doc.get("syncweave").and_then(|s| s.get("contract")) {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            return Err(BuildError::BadProject {
                project: dir.to_path_buf(),
                detail: format!(
                    "{}: {key} must be a string such as \"0.2\", not {other}",
                    file.display()
                ),
            });
        }
    };
    checked(text, &file, key, "\"contract\": \"0.2\"")
}

/// The `package ns:name@version` a WIT file declares, or the first one among
/// the `.wit` files of a directory (as WIT tools read a directory).
pub fn wit_package(path: &Path) -> Option<String> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut files: Vec<PathBuf> = fs::read_dir(path)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "wit"))
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    files.iter().find_map(|f| {
        let text = fs::read_to_string(f).ok()?;
        text.lines().find_map(|line| {
            let rest = line.trim().strip_prefix("package ")?;
            Some(rest.trim().strip_suffix(';')?.trim().to_string())
        })
    })
}

/// The WIT to build `version` against: `given` when it declares that
/// version's package (a caller's own copy of the contract), else the
/// embedded contract written under `scratch`.
pub(crate) fn resolve_wit(
    given: &Path,
    version: ContractVersion,
    scratch: &Path,
) -> Result<PathBuf, BuildError> {
    if wit_package(given).as_deref() == Some(version.package()) {
        return Ok(given.to_path_buf());
    }
    let dir = scratch.join(format!("wit-{}", version.as_str()));
    version.write_wit(&dir).map_err(|source| BuildError::Write {
        path: dir.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(name: &str, file: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "sw-contract-{name}-{}-{}",
            std::process::id(),
            file.replace('.', "_")
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(file), text).unwrap();
        dir
    }

    #[test]
    fn the_embedded_contracts_are_the_versions_they_claim() {
        for v in ContractVersion::ALL {
            let dir = std::env::temp_dir().join(format!("sw-wit-{}-{v}", std::process::id()));
            v.write_wit(&dir).unwrap();
            assert_eq!(wit_package(&dir).as_deref(), Some(v.package()));
            assert_eq!(
                wit_package(&dir.join("plugin.wit")).as_deref(),
                Some(v.package())
            );
            fs::remove_dir_all(&dir).unwrap();
        }
        // Both carry the four worlds under the same names.
        for world in ["mutator", "namer", "projector", "renderer"] {
            for v in ContractVersion::ALL {
                assert!(
                    v.wit().contains(&format!("world {world} {{")),
                    "{v} {world}"
                );
            }
        }
        assert!(ContractVersion::V0_2.wit().contains("import reads;"));
        assert!(!ContractVersion::V0_1.wit().contains("import reads;"));
    }

    #[test]
    fn versions_parse_short_and_long() {
        assert_eq!(ContractVersion::parse("0.2"), Some(ContractVersion::V0_2));
        assert_eq!(
            ContractVersion::parse(" 0.1.0 "),
            Some(ContractVersion::V0_1)
        );
        assert_eq!(ContractVersion::parse("0.3"), None);
        assert_eq!(ContractVersion::parse("0.2.1"), None);
        assert_eq!(ContractVersion::parse(""), None);
    }

    #[test]
    fn pyproject_names_the_contract() {
        let dir = project(
            "py02",
            "pyproject.toml",
            "[project]\nname = \"p\"\n[tool.syncweave]\nworld = \"mutator\"\ncontract = \"0.2\"\n",
        );
        let c = python_contract(&dir).unwrap();
        assert_eq!(c.version, ContractVersion::V0_2);
        assert_eq!(c.source, "pyproject.toml [tool.syncweave] contract");

        let dir = project(
            "py01",
            "pyproject.toml",
            "[tool.syncweave]\nworld = \"mutator\"\n",
        );
        assert_eq!(
            python_contract(&dir).unwrap(),
            ProjectContract {
                version: ContractVersion::V0_1,
                source: "default".into()
            }
        );
        // No pyproject at all (a bare app.py): 0.1.
        let bare = std::env::temp_dir().join(format!("sw-contract-bare-{}", std::process::id()));
        fs::create_dir_all(&bare).unwrap();
        assert_eq!(
            python_contract(&bare).unwrap().version,
            ContractVersion::V0_1
        );
    }

    #[test]
    fn an_unknown_contract_names_the_file_key_and_known_versions() {
        let dir = project(
            "py03",
            "pyproject.toml",
            "[tool.syncweave]\ncontract = \"0.3\"\n",
        );
        let err = python_contract(&dir).unwrap_err().to_string();
        assert!(err.contains("pyproject.toml"), "{err}");
        assert!(err.contains("[tool.syncweave] contract = \"0.3\""), "{err}");
        assert!(err.contains("knows: 0.1, 0.2"), "{err}");

        let dir = project(
            "pyfloat",
            "pyproject.toml",
            "[tool.syncweave]\ncontract = 0.2\n",
        );
        let err = python_contract(&dir).unwrap_err().to_string();
        assert!(
            err.contains("must be a string such as \"0.2\" (quoted)"),
            "{err}"
        );

        let dir = project(
            "js9",
            "package.json",
            r#"{"name": "p", "syncweave": {"world": "mutator", "contract": "9"}}"#,
        );
        let err = js_contract(&dir).unwrap_err().to_string();
        assert!(err.contains("\"syncweave\".contract = \"9\""), "{err}");
        assert!(err.contains("\"contract\": \"0.2\""), "{err}");

        let dir = project(
            "jsnum",
            "package.json",
            r#"{"syncweave": {"contract": 0.2}}"#,
        );
        let err = js_contract(&dir).unwrap_err().to_string();
        assert!(err.contains("must be a string"), "{err}");
    }

    #[test]
    fn package_json_names_the_contract() {
        let dir = project(
            "js02",
            "package.json",
            r#"{"name": "p", "syncweave": {"world": "mutator", "contract": "0.2.0"}}"#,
        );
        let c = js_contract(&dir).unwrap();
        assert_eq!(c.version, ContractVersion::V0_2);
        assert_eq!(c.source, "package.json \"syncweave\".contract");
        let dir = project("js01", "package.json", r#"{"name": "p", "syncweave": {}}"#);
        assert_eq!(js_contract(&dir).unwrap().version, ContractVersion::V0_1);
    }

    #[test]
    fn a_given_wit_is_used_only_for_its_own_version() {
        let scratch = std::env::temp_dir().join(format!("sw-resolve-{}", std::process::id()));
        let _ = fs::remove_dir_all(&scratch);
        let given = ContractVersion::V0_1
            .write_wit(&scratch.join("given"))
            .unwrap();
        assert_eq!(
            resolve_wit(&given, ContractVersion::V0_1, &scratch).unwrap(),
            given
        );
        let v02 = resolve_wit(&given, ContractVersion::V0_2, &scratch).unwrap();
        assert_ne!(v02, given);
        assert_eq!(wit_package(&v02).as_deref(), Some("syncweave:plugin@0.2.0"));
        // A path that holds no WIT at all: the embedded contract.
        let missing = resolve_wit(&scratch.join("nope"), ContractVersion::V0_1, &scratch).unwrap();
        assert_eq!(
            wit_package(&missing).as_deref(),
            Some("syncweave:plugin@0.1.0")
        );
        fs::remove_dir_all(&scratch).unwrap();
    }
}
