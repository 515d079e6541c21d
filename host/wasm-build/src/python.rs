//! Building Python plugins with componentize-py.
//!
//! componentize-py bundles CPython, the app module and what it imports (from
//! the project directory, the extra paths given here, and the active
//! environment's site-packages) into one component for a WIT world.
//!
//! The world is taken from the contract version the project names
//! (`[tool.syncweave] contract` in pyproject.toml, default 0.1; see
//! [`crate::contract`]). componentize-py runs the app module while it builds,
//! so the SDK's check that the plugin's own `contract` matches the world
//! fails the build with its fix, which [`hint`] brings to the front.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::contract::{self, ProjectContract};
use crate::{BuildError, BuiltComponent, Scratch, find_on_path, install_component, tail};

/// The componentize-py release syncweave is tested with.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// One Python plugin project to build.
#[derive(Debug, Clone)]
pub struct PythonProject {
    /// The project directory (holds the app module).
    pub dir: PathBuf,
    /// The component's name: the output is `<out_dir>/<name>.wasm`.
    pub name: String,
    /// The WIT world the component targets (mutator, namer, projector, renderer).
    pub world: String,
    /// The module componentize-py wraps (`app` for `app.py`).
    pub app: String,
    /// A WIT file or directory holding the contract. Used when it declares
    /// the package of the project's contract version
    /// ([`contract::python_contract`]); otherwise the build writes the
    /// embedded contract of that version and uses it.
    pub wit: PathBuf,
    /// Directories searched for modules after the project directory (e.g. the
    /// entries of `PYTHONPATH`); site-packages come last.
    pub python_path: Vec<PathBuf>,
}

impl PythonProject {
    /// The contract version this project is built against, and where it is
    /// named.
    pub fn contract(&self) -> Result<ProjectContract, BuildError> {
        contract::python_contract(&self.dir)
    }
}

/// componentize-py: `$SYNCWEAVE_COMPONENTIZE_PY`, else from PATH.
pub fn find_componentize_py() -> Result<PathBuf, BuildError> {
    if let Some(p) = std::env::var_os("SYNCWEAVE_COMPONENTIZE_PY") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(BuildError::MissingTool {
            tool: "componentize-py".into(),
            problem: format!(
                "SYNCWEAVE_COMPONENTIZE_PY names {}, which does not exist",
                p.display()
            ),
            install: "point it at a componentize-py executable, or unset it to use the one on PATH"
                .into(),
        });
    }
    find_on_path("componentize-py").ok_or_else(|| BuildError::MissingTool {
        tool: "componentize-py".into(),
        problem: "it is not on PATH".into(),
        install: format!(
            "install it with `python3 -m pip install componentize-py=={COMPONENTIZE_PY_VERSION}` \
             (in the virtualenv your plugin uses, if any), then run the build again"
        ),
    })
}

/// Builds `project` into `<out_dir>/<name>.wasm`.
pub fn build_python(
    project: &PythonProject,
    out_dir: &Path,
    progress: bool,
) -> Result<BuiltComponent, BuildError> {
    let app_file = project.dir.join(format!("{}.py", project.app));
    let app_pkg = project.dir.join(&project.app).join("__init__.py");
    if !app_file.is_file() && !app_pkg.is_file() {
        return Err(BuildError::BadProject {
            project: project.dir.clone(),
            detail: format!(
                "no module {:?} ({} or {}); set [tool.syncweave] app in pyproject.toml to \
                 the module componentize-py should wrap",
                project.app,
                app_file.display(),
                app_pkg.display()
            ),
        });
    }
    let contract = project.contract()?;
    let tool = find_componentize_py()?;
    let scratch = Scratch::new("python").map_err(|source| BuildError::Write {
        path: std::env::temp_dir(),
        source,
    })?;
    let wit = contract::resolve_wit(&project.wit, contract.version, scratch.path())?;
    let tmp_out = scratch.path().join(format!("{}.wasm", project.name));
    if progress {
        eprintln!(
            "syncweave: building Python plugin {} (world {} of {}, contract from {}) with {} \
             (about 20 s)",
            project.name,
            project.world,
            contract.version.package(),
            contract.source,
            tool.display()
        );
    }
    let mut cmd = Command::new(&tool);
    cmd.arg("-d")
        .arg(&wit)
        .args(["-w", &project.world, "componentize", &project.app])
        .arg("-p")
        .arg(&project.dir);
    for p in &project.python_path {
        cmd.arg("-p").arg(p);
    }
    cmd.arg("-o").arg(&tmp_out).current_dir(&project.dir);
    let out = cmd.output().map_err(|source| BuildError::Spawn {
        program: tool.display().to_string(),
        source,
    })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() || !tmp_out.is_file() {
        eprintln!("{}", text.trim_end());
        return Err(BuildError::ToolFailed {
            tool: "componentize-py".into(),
            project: project.dir.clone(),
            status: out.status.to_string(),
            hint: hint(&text, &contract),
        });
    }
    install_component(
        "componentize-py",
        &tmp_out,
        out_dir,
        &project.name,
        progress,
    )
}

