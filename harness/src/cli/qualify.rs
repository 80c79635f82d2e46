//! `rehearse qualify`: the rollout qualification procedure (CONTRACT part C) against any
//! cluster: rehearse a candidate template version on a canary clone restored from a real
//! backup, then promote the fleet in gated batches or halt without touching it.

use std::path::PathBuf;

use super::CliError;
use super::run::{Target, check_reports_dir, cluster};
use crate::cases::context::CaseContext;
use crate::evidence::bundle::{Bundle, BundleMeta, Verdict};
use crate::qualify::{self, Outcome, Plan, Rollback};
use crate::run;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RollbackArg {
    /// Re-pin the previous version; the save must be readable directly.
    Compatible,
    /// Restore the pre-candidate snapshot (format-changing candidates).
    RestoreRequired,
}

#[derive(Debug, clap::Args)]
pub struct QualifyArgs {
    #[command(flatten)]
    pub target: Target,
    /// The candidate: a version id of the template, its image pinned by digest.
    #[arg(long)]
    pub candidate: String,
    /// The GameTemplate holding the candidate.
    #[arg(long)]
    pub template: String,
    /// The namespace of the fleet.
    #[arg(long)]
    pub namespace: String,
    /// The fleet member whose backup seeds the canary clone.
    #[arg(long)]
    pub source: String,
    /// Fleet members, comma-separated, promoted in this order (default: the source only).
    #[arg(long, value_delimiter = ',')]
    pub fleet: Vec<String>,
    /// Members per promotion batch.
    #[arg(long, default_value_t = 1)]
    pub batch_size: usize,
    #[arg(long, value_enum, default_value = "compatible")]
    pub rollback: RollbackArg,
    /// Bundle directory name under --reports (default: a fresh run id).
    #[arg(long)]
    pub run_id: Option<String>,
}

pub async fn run(args: QualifyArgs) -> Result<(), CliError> {
    if matches!(args.target.cluster, super::run::ClusterArg::Embedded) {
        return Err(CliError::usage(
            "rehearse qualify acts on a fleet that already exists: use --cluster existing --kubeconfig P --context C (or --cluster kind)",
        ));
    }
    check_reports_dir(&args.target.reports)?;
    let cluster = cluster(&args.target)?;
    let backend = run::start_backend(&cluster, None)
        .await
        .map_err(|e| CliError::usage(format!("cannot reach the cluster: {e}")))?;
    let run_id = args.run_id.clone().unwrap_or_else(run::new_run_id);
    let dir: PathBuf = Bundle::dir_for(&args.target.reports, &run_id);
    let arch = crate::backend::Arch::host().as_str().to_string();
    let bundle = Bundle::create(
        &dir,
        BundleMeta::new(
            &run_id,
            &run::current_commit(),
            "operator-under-test",
            "unknown",
            &arch,
        ),
    )
    .map_err(|e| CliError::usage(e.to_string()))?;
    let case = format!("qualify-{}", args.candidate);
    let recorder = bundle
        .case(&case, "qualify")
        .map_err(|e| CliError::usage(e.to_string()))?;
    let ctx = CaseContext::new(backend.as_ref(), args.namespace.clone(), recorder);
    let plan = Plan {
        template: args.template.clone(),
        source: args.source.clone(),
        fleet: if args.fleet.is_empty() {
            vec![args.source.clone()]
        } else {
            args.fleet.clone()
        },
        batch_size: args.batch_size.max(1),
        candidate: args.candidate.clone(),
        rollback: match args.rollback {
            RollbackArg::Compatible => Rollback::Compatible,
            RollbackArg::RestoreRequired => Rollback::RestoreRequired,
        },
    };
    let result = qualify::qualify(&ctx, &plan).await;
    let CaseContext { recorder, .. } = ctx;
    let (verdict, message) = match &result {
        Ok(q) => match &q.outcome {
            Outcome::Promoted { batches } => (
                Verdict::Passed,
                format!("promoted {} in {batches} batch(es)", args.candidate),
            ),
            halted @ Outcome::Halted { .. } => (
                Verdict::Failed,
                format!("{}; no further fleet member was touched", halted.line()),
            ),
        },
        Err(e) => (
            Verdict::Failed,
            format!("the procedure could not complete: {e}"),
        ),
    };
    recorder
        .finish_with_reason(
            verdict,
            (verdict != Verdict::Passed).then_some(message.as_str()),
        )
        .map_err(|e| CliError::usage(e.to_string()))?;
    bundle
        .finalize(false)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let _ = backend.teardown(true).await;
    println!("bundle: {}", dir.display());
    if verdict == Verdict::Passed {
        println!("{message}");
        Ok(())
    } else {
        Err(CliError::failed(message))
    }
}
