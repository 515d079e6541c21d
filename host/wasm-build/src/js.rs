//! Building JavaScript plugins: rolldown bundles the entry module and what it
//! imports into one ES module (componentize-js resolves no packages itself),
//! then componentize-js embeds it in SpiderMonkey as a component.
//!
//! Both tools are the project's own npm devDependencies, loaded by node from
//! the project directory: nothing is installed here.
//!
//! The world is taken from the contract version the project names
//! (`"syncweave": {"contract"}` in package.json, default 0.1; see
//! [`crate::contract`]). The entry module imports the host's interfaces at
//! that version (`syncweave:plugin/host-log@0.2.0`), and componentize-js
//! runs it while it builds, so both a wrong import version and the SDK's
//! check of the plugin's own `contract` fail the build; [`hint`] says which
//! and how to fix it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::contract::{self, ContractVersion, ProjectContract};
use crate::{BuildError, BuiltComponent, Scratch, find_on_path, install_component, tail};

/// The componentize-js release syncweave is tested with.
pub const COMPONENTIZE_JS_VERSION: &str = "0.23.0";
/// The rolldown release syncweave is tested with (the one componentize-js's
/// own jco dependency uses, so npm installs it once).
pub const ROLLDOWN_VERSION: &str = "1.3.2";

/// Features of the JavaScript runtime left out of every component: the
/// sandbox grants no clock, randomness or network. stdio stays, so that an
/// uncaught error is reported instead of trapping silently.
pub const DISABLED_FEATURES: &[&str] = &["random", "clocks", "http", "fetch-event"];

/// One JavaScript plugin project to build.
#[derive(Debug, Clone)]
pub struct JsProject {
    /// The project directory (holds package.json and node_modules).
    pub dir: PathBuf,
    /// The component's name: the output is `<out_dir>/<name>.wasm`.
    pub name: String,
    /// The WIT world the component targets.
    pub world: String,
    /// The entry module, relative to `dir` (its exports are the component's).
    pub entry: PathBuf,
    /// A WIT file or directory holding the contract. Used when it declares
    /// the package of the project's contract version
    /// ([`contract::js_contract`]); otherwise the build writes the embedded
    /// contract of that version and uses it.
    pub wit: PathBuf,
}

impl JsProject {
    /// The contract version this project is built against, and where it is
    /// named.
    pub fn contract(&self) -> Result<ProjectContract, BuildError> {
        contract::js_contract(&self.dir)
    }
}

/// Runs in node with the project directory as the working directory, so that
/// `import()` resolves the project's own node_modules. Arguments: entry, WIT
/// path, world, bundle path, output path, disabled features (comma-separated),
/// contract version.
///
/// The bundler resolves `@syncweave/plugin/world` to a module that exports
/// the contract version being built (`export const contract = '0.2'`): the
/// SDK's `exportPlugin` compares it with the plugin's own `contract` while
/// componentize-js runs the entry module, and stops the build on a mismatch.
const DRIVER: &str = r#"
const [entry, witPath, worldName, bundlePath, outPath, disabled, contract] = process.argv.slice(1);
async function need(name) {
  try {
    return await import(name);
  } catch (err) {
    if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes(`'${name}'`)) {
      console.error(`syncweave-missing-package ${name}`);
      process.exit(3);
    }
    throw err;
  }
}
const { rolldown } = await need('rolldown');
const { componentize } = await need('@bytecodealliance/componentize-js');
const { writeFile } = await import('node:fs/promises');
const WORLD = '@syncweave/plugin/world';
const world = {
  name: 'syncweave-world',
  resolveId(id) {
    return id === WORLD ? '\0' + WORLD : null;
  },
  load(id) {
    return id === '\0' + WORLD ? `export const contract = ${JSON.stringify(contract)};` : null;
  },
};
const bundle = await rolldown({
  input: entry,
  plugins: [world],
  // Imports of the WIT world (and WASI) are the component's imports.
  external: [/^syncweave:/, /^wasi:/],
  platform: 'neutral',
  resolve: { mainFields: ['module', 'main'], conditionNames: ['import', 'module', 'default'] },
  logLevel: 'warn',
});
const { output } = await bundle.generate({ format: 'esm', codeSplitting: false });
await bundle.close();
const chunks = output.filter((o) => o.type === 'chunk');
if (chunks.length !== 1) throw new Error(`bundling produced ${chunks.length} chunks, expected 1`);
await writeFile(bundlePath, chunks[0].code);
const { component } = await componentize({
  sourcePath: bundlePath,
  witPath,
  worldName,
  disableFeatures: disabled.split(',').filter(Boolean),
});
await writeFile(outPath, component);
"#;

