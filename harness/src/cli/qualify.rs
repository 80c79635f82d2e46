//! `rehearse qualify`: the rollout qualification procedure (docs/contract.md) against any
//! cluster: rehearse a candidate template version on a canary clone restored from a real
//! backup, then promote the fleet in gated batches or halt without touching it.

use std::path::PathBuf;

use super::CliError;
use super::run::{Target, check_reports_dir, cluster};
use crate::context::CaseContext;
use crate::evidence::bundle::{Bundle, BundleMeta, Verdict};
use crate::qualify::identity::{self, OperatorIdentity};
use crate::qualify::{self, Outcome, Plan, Rollback, tidy};
use crate::report::qualification::{Meta, QualificationReport};
use crate::run;

/// How the qualification rolls the clone back (`--rollback`).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RollbackArg {
    /// Re-pin the previous version; the save must be readable directly.
    Compatible,
    /// Restore the pre-candidate snapshot (format-changing candidates).
    RestoreRequired,
}

/// `rehearse qualify`: the candidate, the fleet, and where to record the run.
#[derive(Debug, clap::Args)]
pub struct QualifyArgs {
    /// The cluster to qualify on and where the bundle goes.
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
    /// Members per promotion batch (at least 1).
    #[arg(long, default_value_t = 1, value_parser = batch_size)]
    pub batch_size: usize,
    /// How many members of a batch are gated at once (image, join, save). The first failed
    /// gate stops the batch's gates that have not started; the batch is then put back.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub gate_concurrency: u16,
    /// How to roll the clone back after the candidate ran: re-pin the previous version, or
    /// restore the pre-candidate snapshot first.
    #[arg(long, value_enum, default_value = "compatible")]
    pub rollback: RollbackArg,
    /// Bundle directory name under --reports and the value of the label on every object the
    /// run creates (default: a fresh run id).
    #[arg(long)]
    pub run_id: Option<String>,
    /// The module bundle the candidate carries, pinned by digest, as
    /// SOURCE/MODULE:VERSION@sha256:DIGEST (a ModuleSource, a module in it, its tag): the canary
    /// halts at the module bundle gate, before the candidate runs, unless the bundle served is
    /// exactly that one and the operator installed it.
    #[arg(long, value_name = "SOURCE/MODULE:VERSION@DIGEST", value_parser = module_pin)]
    pub module_bundle: Option<String>,
    /// The Secret (key `repo`) naming the restic repository the source's backup goes to.
    #[arg(long, default_value = "restic-repo")]
    pub repo_secret: String,
    /// Keep what the run created (clone, Backup, Restores, and the restic snapshot its backup
    /// took) and print the kubectl commands to inspect it; by default the objects are removed
    /// and the snapshot forgotten at the end.
    #[arg(long)]
    pub keep: bool,
    /// Leave the members of a failed promotion batch on the candidate, to inspect them; by
    /// default every member the failed batch moved is put back on the version it ran before.
    /// (An interrupted batch is always put back.)
    #[arg(long)]
    pub no_rollback: bool,
    /// The operator's Deployment as NAMESPACE/NAME, whose image and running digest the bundle
    /// records.
    #[arg(long, default_value = "gameplane-system/reference-operator")]
    pub operator_deployment: String,
}

