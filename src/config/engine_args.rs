//! Parsing of `--extra-engine-args` / `--prefill-engine-args` / `--decode-engine-args` JSON.
