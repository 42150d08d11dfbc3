//! The fuzz targets link dynosim, which carries two versions of aiconfigurator-core that both
//! define the (never called) `PyInit__aiconfigurator_core` symbol: the same link setting as
//! dynosim's own build.rs (whose link arguments apply only to dynosim's own targets).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    let elf = family.split(',').any(|f| f == "unix")
        && !matches!(os.as_str(), "macos" | "ios" | "tvos" | "watchos" | "visionos");
    if elf {
        println!("cargo:rustc-link-arg=-Wl,--allow-multiple-definition");
    }
}
