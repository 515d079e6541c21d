//! Plugin projects on disk: which language a directory holds, what it is
//! called and which world it targets, and the plugin contract this binary
//! builds against.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::Deserialize;

/// The plugin contract this binary speaks, embedded so that Python and
/// JavaScript builds need no checkout.
pub(crate) const WIT: &str = include_str!("../../../../wit/plugin.wit");

/// The WIT worlds a plugin can target.
pub(crate) const WORLDS: [&str; 4] = ["mutator", "namer", "projector", "renderer"];

/// `(package, version)` of a WIT document's `package ns:name@version;` line.
pub(crate) fn wit_package(wit: &str) -> Option<(&str, &str)> {
    wit.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("package ")?;
        let rest = rest.trim().strip_suffix(';')?.trim();
        rest.split_once('@')
    })
}

/// `syncweave:plugin@0.1.0`: the contract version of this binary.
pub(crate) fn contract() -> String {
    let (name, version) = wit_package(WIT).expect("wit/plugin.wit has a package line");
    format!("{name}@{version}")
}

/// The language of a plugin project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
    Go,
}

impl Lang {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::Go => "go",
        }
    }
}

/// Which language the project at `dir` is written in: Cargo.toml → Rust,
/// package.json → JavaScript, pyproject.toml or app.py → Python, go.mod → Go.
pub(crate) fn detect(dir: &Path) -> anyhow::Result<Lang> {
    if dir.is_file() && dir.file_name().is_some_and(|n| n == "Cargo.toml") {
        return Ok(Lang::Rust);
    }
    if !dir.is_dir() {
        anyhow::bail!(
            "{}: no such directory; pass the directory of a plugin project",
            dir.display()
        );
    }
    let found: Vec<Lang> = [
        ("Cargo.toml", Lang::Rust),
        ("package.json", Lang::Js),
        ("pyproject.toml", Lang::Python),
        ("app.py", Lang::Python),
        ("go.mod", Lang::Go),
    ]
    .into_iter()
    .filter(|(file, _)| dir.join(file).is_file())
    .map(|(_, lang)| lang)
    .collect();
    match found.first() {
        None => anyhow::bail!(
            "{}: not a plugin project (no Cargo.toml, package.json, pyproject.toml or go.mod); \
             create one with `syncweave plugin new NAME --lang rust|python|js|go --kind KIND`",
            dir.display()
        ),
        Some(first) if found.iter().any(|l| l != first) => anyhow::bail!(
            "{}: holds more than one kind of project ({}); choose with --lang",
            dir.display(),
            found
                .iter()
                .map(|l| l.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(first) => Ok(*first),
    }
}

/// What `plugin build` needs to know about a Python or JavaScript project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProjectInfo {
    /// The component's file name (without `.wasm`).
    pub name: String,
    pub world: String,
    /// Python: the app module; JavaScript: the entry file.
    pub entry: String,
}

#[derive(Deserialize)]
struct PyProject {
    project: Option<PyProjectTable>,
    tool: Option<PyTool>,
}

#[derive(Deserialize)]
struct PyProjectTable {
    name: Option<String>,
}

#[derive(Deserialize)]
struct PyTool {
    syncweave: Option<SyncweaveTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SyncweaveTable {
    world: Option<String>,
    app: Option<String>,
    entry: Option<String>,
    name: Option<String>,
    /// The contract version (`0.1` or `0.2`); read and checked by the
    /// builder (`syncweave_wasm_build::contract`), accepted here.
    #[allow(dead_code)]
    contract: Option<String>,
}

fn check_world(world: Option<String>, file: &Path, key: &str) -> anyhow::Result<String> {
    let Some(world) = world else {
        anyhow::bail!(
            "{}: {key} is not set; set it to the world the plugin targets ({})",
            file.display(),
            WORLDS.join(", ")
        );
    };
    if !WORLDS.contains(&world.as_str()) {
        anyhow::bail!(
            "{}: {key} = {world:?} is not a world of {}; use one of {}",
            file.display(),
            contract(),
            WORLDS.join(", ")
        );
    }
    Ok(world)
}

fn check_name(name: String, file: &Path, key: &str) -> anyhow::Result<String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        anyhow::bail!(
            "{}: {key} = {name:?} cannot name the component file; use letters, digits, '-', '_' and '.'",
            file.display()
        );
    }
    Ok(name)
}

/// Reads `pyproject.toml`: `[project] name` and `[tool.syncweave] world`
/// (required), `app` (default `app`) and `name` (overrides the project name).
pub(crate) fn python_project(dir: &Path) -> anyhow::Result<ProjectInfo> {
    let file = dir.join("pyproject.toml");
    let text = std::fs::read_to_string(&file).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}; a Python plugin project needs a pyproject.toml with [project] name and \
             [tool.syncweave] world (see `syncweave plugin new`)",
            file.display()
        )
    })?;
    let doc: PyProject = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{} is not valid: {e}", file.display()))?;
    let sw = doc.tool.and_then(|t| t.syncweave);
    let Some(sw) = sw else {
        anyhow::bail!(
            "{}: no [tool.syncweave] table; add one naming the world the plugin targets, e.g.\n\n\
             [tool.syncweave]\nworld = \"mutator\"   # or namer, projector, renderer\napp = \"app\"         # the module componentize-py wraps",
            file.display()
        );
    };
    if sw.entry.is_some() {
        anyhow::bail!(
            "{}: [tool.syncweave] entry is for JavaScript projects; Python projects name their module with app",
            file.display()
        );
    }
    let name = match sw.name.or(doc.project.and_then(|p| p.name)) {
        Some(n) => check_name(n, &file, "[project] name")?,
        None => anyhow::bail!(
            "{}: [project] name is not set; it names the component ({{name}}.wasm)",
            file.display()
        ),
    };
    Ok(ProjectInfo {
        name,
        world: check_world(sw.world, &file, "[tool.syncweave] world")?,
        entry: sw.app.unwrap_or_else(|| "app".to_string()),
    })
}

