//! Building JavaScript plugins: rolldown bundles the entry module and what it
//! imports into one ES module (componentize-js resolves no packages itself),
//! then componentize-js embeds it in SpiderMonkey as a component.
//!
//! Both tools are the project's own npm devDependencies, loaded by node from
//! the project directory: nothing is installed here.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    /// A WIT file or directory holding the world.
    pub wit: PathBuf,
}

/// Runs in node with the project directory as the working directory, so that
/// `import()` resolves the project's own node_modules. Arguments: entry, WIT
/// path, world, bundle path, output path, disabled features (comma-separated).
const DRIVER: &str = r#"
const [entry, witPath, worldName, bundlePath, outPath, disabled] = process.argv.slice(1);
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
const bundle = await rolldown({
  input: entry,
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
    let node = find_on_path("node").ok_or_else(|| BuildError::MissingTool {
        tool: "node".into(),
        problem: "it is not on PATH".into(),
        install: "install Node.js 18 or newer (e.g. `apt-get install nodejs npm`)".into(),
    })?;
    let scratch = Scratch::new("js").map_err(|source| BuildError::Write {
        path: std::env::temp_dir(),
        source,
    })?;
    let bundle = scratch.path().join("bundle.js");
    let tmp_out = scratch.path().join(format!("{}.wasm", project.name));
    if progress {
        eprintln!(
            "syncweave: building JavaScript plugin {} (world {}) with rolldown and componentize-js \
             (about 15 s)",
            project.name, project.world
        );
    }
    let out = Command::new(&node)
        .args(["--input-type=module", "-e", DRIVER])
        .arg(&entry)
        .arg(&project.wit)
        .arg(&project.world)
        .arg(&bundle)
        .arg(&tmp_out)
        .arg(DISABLED_FEATURES.join(","))
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
        let last = tail(&text, 4);
        return Err(BuildError::ToolFailed {
            tool: "rolldown/componentize-js".into(),
            project: project.dir.clone(),
            status: out.status.to_string(),
            hint: if last.is_empty() {
                String::new()
            } else {
                format!("; its last lines were:\n{last}")
            },
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

#[cfg(test)]
mod tests {
    use super::*;

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
