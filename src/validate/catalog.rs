//! What the installed AIConfigurator has ([`AicCatalog`]): its perf databases by system and
//! backend with their default versions, and its bundled model configs with what `validate`
//! reads from them (layer count, checkpoint quantisation, experts' intermediate size). Table
//! rows name models by their Hugging Face names and backends by the versions that measured
//! them; the catalog maps both onto what AIC can time.

use crate::error::InputError;
use std::collections::BTreeMap;

/// What the installed AIConfigurator has: perf databases by system and backend, bundled models.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AicCatalog {
    pub databases: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// AIC's default version per system and backend (its `current` slot), where it says.
    pub defaults: BTreeMap<String, BTreeMap<String, String>>,
    pub models: Vec<String>,
    /// Layer count of each bundled model config (AIC's parser), where it says.
    pub layers: BTreeMap<String, u32>,
    /// The quantisation each bundled config declares for its checkpoint (`mxfp4`,
    /// `fp8_block`), where it declares one.
    pub checkpoint_quant: BTreeMap<String, String>,
    /// The routed experts' intermediate size of each bundled MoE config, where AIC says.
    pub moe_inter_size: BTreeMap<String, u32>,
    /// How many layers of each bundled MoE model route to experts, where AIC says.
    pub moe_layers: BTreeMap<String, u32>,
}

impl AicCatalog {
    /// Asks the installed package (`dynosim aic list`'s answer).
    pub fn load() -> Result<Self, InputError> {
        let c = crate::timing::aic::catalog()?;
        Ok(AicCatalog {
            databases: c.databases,
            defaults: c.defaults,
            models: c.models,
            layers: c.layers,
            checkpoint_quant: c.checkpoint_quant,
            moe_inter_size: c.moe_inter_size,
            moe_layers: c.moe_layers,
        })
    }

    /// The bundled model config for a Hugging Face name: the name itself when bundled, else
    /// the bundled model of the same base name (the name after the organisation, without a
    /// `Meta-` prefix or `-Instruct`, `-Base`, `-FP8`, `-NVFP4`, `-BF16`, `-FP4` suffixes:
    /// `meta-llama/Llama-3.1-70B` is `meta-llama/Meta-Llama-3.1-70B`), preferring the same
    /// organisation, then the shortest name (the unquantised config: quantisation is set
    /// separately).
    pub fn model_for(&self, hf: &str) -> Option<String> {
        if self.models.iter().any(|m| m == hf) {
            return Some(hf.to_string());
        }
        let key = base_name(hf);
        let org = org_of(hf);
        self.models
            .iter()
            .filter(|m| base_name(m) == key)
            .min_by_key(|m| (org_of(m) != org, m.len(), m.to_string()))
            .cloned()
    }

    /// The installed perf-data version for a row's backend version: the same when installed,
    /// else the nearest by its numbers (`0.19.0` -> `0.24.0`), AIC's default when the row's has
    /// none (empty, `nightly-dev`) or two are as near (TRT-LLM `1.1.0rc2` is as far from
    /// `1.3.0rc20` as from `1.3.0rc23`). AIC's default is its `current` collection (TRT-LLM
    /// 1.3.0rc20, vLLM 0.24.0, SGLang 0.5.14 in 0.12.0), the version AIConfigurator itself
    /// queries when given none; the newer `next` (1.3.0rc23, 0.27.0, 0.5.16) is a development
    /// drop for new models whose own tables (TRT-LLM's MoE on H200) hold those models' shapes
    /// only. Without a default, the newest. `Err`: the system or backend has no perf data.
    pub fn version_for(
        &self,
        system: &str,
        backend: &str,
        version: &str,
    ) -> Result<String, String> {
        let Some(backends) = self.databases.get(system) else {
            return Err(format!(
                "AIC has no perf data for system {system:?} (installed: {})",
                self.databases
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let installed = backends
            .get(backend)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("AIC has no {backend} perf data for {system}"))?;
        if installed.iter().any(|v| v == version) {
            return Ok(version.to_string());
        }
        let default = self
            .defaults
            .get(system)
            .and_then(|b| b.get(backend))
            .filter(|d| installed.contains(d))
            .cloned()
            .or_else(|| {
                installed
                    .iter()
                    .max_by_key(|v| (version_number(v).unwrap_or(0), v.to_string()))
                    .cloned()
            })
            .unwrap_or_default();
        let Some(wanted) = version_number(version) else {
            return Ok(default);
        };
        Ok(installed
            .iter()
            .min_by_key(|v| {
                let n = version_number(v).unwrap_or(0);
                (
                    n.abs_diff(wanted),
                    **v != default,
                    std::cmp::Reverse((n, v.to_string())),
                )
            })
            .cloned()
            .unwrap_or(default))
    }
}

/// `Org/Name` -> `org`.
fn org_of(name: &str) -> String {
    name.split_once('/')
        .map(|(o, _)| o.to_ascii_lowercase())
        .unwrap_or_default()
}

/// The comparable base of a model name (see [`AicCatalog::model_for`]).
fn base_name(name: &str) -> String {
    let mut n = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    if let Some(rest) = n.strip_prefix("meta-") {
        n = rest.to_string();
    }
    loop {
        let before = n.len();
        for suffix in ["-instruct", "-base", "-fp8", "-nvfp4", "-bf16", "-fp4"] {
            if let Some(rest) = n.strip_suffix(suffix) {
                n = rest.to_string();
            }
        }
        if n.len() == before {
            return n;
        }
    }
}

/// `major.minor.patch` of a version's leading numbers as one comparable number.
fn version_number(v: &str) -> Option<u64> {
    let lead: String = v
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let parts: Vec<u64> = lead
        .split('.')
        .filter(|p| !p.is_empty())
        .take(3)
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    if parts.is_empty() {
        return None;
    }
    Some(
        parts
            .iter()
            .chain(std::iter::repeat(&0))
            .take(3)
            .fold(0, |acc, p| acc * 10_000 + p.min(&9_999)),
    )
}