#[derive(Deserialize)]
struct PackageJson {
    name: Option<String>,
    syncweave: Option<SyncweaveTable>,
}

/// Reads `package.json`: `name` and `"syncweave": {"world", "entry"}` (world
/// required; entry default `component.js`; `name` overrides the package name).
pub(crate) fn js_project(dir: &Path) -> anyhow::Result<ProjectInfo> {
    let file = dir.join("package.json");
    let text =
        std::fs::read_to_string(&file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let doc: PackageJson = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{} is not valid: {e}", file.display()))?;
    let Some(sw) = doc.syncweave else {
        anyhow::bail!(
            "{}: no \"syncweave\" section; add one naming the world the plugin targets and \
             its entry module, e.g. \"syncweave\": {{\"world\": \"mutator\", \"entry\": \"component.js\"}}",
            file.display()
        );
    };
    if sw.app.is_some() {
        anyhow::bail!(
            "{}: \"syncweave\".app is for Python projects; JavaScript projects name their module with entry",
            file.display()
        );
    }
    // npm scopes are not part of the file name: @acme/labels -> labels.
    let name = sw.name.or_else(|| {
        doc.name
            .map(|n| n.rsplit('/').next().unwrap_or(&n).to_string())
    });
    let name = match name {
        Some(n) => check_name(n, &file, "name")?,
        None => anyhow::bail!(
            "{}: name is not set; it names the component ({{name}}.wasm)",
            file.display()
        ),
    };
    Ok(ProjectInfo {
        name,
        world: check_world(sw.world, &file, "\"syncweave\".world")?,
        entry: sw.entry.unwrap_or_else(|| "component.js".to_string()),
    })
}

/// Writes the embedded contract into `dir/plugin.wit` for tools that read
/// WIT from disk; returns the directory.
pub(crate) fn write_wit(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("plugin.wit"), WIT)?;
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sw-project-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_embedded_contract_has_a_version() {
        assert_eq!(
            wit_package("x\npackage syncweave:plugin@0.1.0;\n"),
            Some(("syncweave:plugin", "0.1.0"))
        );
        assert!(contract().starts_with("syncweave:plugin@"));
    }

    #[test]
    fn languages_are_detected_from_their_manifests() {
        let d = tmp("detect");
        let err = detect(&d).unwrap_err().to_string();
        assert!(err.contains("syncweave plugin new"), "{err}");
        std::fs::write(d.join("app.py"), "").unwrap();
        assert_eq!(detect(&d).unwrap(), Lang::Python);
        std::fs::write(d.join("package.json"), "{}").unwrap();
        let err = detect(&d).unwrap_err().to_string();
        assert!(err.contains("--lang"), "{err}");
        std::fs::remove_file(d.join("app.py")).unwrap();
        assert_eq!(detect(&d).unwrap(), Lang::Js);
        std::fs::remove_file(d.join("package.json")).unwrap();
        std::fs::write(d.join("go.mod"), "module p\n").unwrap();
        assert_eq!(detect(&d).unwrap(), Lang::Go);
        assert!(detect(&d.join("nope")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn pyproject_names_the_world_and_module() {
        let d = tmp("py");
        let err = python_project(&d).unwrap_err().to_string();
        assert!(err.contains("pyproject.toml"), "{err}");
        std::fs::write(d.join("pyproject.toml"), "[project]\nname = \"labels\"\n").unwrap();
        let err = python_project(&d).unwrap_err().to_string();
        assert!(
            err.contains("[tool.syncweave]") && err.contains("world"),
            "{err}"
        );
        std::fs::write(
            d.join("pyproject.toml"),
            "[project]\nname = \"labels\"\ndependencies = [\n  \"x\",\n]\n[tool.syncweave]\nworld = \"mutator\"\n",
        )
        .unwrap();
        assert_eq!(
            python_project(&d).unwrap(),
            ProjectInfo {
                name: "labels".into(),
                world: "mutator".into(),
                entry: "app".into()
            }
        );
        std::fs::write(
            d.join("pyproject.toml"),
            "[project]\nname = \"labels\"\n[tool.syncweave]\nworld = \"mutate\"\n",
        )
        .unwrap();
        let err = python_project(&d).unwrap_err().to_string();
        assert!(err.contains("\"mutate\"") && err.contains("namer"), "{err}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn package_json_names_the_world_and_entry() {
        let d = tmp("js");
        std::fs::write(
            d.join("package.json"),
            r#"{"name": "@acme/labels", "syncweave": {"world": "namer"}}"#,
        )
        .unwrap();
        assert_eq!(
            js_project(&d).unwrap(),
            ProjectInfo {
                name: "labels".into(),
                world: "namer".into(),
                entry: "component.js".into()
            }
        );
        std::fs::write(d.join("package.json"), r#"{"name": "x"}"#).unwrap();
        let err = js_project(&d).unwrap_err().to_string();
        assert!(err.contains("\"syncweave\""), "{err}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
