//! Parsing of `--router-config` JSON.