/// What to do about the failures users hit most.
fn hint(output: &str, contract: &ProjectContract) -> String {
    // The SDK's own check: the plugin's `contract` is not the world's.
    if let Some(line) = output.lines().find_map(|l| {
        l.trim()
            .strip_prefix("syncweave_plugin.contract.ContractError: ")
    }) {
        return format!(
            "; the plugin and the project disagree on the contract (the project builds against \
             {}, from {}): {line}",
            contract.version.package(),
            contract.source
        );
    }
    if output.contains("No module named 'syncweave_plugin'") {
        return "; the syncweave Python SDK is not installed: \
                `python3 -m pip install <syncweave checkout>/sdk/python` (in the environment \
                componentize-py runs in), or add its src directory to PYTHONPATH"
            .into();
    }
    if let Some(line) = output.lines().find(|l| l.contains("ModuleNotFoundError")) {
        return format!(
            "; {}: install the missing package in the environment componentize-py runs in \
             (its site-packages are searched), or add its directory to PYTHONPATH",
            line.trim()
        );
    }
    let last = tail(output, 3);
    if last.is_empty() {
        String::new()
    } else {
        format!("; its last lines were:\n{last}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v01() -> ProjectContract {
        ProjectContract {
            version: contract::ContractVersion::V0_1,
            source: "default".into(),
        }
    }

    #[test]
    fn a_contract_mismatch_is_the_hint() {
        let out = "Traceback (most recent call last):\n  File \"/0/app.py\", line 8\n\
                   syncweave_plugin.contract.ContractError: NamespaceLabels targets contract 0.2 \
                   (its contract attribute) but this component is being built against \
                   syncweave:plugin@0.1.0: set contract = \"0.2\" under [tool.syncweave]\n\n\
                   Caused by:\n    ContractError: NamespaceLabels targets contract 0.2\n";
        let h = hint(out, &v01());
        assert!(
            h.starts_with(
                "; the plugin and the project disagree on the contract (the project builds \
                 against syncweave:plugin@0.1.0, from default): NamespaceLabels targets"
            ),
            "{h}"
        );
        assert!(h.contains("under [tool.syncweave]"), "{h}");
    }

    #[test]
    fn hints_name_the_fix() {
        let v01 = v01();
        let hint = |out: &str| hint(out, &v01);
        let h = hint("Traceback...\nModuleNotFoundError: No module named 'syncweave_plugin'\n");
        assert!(
            h.contains("pip install <syncweave checkout>/sdk/python"),
            "{h}"
        );
        let h = hint("ModuleNotFoundError: No module named 'yaml'");
        assert!(
            h.contains("No module named 'yaml'") && h.contains("PYTHONPATH"),
            "{h}"
        );
        assert!(hint("a\nb\nc\nd").ends_with("  b\n  c\n  d"));
        assert_eq!(hint(""), "");
    }

    #[test]
    fn a_missing_app_module_is_named() {
        let dir = std::env::temp_dir().join(format!("sw-py-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let project = PythonProject {
            dir: dir.clone(),
            name: "p".into(),
            world: "mutator".into(),
            app: "app".into(),
            wit: dir.join("wit"),
            python_path: vec![],
        };
        let err = build_python(&project, &dir, false).unwrap_err();
        assert!(err.to_string().contains("[tool.syncweave] app"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unknown_contract_stops_the_build_before_componentize_py() {
        let dir = std::env::temp_dir().join(format!("sw-py-contract-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("app.py"), "").unwrap();
        std::fs::write(
            dir.join("pyproject.toml"),
            "[tool.syncweave]\nworld = \"mutator\"\ncontract = \"0.7\"\n",
        )
        .unwrap();
        let project = PythonProject {
            dir: dir.clone(),
            name: "p".into(),
            world: "mutator".into(),
            app: "app".into(),
            wit: dir.join("wit"),
            python_path: vec![],
        };
        let err = build_python(&project, &dir, false).unwrap_err();
        assert!(matches!(err, BuildError::UnknownContract { .. }), "{err}");
        assert!(err.to_string().contains("contract = \"0.7\""), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