/// Runs the qualification, tidies (or keeps) what it created, and writes its bundle and report;
/// a halted or incomplete qualification, or a failed tidy-up, exits 1.
pub async fn run(args: QualifyArgs) -> Result<(), CliError> {
    check_input(&args).map_err(CliError::usage)?;
    if matches!(args.target.cluster, super::run::ClusterArg::Embedded) {
        return Err(CliError::usage(
            "rehearse qualify acts on a fleet that already exists: use --cluster existing --kubeconfig P --context C (or --cluster kind)",
        ));
    }
    // Before anything is created: an interrupt from here on stops the procedure at a step
    // boundary, tidies and writes the bundle instead of killing the process.
    let mut interrupts = run::Interrupts::install()
        .map_err(|e| CliError::usage(format!("cannot install the SIGINT/SIGTERM handlers: {e}")))?;
    check_reports_dir(&args.target.reports)?;
    let run_id = args.run_id.clone().unwrap_or_else(run::new_run_id);
    tidy::check_run_id(&run_id).map_err(CliError::usage)?;
    let named = args.target.operator.operator_named.as_deref();
    let given_operator = named.map(identity::parse_operator);
    let given_operator = given_operator.transpose().map_err(CliError::usage)?;
    let cluster = cluster(&args.target)?;
    let backend = run::start_backend(&cluster, None)
        .await
        .map_err(|e| CliError::usage(format!("cannot reach the cluster: {e}")))?;
    let client = backend.client();
    let namespace = args.namespace.clone();
    let plan = plan_of(&args, &run_id);
    check_names(&client, &namespace, &plan).await?;
    let operator = match given_operator {
        Some(o) => o,
        None => read_operator(&client, &args.operator_deployment).await?,
    };
    let bound = crate::context::Bounds::default().settle;
    let leftovers = clear_namespace(&client, &namespace, &plan, bound).await?;
    let dir: PathBuf = Bundle::dir_for(&args.target.reports, &run_id);
    let operator_version = operator_version(&operator);
    let bundle = create_bundle(&dir, &run_id, &operator.name, &operator_version)?;
    let case = format!("qualify-{}", args.candidate);
    let recorder = bundle
        .case(&case, "qualify")
        .map_err(|e| CliError::usage(e.to_string()))?;
    let ctx = CaseContext::new(backend.as_ref(), namespace.clone(), recorder);
    record_identity(&ctx, &operator, backend.as_ref(), &namespace, &leftovers)?;
    announce(&plan, &namespace, &dir);
    qualify::set_progress(true);
    let mut q = qualify::start(&plan);
    let (error, signal, at_once) =
        qualify_interruptible(&ctx, &plan, &mut q, &mut interrupts, bound).await;
    qualify::set_progress(false);
    if at_once {
        // Never read by the dropped procedure: the report must still show the fleet as it is.
        let _ = qualify::fleet::read_after(&ctx, &plan, &mut q).await;
    }
    record_interrupt(&ctx, signal, error.as_ref())?;
    let result = match &error {
        None => Ok(q.clone()),
        Some(e) => Err(e.to_string()),
    };
    keep_diagnostics(&ctx, backend.as_ref(), &dir, &case, &result, signal).await;
    // Tidy up whatever the outcome: the run's own objects, found by its label — never a way
    // back a member still needs.
    let tidied = tidy_up(&client, &namespace, &run_id, bound, args.keep).await;
    record_tidy(&ctx, args.keep, &tidied)?;
    if let Ok(t) = &tidied {
        keep_way_backs(&mut q, &t.kept_way_backs);
    }
    let meta = report_meta(
        &run_id,
        &operator.name,
        &operator_version,
        backend.as_ref(),
        &namespace,
    );
    let (report, violations) = judge_own_invariants(
        &ctx,
        &plan,
        &mut q,
        &dir,
        meta,
        error.as_ref(),
        signal.map(|s| (s, at_once)),
    )
    .await?;
    let CaseContext { recorder, .. } = ctx;
    let (verdict, message) = with_violations(
        verdict_of(&args.candidate, &result, signal, &q),
        &violations,
    );
    close_bundle(recorder, bundle, verdict, &message, signal.is_some())?;
    let written = crate::report::qualification::write(&report, &dir)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let (kubeconfig, context) = backend.kubeconfig();
    let inspect = tidy::inspect_commands(kubeconfig, context, &namespace, &run_id);
    let _ = backend.teardown(true).await;
    println!("bundle: {}", dir.display());
    for path in &written {
        println!("report: {}", path.display());
    }
    let concluded = conclude(
        &tidied, args.keep, &inspect, &run_id, &namespace, verdict, message,
    );
    match (signal, concluded) {
        (Some(_), Err(e)) => Err(CliError::interrupted(e.message)),
        (_, concluded) => concluded,
    }
}

