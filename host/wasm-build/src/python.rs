//! Building Python plugins with componentize-py.
//!
//! componentize-py bundles CPython, the app module and what it imports (from
//! the project directory, the extra paths given here, and the active
//! environment's site-packages) into one component for a WIT world.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    /// A WIT file or directory holding the world.
    pub wit: PathBuf,
    /// Directories searched for modules after the project directory (e.g. the
    /// entries of `PYTHONPATH`); site-packages come last.
    pub python_path: Vec<PathBuf>,
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
    let tool = find_componentize_py()?;
    let scratch = Scratch::new("python").map_err(|source| BuildError::Write {
        path: std::env::temp_dir(),
        source,
    })?;
    let tmp_out = scratch.path().join(format!("{}.wasm", project.name));
    if progress {
        eprintln!(
            "syncweave: building Python plugin {} (world {}) with {} (about 10 s)",
            project.name,
            project.world,
            tool.display()
        );
    }
    let mut cmd = Command::new(&tool);
    cmd.arg("-d")
        .arg(&project.wit)
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
            hint: hint(&text),
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
fn hint(output: &str) -> String {
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

    #[test]
    fn hints_name_the_fix() {
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
}