/// Builds `project` into `<out_dir>/<name>.wasm`.
pub fn build_js(
    project: &JsProject,
    out_dir: &Path,
    progress: bool,
) -> Result<BuiltComponent, BuildError> {
    let entry = project.dir.join(&project.entry);
    if !entry.is_file() {
        return Err(BuildError::BadProject {
            project: project.dir.clone(),
            detail: format!(
                "the entry module {} does not exist; set \"syncweave\": {{\"entry\": …}} in \
                 package.json to the module whose exports are the component's",
                entry.display()
            ),
        });
    }
    let contract = project.contract()?;
    let node = find_on_path("node").ok_or_else(|| BuildError::MissingTool {
        tool: "node".into(),
        problem: "it is not on PATH".into(),
        install: "install Node.js 18 or newer (e.g. `apt-get install nodejs npm`)".into(),
    })?;
    let scratch = Scratch::new("js").map_err(|source| BuildError::Write {
        path: std::env::temp_dir(),
        source,
    })?;
    let wit = contract::resolve_wit(&project.wit, contract.version, scratch.path())?;
    let bundle = scratch.path().join("bundle.js");
    let tmp_out = scratch.path().join(format!("{}.wasm", project.name));
    if progress {
        eprintln!(
            "syncweave: building JavaScript plugin {} (world {} of {}, contract from {}) with \
             rolldown and componentize-js (about 15 s)",
            project.name,
            project.world,
            contract.version.package(),
            contract.source
        );
    }
    let out = Command::new(&node)
        .args(["--input-type=module", "-e", DRIVER])
        .arg(&entry)
        .arg(&wit)
        .arg(&project.world)
        .arg(&bundle)
        .arg(&tmp_out)
        .arg(DISABLED_FEATURES.join(","))
        .arg(contract.version.as_str())
        .current_dir(&project.dir)
        .output()
        .map_err(|source| BuildError::Spawn {
            program: node.display().to_string(),
            source,
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(package) = stderr
        .lines()
        .find_map(|l| l.strip_prefix("syncweave-missing-package "))
    {
        let version = match package {
            "rolldown" => ROLLDOWN_VERSION,
            _ => COMPONENTIZE_JS_VERSION,
        };
        return Err(BuildError::MissingTool {
            tool: package.to_string(),
            problem: format!("node cannot find it from {}", project.dir.display()),
            install: format!(
                "run `npm install` in {} (package.json must list it in devDependencies, as \
                 `syncweave plugin new` writes it), or `npm install --save-dev {package}@{version}`",
                project.dir.display()
            ),
        });
    }
    if !out.status.success() || !tmp_out.is_file() {
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr);
        eprintln!("{}", text.trim_end());
        return Err(BuildError::ToolFailed {
            tool: "rolldown/componentize-js".into(),
            project: project.dir.clone(),
            status: out.status.to_string(),
            hint: hint(&text, &contract),
        });
    }
    if progress && !stderr.trim().is_empty() {
        // Bundler warnings: worth seeing even when the build succeeds.
        eprintln!("{}", stderr.trim_end());
    }
    install_component(
        "componentize-js",
        &tmp_out,
        out_dir,
        &project.name,
        progress,
    )
}

/// The versions of the contract's interfaces an entry module imports
/// (`syncweave:plugin/host-log@0.2.0` → `0.2.0`), deduplicated.
fn imported_versions(output: &str) -> Vec<&str> {
    let mut versions: Vec<&str> = output
        .match_indices("syncweave:plugin/")
        .filter_map(|(i, m)| {
            let rest = &output[i + m.len()..];
            let at = rest.find('@')?;
            let name = &rest[..at];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
                return None;
            }
            let version = &rest[at + 1..];
            let end = version
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(version.len());
            Some(version[..end].trim_end_matches('.'))
        })
        .filter(|v| !v.is_empty())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    versions
}

