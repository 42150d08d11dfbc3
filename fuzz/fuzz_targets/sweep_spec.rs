//! Feeds arbitrary bytes to the sweep spec parser: it must return a spec or an `InputError`,
//! never panic or hang; for an accepted spec, sizing and decoding a few points must not panic.
#![no_main]

use dynosim::sweep::spec::parse_spec;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = parse_spec(text, Path::new("fuzz/spec.yaml")) {
        let _ = spec.param_columns();
        let _ = dynosim::sweep::spec::trace_paths(&spec);
        if let Some(n) = spec.grid_size() {
            for id in [0, n / 2, n.saturating_sub(1)] {
                if id < n {
                    let _ = spec.point_params(id);
                }
            }
            // Resolving runs the engine and router JSON parsers on the merged objects.
            if n > 0 && n <= 64 {
                let mut r = dynosim::sweep::resolve::Resolver::new(&spec);
                for id in 0..n as u64 {
                    let _ = r.resolve(id);
                }
            }
        }
    }
});