/// Runs the procedure until it ends or a signal stops it. On SIGINT or SIGTERM every later step
/// is refused ([`crate::context::request_interrupt`]), so the procedure unwinds at its next step
/// boundary (a read-back still returns the game to saving); it is dropped where it is after
/// `grace`, or at once on a second signal. Returns the procedure's error and the signal, if any.
/// The third value is whether the procedure was dropped where it was (a second signal, or the
/// grace ran out), before it could put back the batch under way.
async fn qualify_interruptible(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut qualify::Qualification,
    interrupts: &mut run::Interrupts,
    grace: std::time::Duration,
) -> (
    Option<crate::context::CaseError>,
    Option<&'static str>,
    bool,
) {
    let procedure = qualify::qualify_into(ctx, plan, q);
    tokio::pin!(procedure);
    let signal = tokio::select! {
        error = &mut procedure => return (error, None, false),
        signal = interrupts.recv() => signal,
    };
    crate::context::request_interrupt(signal);
    println!("{signal}: stopping at the next step boundary, then removing what the run created");
    tokio::select! {
        error = &mut procedure => (error, Some(signal), false),
        () = tokio::time::sleep(grace) => (None, Some(signal), true),
        _ = interrupts.recv() => {
            println!("second signal: stopping at once; nothing that is a way back is removed");
            (None, Some(signal), true)
        }
    }
}

/// The run's bundle directory `dir`, created: the run, the harness's commit and the operator.
fn create_bundle(
    dir: &std::path::Path,
    run_id: &str,
    operator: &str,
    operator_version: &str,
) -> Result<Bundle, CliError> {
    Bundle::create(
        dir,
        BundleMeta::new(
            run_id,
            identity::HARNESS_COMMIT,
            operator,
            operator_version,
            crate::backend::Arch::host().as_str(),
        ),
    )
    .map_err(|e| CliError::usage(e.to_string()))
}

/// The run's first line: what is qualified, where, in how many batches, and the bundle.
fn announce(plan: &Plan, namespace: &str, dir: &std::path::Path) {
    println!(
        "qualifying {} of template {} on a clone of {} in {namespace} (fleet {}, {} batch(es)); bundle {}",
        plan.candidate,
        plan.template,
        plan.source,
        plan.fleet.join(","),
        crate::evidence::judge::gates::batches(&plan.fleet, plan.batch_size).len(),
        dir.display()
    );
}

/// The verdict and its line, failed when the qualification broke its own invariants (each
/// named).
fn with_violations(
    (verdict, message): (Verdict, String),
    violations: &[crate::evidence::invariants::Violation],
) -> (Verdict, String) {
    if violations.is_empty() {
        return (verdict, message);
    }
    let broken: Vec<String> = violations
        .iter()
        .map(|v| format!("{}: {}", v.invariant, v.found))
        .collect();
    (
        Verdict::Failed,
        format!(
            "{message}; the qualification broke its own invariants: {}",
            broken.join("; ")
        ),
    )
}

/// The kept pre-promotion Backups of members that are not back, added to the record's way back
/// (once each) with why they were kept.
fn keep_way_backs(q: &mut qualify::Qualification, kept: &[tidy::KeptWayBack]) {
    for k in kept {
        if q.way_back.iter().any(|w| w.backup == k.backup) {
            continue;
        }
        q.way_back.push(crate::evidence::qualification::WayBack {
            server: k.server.clone(),
            backup: k.backup.clone(),
            snapshot: k.snapshot.clone(),
            succeeded_unix_ms: None,
            previous: k.previous.clone(),
            kept_because: Some(k.why.clone()),
        });
    }
}

/// The qualification's own invariants, judged once it ended, from a fresh read of the cluster
/// ([`crate::evidence::invariants::way_back`]: way back, truth; and the qualification invariant D6): fills
/// in the interruption (`signal`: which, and whether it stopped the procedure at once) with who
/// a fresh read shows left on the candidate, builds the report, records the read and
/// the verdicts as a receipt, and returns the report with the violations.
async fn judge_own_invariants(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut qualify::Qualification,
    dir: &std::path::Path,
    meta: Meta,
    error: Option<&crate::context::CaseError>,
    signal: Option<(&str, bool)>,
) -> Result<
    (
        QualificationReport,
        Vec<crate::evidence::invariants::Violation>,
    ),
    CliError,