/// What to do about a failed build, from the tools' output.
fn hint(output: &str, contract: &ProjectContract) -> String {
    // The SDK's own check: the plugin's `contract` is not the world's.
    if let Some(line) = output.lines().find_map(|l| {
        let at = l.find("ContractError: ")?;
        Some(l[at + "ContractError: ".len()..].trim())
    }) {
        return format!(
            "; the plugin and the project disagree on the contract (the project builds against \
             {}, from {}): {line}",
            contract.version.package(),
            contract.source
        );
    }
    // The entry module imports the host's interfaces at another version than
    // the world's: componentize-js cannot resolve them.
    let want = format!("{}.0", contract.version.as_str());
    let other: Vec<&str> = imported_versions(output)
        .into_iter()
        .filter(|v| *v != want)
        .collect();
    if !other.is_empty() {
        let named = other
            .iter()
            .filter_map(|v| ContractVersion::parse(v))
            .map(|v| v.as_str())
            .next();
        let fix = match named {
            Some(v) => format!(
                "import them @{want}, or set \"syncweave\": {{\"contract\": \"{v}\"}} in \
                 package.json if the plugin targets {v}"
            ),
            None => format!("import them @{want}"),
        };
        return format!(
            "; the entry module imports syncweave:plugin interfaces @{} but the project builds \
             against {} (from {}): {fix}",
            other.join(", @"),
            contract.version.package(),
            contract.source
        );
    }
    let last = tail(output, 4);
    if last.is_empty() {
        String::new()
    } else {
        format!("; its last lines were:\n{last}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(version: ContractVersion) -> ProjectContract {
        ProjectContract {
            version,
            source: "package.json \"syncweave\".contract".into(),
        }
    }

    #[test]
    fn hints_name_the_contract_fix() {
        let c02 = contract(ContractVersion::V0_2);
        let h = hint(
            "file:///x/bundle.js:12\nContractError: plugin 'ns' targets contract 0.1 but ...\n",
            &c02,
        );
        assert!(
            h.starts_with(
                "; the plugin and the project disagree on the contract (the project builds \
                 against syncweave:plugin@0.2.0, from package.json \"syncweave\".contract): \
                 plugin 'ns' targets contract 0.1"
            ),
            "{h}"
        );
        let h = hint(
            "Error: Import 'syncweave:plugin/host-log@0.1.0' in the source is not defined by the world",
            &c02,
        );
        assert!(
            h.contains("imports syncweave:plugin interfaces @0.1.0"),
            "{h}"
        );
        assert!(h.contains("import them @0.2.0"), "{h}");
        assert!(h.contains("\"contract\": \"0.1\""), "{h}");
        let h = hint("x\ny\nz\nw\nv", &c02);
        assert_eq!(h, "; its last lines were:\n  y\n  z\n  w\n  v");
        assert_eq!(
            imported_versions("a syncweave:plugin/reads@0.2.0, syncweave:plugin/host-log@0.2.0."),
            ["0.2.0"]
        );
    }

    #[test]
    fn an_unknown_contract_stops_the_build_before_node() {
        let dir = std::env::temp_dir().join(format!("sw-js-contract-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("component.js"), "").unwrap();
        std::fs::write(
            dir.join("package.json"),
            r#"{"name": "p", "syncweave": {"world": "mutator", "contract": "1.0"}}"#,
        )
        .unwrap();
        let project = JsProject {
            dir: dir.clone(),
            name: "p".into(),
            world: "mutator".into(),
            entry: "component.js".into(),
            wit: dir.join("wit"),
        };
        let err = build_js(&project, &dir, false).unwrap_err();
        assert!(
            err.to_string()
                .contains("\"syncweave\".contract = \"1.0\" names a plugin contract version"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_entry_is_named() {
        let dir = std::env::temp_dir().join(format!("sw-js-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let project = JsProject {
            dir: dir.clone(),
            name: "p".into(),
            world: "mutator".into(),
            entry: "component.js".into(),
            wit: dir.join("wit"),
        };
        let err = build_js(&project, &dir, false).unwrap_err();
        assert!(err.to_string().contains("\"entry\""), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
