//! Link setting for carrying two versions of AIConfigurator's estimator (see Cargo.toml).
//!
//! `aiconfigurator-core` 0.11.0 and 0.12.0 each define the Python extension entry point
//! `PyInit__aiconfigurator_core` as an unmangled (`#[no_mangle]`) symbol, so a link of both is
//! refused as a duplicate definition. Every other symbol of the two crates is mangled with the
//! crate's version-specific hash, and their C dependencies (zstd, pyo3-ffi) are one copy each, so
//! this entry point is the only duplicate (checked: the link without this flag reports just it).
//! dynosim never calls either entry point (it never runs inside a Python interpreter and never
//! loads Python; the compile step is a `python3` subprocess), so which copy the linker keeps does
//! not matter: allowing the duplicate is safe.
//!
//! ELF linkers (GNU ld, gold, lld) take `--allow-multiple-definition` (= `-z muldefs`); other
//! targets get no flag, where carrying both crates would need another answer.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    let elf = family.split(',').any(|f| f == "unix")
        && !matches!(
            os.as_str(),
            "macos" | "ios" | "tvos" | "watchos" | "visionos"
        );
    if elf {
        // Binaries, tests, benches and examples of this package; the library itself is an rlib
        // and is not linked here.
        println!("cargo:rustc-link-arg=-Wl,--allow-multiple-definition");
    }
}
