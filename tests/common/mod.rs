//! Helpers shared by the integration tests that need AIConfigurator's Python package
//! (`tests/aic.rs`, `tests/sweep_served.rs`): each test crate includes this with `mod common;`.

use std::process::Command;

/// The Python that holds aiconfigurator-core: `DYNOSIM_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("DYNOSIM_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Whether the AIC package is importable; without it, a test is skipped (outside CI).
pub fn have_aic(test: &str) -> bool {
    let ok = Command::new(python())
        .args(["-c", "import aiconfigurator_core"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI must provide aiconfigurator-core (DYNOSIM_PYTHON={})",
            python()
        );
        eprintln!(
            "skipped: {test} needs `pip install aiconfigurator-core==0.12.0` (or DYNOSIM_PYTHON)"
        );
    }
    ok
}
