//! The Kubernetes manifest: one `DynamoGraphDeployment` (`nvidia.com/v1alpha1`, Dynamo 1.4.2's
//! operator) with a frontend service and one worker service per pool. Built as a JSON value and
//! written as YAML, so what the tests validate against the CRD's schema is what is written.

use super::launch::{LaunchPlan, Role, DYNAMO_VERSION};
use serde_json::{json, Map, Value};

/// Options of the manifest.
pub struct K8sOptions<'a> {
    /// `metadata.name` (a DNS-1123 label).
    pub name: &'a str,
    /// Container image of every service.
    pub image: &'a str,
    /// The secret holding `HF_TOKEN` for the model download.
    pub hf_secret: &'a str,
}

/// Frontend HTTP port.
pub const HTTP_PORT: u16 = 8000;

/// The manifest as a value.
pub fn manifest(plan: &LaunchPlan, opt: &K8sOptions) -> Value {
    let mut services = Map::new();
    let mut fe_args = vec!["--http-port".to_string(), HTTP_PORT.to_string()];
    fe_args.extend(plan.frontend_args.iter().cloned());
    services.insert(
        "Frontend".into(),
        json!({
            "componentType": "frontend",
            "replicas": 1,
            "extraPodSpec": {"mainContainer": {
                "name": "main",
                "image": opt.image,
                "command": ["python3", "-m", "dynamo.frontend"],
                "args": fe_args,
            }},
        }),
    );
    for p in &plan.pools {
        let name = format!(
            "{}{}Worker",
            p.engine.service_prefix(),
            match p.role {
                Role::Aggregated => "",
                Role::Prefill => "Prefill",
                Role::Decode => "Decode",
            }
        );
        let mut args = p.args.clone();
        args.extend(p.worker_args(0));
        let gpus = p.gpus_per_replica().to_string();
        let mut svc = json!({
            "componentType": "worker",
            "replicas": p.replicas,
            "envFromSecret": opt.hf_secret,
            "resources": {"requests": {"gpu": gpus}, "limits": {"gpu": gpus}},
            "extraPodSpec": {"mainContainer": {
                "name": "main",
                "image": opt.image,
                "command": ["python3", "-m", p.engine.module()],
                "args": args,
            }},
        });
        if p.role != Role::Aggregated {
            svc["subComponentType"] = json!(p.role.name());
        }
        services.insert(name, svc);
    }
    json!({
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": opt.name},
        "spec": {
            "backendFramework": plan.engine.framework(),
            "services": services,
        },
    })
}

/// The manifest as YAML with its header comment.
pub fn yaml(plan: &LaunchPlan, opt: &K8sOptions, what: &str) -> String {
    let body = serde_yaml::to_string(&manifest(plan, opt)).unwrap_or_default();
    let mut out = String::new();
    out.push_str(&format!(
        "# DynamoGraphDeployment for NVIDIA Dynamo {DYNAMO_VERSION} (nvidia.com/v1alpha1), written by\n\
         # `dynosim deploy` for {what}.\n\
         # {} GPUs: {}. Model: {}.\n\
         # Apply with: kubectl apply -n <namespace> -f deployment.yaml (the Dynamo {DYNAMO_VERSION} platform\n\
         # must be installed; create the `{}` secret with HF_TOKEN first).\n",
        plan.gpus(),
        plan.pools
            .iter()
            .map(|p| format!(
                "{} x {} worker(s) of {} GPU(s) (TP {}{})",
                p.replicas,
                p.role.name(),
                p.gpus_per_replica(),
                p.tp,
                if p.dp > 1 { format!(" x DP {}", p.dp) } else { String::new() }
            ))
            .collect::<Vec<_>>()
            .join(", "),
        plan.model,
        opt.hf_secret,
    ));
    out.push_str(&body);
    out
}