> {
    use crate::evidence::invariants::way_back;
    let at_once = signal.is_some_and(|(_, at_once)| at_once);
    q.interrupted = signal.map(
        |(signal, at_once)| crate::evidence::qualification::Interruption {
            signal: signal.to_string(),
            at_once,
            left_on_candidate: Vec::new(),
            before_step: match error {
                Some(crate::context::CaseError::Interrupted { step, .. }) => Some(step.clone()),
                _ => None,
            },
        },
    );
    let error_line = error.map(ToString::to_string);
    let error = error_line.as_deref();
    // The journal names every pre-promotion Backup the run created; one it cannot read leaves
    // the way back unknown, which is judged a violation below, never a pass.
    let (journal, unread) =
        match crate::evidence::receipts::verify_prefix(dir.join("receipts.jsonl")) {
            Ok(p) => (p.journal.receipts, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
    let taken = way_back::taken_from_receipts(&journal);
    let read = qualify::fleet::read(ctx, plan, &taken).await;
    if let Ok(read) = &read {
        // The report states this very read: a fleet still moving (a pod being replaced after
        // a second signal) is shown as it was read, never as an older memory of it.
        qualify::fleet::into_after(q, plan, read);
        let left = way_back::left_on_candidate(q, read);
        if let Some(i) = q.interrupted.as_mut() {
            i.left_on_candidate = left;
        }
    }
    let report = QualificationReport::new(meta, q, error);
    let mut violations = match &read {
        Ok(read) => {
            let mut v = way_back::way_back(q, &taken, read);
            v.extend(way_back::truth(q, &report, read));
            // A batch a second signal cut short is judged as one kept for inspection: its
            // members may stay on the candidate, named in the decision (truth) and with a way
            // back (way back).
            let mut judged = q.clone();
            judged.plan.keep_failed_batch |= at_once;
            let stopped = error.or(q.interrupted.as_ref().map(|i| i.signal.as_str()));
            v.extend(crate::evidence::invariants::qualification::judge(
                &judged, stopped, None,
            ));
            v
        }
        Err(e) => vec![crate::evidence::invariants::Violation {
            invariant: way_back::WAY_BACK.into(),
            evidence: "a fresh read of the fleet".into(),
            found: format!("unknown: the fleet could not be read after the run: {e}"),
        }],
    };
    if let Some(e) = unread {
        violations.push(crate::evidence::invariants::Violation {
            invariant: way_back::WAY_BACK.into(),
            evidence: "the run's journal (its pre-promotion Backups)".into(),
            found: format!("unknown: the journal could not be read: {e}"),
        });
    }
    ctx.recorder
        .step(
            "the qualification's own invariants",
            serde_json::json!({
                "invariants": [way_back::WAY_BACK, way_back::TRUTH, crate::evidence::invariants::qualification::QUALIFICATION],
                "held": violations.is_empty(),
                "violations": violations,
                "taken": taken,
                "read": read.as_ref().ok(),
            }),
        )
        .map_err(|e| CliError::usage(e.to_string()))?;
    for v in &violations {
        eprintln!("invariant {} violated: {}", v.invariant, v.found);
    }
    Ok((report, violations))
}

/// A halted, incomplete or interrupted qualification keeps its diagnostics, collected before
/// the tidy-up removes the clone: the namespace's events, every pod's logs (previous containers
/// too), the objects involved and the operator's log — the cases' collector.
async fn keep_diagnostics(
    ctx: &CaseContext<'_>,
    backend: &dyn crate::backend::Backend,
    dir: &std::path::Path,
    case: &str,
    result: &Result<qualify::Qualification, String>,
    signal: Option<&str>,
) {
    let promoted = matches!(result, Ok(q) if matches!(q.outcome, Outcome::Promoted { .. }));
    if signal.is_none() && promoted {
        return;
    }
    crate::artifacts::collect(ctx, backend).await;
    println!(
        "diagnostics: {}",
        dir.join("cases").join(case).join("artifacts").display()
    );
}

/// The `interrupted` receipt, when a signal stopped the procedure: which signal, and the step
/// it stopped before.
fn record_interrupt(
    ctx: &CaseContext<'_>,
    signal: Option<&str>,
    error: Option<&crate::context::CaseError>,
) -> Result<(), CliError> {
    let Some(signal) = signal else {
        return Ok(());
    };
    ctx.recorder
        .step(
            "interrupted",
            serde_json::json!({"signal": signal, "error": error.map(ToString::to_string)}),
        )
        .map_err(|e| CliError::usage(e.to_string()))?;
    Ok(())
}

/// Records the verdict (with its message unless it passed) and finalizes the bundle.
fn close_bundle(
    recorder: crate::evidence::bundle::CaseRecorder,
    bundle: Bundle,
    verdict: Verdict,
    message: &str,
    interrupted: bool,
) -> Result<(), CliError> {
    recorder
        .finish_with_reason(verdict, (verdict != Verdict::Passed).then_some(message))
        .map_err(|e| CliError::usage(e.to_string()))?;
    bundle
        .finalize(interrupted)
        .map_err(|e| CliError::usage(e.to_string()))?;
    Ok(())
}

/// The run's `identity` receipt: who is qualified (the operator), by what (the harness version
/// and commit), where (backend, context, namespace).
fn record_identity(
    ctx: &CaseContext<'_>,
    operator: &OperatorIdentity,
    backend: &dyn crate::backend::Backend,
    namespace: &str,
    leftovers: &Leftovers,
) -> Result<(), CliError> {
    ctx.recorder
        .step(
            "identity",
            serde_json::json!({
                "operator": operator,
                "harness": {"version": identity::HARNESS_VERSION, "commit": identity::HARNESS_COMMIT},
                "cluster": {"backend": backend.kind().to_string(), "context": backend.name()},
                "namespace": namespace,
            }),
        )
        .map_err(|e| CliError::usage(e.to_string()))?;
    if !leftovers.objects.is_empty() {
        ctx.recorder
            .step(
                "remove what earlier runs left",
                serde_json::json!({"removed": leftovers.objects, "snapshots": leftovers.snapshots}),
            )
            .map_err(|e| CliError::usage(e.to_string()))?;
    }
    Ok(())
}

/// The receipt of the tidy-up: what the run created and whether it was kept or removed, or why
/// removing it failed.
fn record_tidy(
    ctx: &CaseContext<'_>,
    keep: bool,
    tidied: &Result<Tidied, tidy::TidyError>,
) -> Result<(), CliError> {
    ctx.recorder
        .step(
            if keep {
                "keep what the run created"
            } else {
                "remove what the run created"
            },
            match tidied {
                Ok(t) => serde_json::json!({
                    "ok": true, "objects": t.objects, "snapshots": t.snapshots, "kept": keep,
                    "kept_way_backs": t.kept_way_backs,
                }),
                Err(e) => serde_json::json!({"ok": false, "error": e.to_string()}),
            },
        )
        .map_err(|e| CliError::usage(e.to_string()))?;
    Ok(())
}

/// The report's header: the run, the operator under test, the harness, and where it ran.
fn report_meta(
    run_id: &str,
    operator: &str,
    operator_version: &str,
    backend: &dyn crate::backend::Backend,
    namespace: &str,
) -> Meta {
    Meta {
        run_id: run_id.to_string(),
        operator: operator.to_string(),
        operator_version: operator_version.to_string(),
        harness_version: identity::HARNESS_VERSION.into(),
        harness_commit: identity::HARNESS_COMMIT.into(),
        backend: backend.kind().to_string(),
        context: backend.name().to_string(),
        namespace: namespace.to_string(),
    }
}

/// Prints what became of the run's objects (kept, with the commands to inspect them, or
/// removed) and the verdict; a failed tidy-up or a verdict other than promoted exits 1.
fn conclude(
    tidied: &Result<Tidied, tidy::TidyError>,
    keep: bool,
    inspect: &[String],
    run_id: &str,
    namespace: &str,
    verdict: Verdict,
    message: String,
) -> Result<(), CliError> {
    match tidied {
        Ok(t) if keep => {
            println!(
                "kept {} object(s) and {} restic snapshot(s) of run {run_id} in namespace {namespace} (the next qualification here removes them); inspect them with:",
                t.objects.len(),
                t.snapshots.ids.len()
            );
            for line in inspect {
                println!("  {line}");
            }
        }
        Ok(t) => {
            println!(
                "removed {} object(s) run {run_id} created in namespace {namespace} and forgot {} restic snapshot(s) it took (tag rehearsal-run={run_id})",
                t.objects.len(),
                t.snapshots.ids.len()
            );
            for k in &t.kept_way_backs {
                println!(
                    "kept Backup {} as the way back of {} ({}): see the report's Way back",
                    k.backup, k.server, k.why
                );
            }
        }
        Err(e) => {
            let verdict_line = if verdict == Verdict::Passed {
                &message
            } else {
                &format!("not promoted: {message}")
            };
            println!("{verdict_line}");
            return Err(CliError::failed(e.to_string()));
        }
    }
    if verdict == Verdict::Passed {
        println!("{message}");
        Ok(())
    } else {
        Err(CliError::failed(message))
    }
}

/// A `--batch-size` value: a whole number of members, at least 1.
fn batch_size(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(0) => {
            Err("a batch of 0 members promotes nothing and gates nothing; use 1 or more".into())
        }
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "{value:?} is not a number of members; use 1 or more"
        )),
    }
}

