//! Sweeps: YAML spec, grid expansion, parallel runner, leaderboards, shards and merge.
