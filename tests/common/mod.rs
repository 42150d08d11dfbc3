//! Helpers shared by the integration tests that need AIConfigurator's Python package
//! (`tests/aic.rs`, `tests/sweep_served.rs`): each test crate includes this with `mod common;`.

use std::process::Command;

/// The Python that holds aiconfigurator-core: `DYNOSIM_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("DYNOSIM_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Whether the AIC package is importable; without it, a test is skipped (outside CI).
pub fn have_aic(test: &str) -> bool {
    can_import(
        &python(),
        "aiconfigurator_core",
        test,
        &format!("aiconfigurator-core (DYNOSIM_PYTHON={})", python()),
        "`pip install aiconfigurator-core==0.12.0` (or DYNOSIM_PYTHON)",
    )
}

/// Whether `py` imports `module`. Without it a test is skipped with a line saying to
/// `install`, except in CI, which must provide `what`.
#[allow(dead_code)] // not every test crate that includes this module calls it directly
pub fn can_import(py: &str, module: &str, test: &str, what: &str, install: &str) -> bool {
    let ok = Command::new(py)
        .args(["-c", &format!("import {module}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI must provide {what}"
        );
        eprintln!("skipped: {test} needs {install}");
    }
    ok
}