/// Refuses, before anything is read or touched, names the qualification cannot mean: an empty
/// name (`--fleet ""`, `--fleet a,,b`, an empty `--source`, `--template` or `--candidate`) and a
/// member listed twice (it would be gated twice and counted as two).
pub fn check_input(args: &QualifyArgs) -> Result<(), String> {
    for (flag, value) in [
        ("--candidate", &args.candidate),
        ("--template", &args.template),
        ("--namespace", &args.namespace),
        ("--source", &args.source),
    ] {
        if value.trim().is_empty() {
            return Err(format!("{flag} is empty; name it"));
        }
    }
    if args.fleet.iter().any(|m| m.trim().is_empty()) {
        return Err(format!(
            "--fleet {:?} names an empty member; list members as NAME,NAME (no empty entries)",
            args.fleet.join(",")
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for m in &args.fleet {
        if !seen.insert(m) {
            return Err(format!(
                "--fleet names {m} twice; list each member once (it would be moved and gated twice)"
            ));
        }
    }
    Ok(())
}

/// A `--module-bundle` value that parses as a [`crate::evidence::qualification::ModulePin`].
fn module_pin(value: &str) -> Result<String, String> {
    value
        .parse::<crate::evidence::qualification::ModulePin>()
        .map(|_| value.to_string())
}

/// The qualification plan `args` describe: the fleet defaults to the source alone, and a batch
/// holds at least one member.
fn plan_of(args: &QualifyArgs, run_id: &str) -> Plan {
    Plan {
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
        run_id: run_id.to_string(),
        repo_secret: args.repo_secret.clone(),
        // Checked by clap's value parser ([`module_pin`]).
        module: args.module_bundle.as_deref().and_then(|p| p.parse().ok()),
        keep_failed_batch: args.no_rollback,
        gate_concurrency: usize::from(args.gate_concurrency.max(1)),
    }
}

/// What the command line names must exist before anything is recorded: the namespace, the
/// template, the candidate version in it, the source and every fleet member. A name that does
/// not is a usage error (exit 2, no bundle), like a wrong context: nothing was qualified.
async fn check_names(client: &kube::Client, namespace: &str, plan: &Plan) -> Result<(), CliError> {
    use gameplane_api::gameserver::GameServer;
    use gameplane_api::gametemplate::GameTemplate;
    use k8s_openapi::api::core::v1::Namespace;
    use kube::Api;

    let cannot_read = |what: String| {
        move |e: kube::Error| {
            CliError::usage(format!(
                "cannot read {what}: {}",
                crate::kube_error::line(&e)
            ))
        }
    };
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces
        .get_opt(namespace)
        .await
        .map_err(cannot_read(format!("namespace {namespace}")))?
        .is_none()
    {
        return Err(CliError::usage(format!(
            "namespace {namespace} does not exist in this cluster; name the fleet's namespace with --namespace"
        )));
    }
    let templates: Api<GameTemplate> = Api::all(client.clone());
    let Some(template) = templates
        .get_opt(&plan.template)
        .await
        .map_err(cannot_read(format!("GameTemplate {}", plan.template)))?
    else {
        let known: Vec<String> = templates
            .list(&Default::default())
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .filter_map(|t| t.metadata.name)
                    .collect()
            })
            .unwrap_or_default();
        return Err(CliError::usage(format!(
            "GameTemplate {} does not exist (the cluster has {}); name the fleet's template with --template",
            plan.template,
            listed(&known)
        )));
    };
    if !template
        .spec
        .versions
        .iter()
        .any(|v| v.id == plan.candidate)
    {
        let ids: Vec<String> = template
            .spec
            .versions
            .iter()
            .map(|v| v.id.clone())
            .collect();
        return Err(CliError::usage(format!(
            "GameTemplate {} has no version {:?} (it has {}); name one with --candidate, or add it to the template's spec.versions",
            plan.template,
            plan.candidate,
            listed(&ids)
        )));
    }
    let servers: Api<GameServer> = Api::namespaced(client.clone(), namespace);
    let mut wanted = vec![plan.source.clone()];
    wanted.extend(plan.fleet.iter().filter(|m| **m != plan.source).cloned());
    let mut missing = Vec::new();
    for name in &wanted {
        if servers
            .get_opt(name)
            .await
            .map_err(cannot_read(format!("GameServer {namespace}/{name}")))?
            .is_none()
        {
            missing.push(name.clone());
        }
    }
    if !missing.is_empty() {
        return Err(CliError::usage(format!(
            "GameServer(s) {} do not exist in namespace {namespace}; name the fleet's members with --source and --fleet",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// `a, b, c`, or `none`.
fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Removes what earlier qualification runs left in `namespace` (found by their label: killed
/// runs, or runs kept with `--keep`) and refuses a name the run needs that anything else holds;
/// returns what was removed.
async fn clear_namespace(
    client: &kube::Client,
    namespace: &str,
    plan: &Plan,
    bound: std::time::Duration,
) -> Result<Leftovers, CliError> {
    let leftovers = tidy::find(client, namespace, None)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    // A way back an earlier run (killed, or stopped by a second signal) left for a member that
    // is not back is kept, never swept.
    let (leftovers, kept) = tidy::hold_way_backs(client, namespace, leftovers)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    for k in &kept {
        println!(
            "keeping Backup {} (run {}) as the way back of {}: {}",
            k.backup, k.run, k.server, k.why
        );
    }
    let mut snapshots = tidy::Snapshots::default();
    if !leftovers.is_empty() {
        println!(
            "removing what earlier qualification runs left in namespace {namespace}: {}",
            leftovers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        snapshots = tidy::snapshots(client, namespace, &leftovers, &plan.run_id, true, bound)
            .await
            .map_err(|e| CliError::usage(e.to_string()))?;
        if !snapshots.ids.is_empty() {
            println!(
                "forgot {} restic snapshot(s) those runs took",
                snapshots.ids.len()
            );
        }
        tidy::remove(client, namespace, &leftovers, bound)
            .await
            .map_err(|e| CliError::usage(e.to_string()))?;
    }
    let [clone_restore, rollback_restore] = plan.restore_names();
    tidy::check_free(
        client,
        namespace,
        &qualify::clone_name(&plan.source),
        &[&plan.backup_name()],
        &[&clone_restore, &rollback_restore],
    )
    .await
    .map_err(|e| CliError::usage(e.to_string()))?;
    Ok(Leftovers {
        objects: leftovers,
        snapshots,
    })
}

/// The run's verdict and its one-line message: promoted, halted at a gate, or not completed.
fn verdict_of(
    candidate: &str,
    result: &Result<qualify::Qualification, String>,
    signal: Option<&str>,
    q: &qualify::Qualification,
) -> (Verdict, String) {
    if signal.is_some() {
        return (
            Verdict::Interrupted,
            q.interrupted_decision()
                .unwrap_or_else(|| "not qualified: interrupted".into()),
        );
    }
    match result {
        Ok(q) => match &q.outcome {
            Outcome::Promoted { batches } => (
                Verdict::Passed,
                format!("promoted {candidate} in {batches} batch(es)"),
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
    }
}

/// The operator's version as recorded: its version, with the running digest appended when the
/// version does not already name it.
fn operator_version(operator: &OperatorIdentity) -> String {
    match &operator.digest {
        Some(d) if !operator.version.contains(d.as_str()) => {
            format!("{} ({d})", operator.version)
        }
        _ => operator.version.clone(),
    }
}

/// What a run created and the restic snapshots it took, removed and forgotten, or kept.
#[derive(Debug)]
struct Tidied {
    objects: Vec<tidy::Created>,
    snapshots: tidy::Snapshots,
    /// Pre-promotion Backups kept: their members are not back on the version they ran.
    kept_way_backs: Vec<tidy::KeptWayBack>,
}

/// What earlier runs left in the namespace, removed (objects) and forgotten (snapshots) first.
#[derive(Debug, Default)]
struct Leftovers {
    objects: Vec<tidy::Created>,
    snapshots: tidy::Snapshots,
}

/// Forgets the restic snapshots run `run_id` took and removes the objects it created (with
/// `keep`, only lists both); returns them.
async fn tidy_up(
    client: &kube::Client,
    namespace: &str,
    run_id: &str,
    bound: std::time::Duration,
    keep: bool,
) -> Result<Tidied, tidy::TidyError> {
    let objects = tidy::find(client, namespace, Some(run_id)).await?;
    let (objects, kept_way_backs) = if keep {
        (objects, Vec::new())
    } else {
        tidy::hold_way_backs(client, namespace, objects).await?
    };
    let snapshots = tidy::snapshots(client, namespace, &objects, run_id, !keep, bound).await?;
    if !keep {
        tidy::remove(client, namespace, &objects, bound).await?;
    }
    Ok(Tidied {
        objects,
        snapshots,
        kept_way_backs,
    })
}

/// The operator under test read from its Deployment `NAMESPACE/NAME`; without one, the run
/// is refused: a qualification must say which operator it qualified.
async fn read_operator(
    client: &kube::Client,
    deployment: &str,
) -> Result<OperatorIdentity, CliError> {
    let Some((ns, name)) = deployment.split_once('/') else {
        return Err(CliError::usage(format!(
            "--operator-deployment {deployment:?} is not NAMESPACE/NAME; name the operator's Deployment, or pass --operator NAME@VERSION"
        )));
    };
    let read = match identity::from_deployment(client, ns, name).await {
        // An embedded cluster runs its operator without a Deployment and records it instead.
        Ok(None) => identity::from_embedded_record(client, ns, name).await,
        other => other,
    };
    match read {
        Ok(Some(o)) => Ok(o),
        Ok(None) => Err(CliError::usage(format!(
            "no Deployment {ns}/{name} runs the operator under test; name it with --operator-deployment NAMESPACE/NAME, or pass --operator NAME@VERSION"
        ))),
        Err(e) => Err(CliError::usage(format!(
            "cannot read the operator's Deployment {ns}/{name}: {}; pass --operator NAME@VERSION",
            crate::kube_error::line(&e)
        ))),
    }
}
