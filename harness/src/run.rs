//! A local rehearsal: runs the chosen cases on the chosen cluster, with progress, into one
//! bundle under `reports/<run-id>/`, and says whether every case passed.
//!
//! On the embedded cluster every case gets its own cluster and operator (they start in well
//! under a second), so cases never share state and a mutant can be deployed per case. On Kind
//! or an existing cluster the cases share it, each in its own namespace.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::backend::{Backend, BackendError};
use crate::cases::{self, Case, CaseResult, RunOptions};
use crate::deploy::embedded::EmbeddedDeploy;
use crate::evidence::bundle::{Bundle, BundleError, BundleMeta, BundleSummary, Verdict};

/// The ceiling of one case (its waits have their own, smaller bounds). The one value every
/// runner uses: `rehearse run`, the nextest scenarios, and — checked by
/// `harness/tests/buckets_nextest_config.rs` — every nextest profile's slow-timeout, which must
/// let the case reach this bound and record its verdict before nextest kills the process.
pub const CASE_BOUND: Duration = Duration::from_secs(600);

/// What a case's process needs beyond [`CASE_BOUND`]: starting (or reaching) the cluster,
/// collecting a failed case's artifacts, tearing down and finalizing the bundle.
pub const CASE_OVERHEAD: Duration = Duration::from_secs(120);

/// Relative cost of each case (its median wall in tenths of a second, measured with
/// `rehearse bench` on the embedded cluster, release build, 2 cores; see the README's
/// Benchmarks). A run starts its cases longest first, so with `--parallel N` the longest case
/// does not start last and stretch the wall beyond it; the self-test orders its (mutant, case)
/// runs the same way. Only the order depends on it: re-measure when a case changes much. A
/// case missing here counts as [`DEFAULT_COST`].
pub const CASE_COSTS: &[(&str, u32)] = &[
    // Medians of `rehearse bench --runs 3`, release, 2026-12-02.
    ("candidate_stalls_configuration", 53),
    ("format_change_restore_required_rollback", 41),
    ("halt_at_later_batch", 34),
    ("format_change_compatible_rollback", 31),
    ("idle_asleep_stopped_server_backup", 30),
    ("stopped_server_backups", 30),
    ("live_backup_restore_round_trip", 27),
    ("candidate_refuses_login", 23),
    ("unpullable_candidate", 21),
    ("http_only_candidate", 21),
    ("restore_after_halted_canary", 30),
    ("candidate_module_digest_mismatch", 20),
    ("candidate_module_layer_other_bytes", 14),
    ("live_backup_agent_restart", 11),
    ("live_backup_game_not_running_yet", 10),
    ("live_backup_pod_replaced_during_preparation", 8),
    ("live_backup_same_pod_game_restart", 8),
    ("live_backup_older_agent_without_identity_route", 6),
    ("member_tracking_default_version", 6),
    ("stopped_server_backup_started_mid_copy", 5),
    // Estimated from debug runs (2026-12-03), not yet bench-measured: the deadline case waits
    // out its 4 s preparation deadline; the others are one server and one backup.
    ("preparation_deadline_expires", 45),
    ("raw_copy_without_quiesce", 15),
    ("live_backup_deleted_mid_copy", 9),
    ("live_backup_job_create_conflicted", 8),
    ("live_backup_operator_restarted_onto_stale_view", 8),
    ("live_backup_source_event_withheld", 8),
    ("live_backup_operator_restart", 9),
    ("legacy_preparation_fails_conservatively", 6),
];

/// Cost of a case [`CASE_COSTS`] does not list.
pub const DEFAULT_COST: u32 = 20;

/// The cost weight of case `name` ([`CASE_COSTS`]).
pub fn case_cost(name: &str) -> u32 {
    CASE_COSTS
        .iter()
        .find(|(case, _)| *case == name)
        .map_or(DEFAULT_COST, |(_, cost)| *cost)
}

/// The indices of `cases` in the order a run starts them: costliest first, ties in the
/// given order.
pub fn start_order(cases: &[&Case]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(case_cost(cases[i].name)));
    order
}

/// Which cluster a run uses.
#[derive(Debug, Clone)]
pub enum Cluster {
    /// A fresh embedded cluster (with the reference operator) per case.
    Embedded,
    /// A Kind cluster created or reused through the `kind` CLI.
    Kind(crate::backend::kind::KindOptions),
    /// A cluster the user already has: kubeconfig and the context they named.
    Existing {
        /// The kubeconfig file holding `context`.
        kubeconfig: PathBuf,
        /// The context to act on; the harness never falls back to the kubeconfig's current context.
        context: String,
    },
}

impl Cluster {
    /// The cluster a scenario test process uses, from the environment nextest gives it
    /// (`lookup` reads a variable; `std::env::var` in the scenarios):
    ///
    /// - `REHEARSAL_CLUSTER` unset or `embedded`: its own embedded cluster;
    /// - `kind`: the Kind cluster the setup script `kind-cluster` brought up, attached through
    ///   the `REHEARSAL_KUBECONFIG` it exported once and `REHEARSAL_CONTEXT` (which must be
    ///   `kind-<REHEARSAL_KIND_CLUSTER>`); the test process never runs `kind` itself;
    /// - `existing`: `REHEARSAL_KUBECONFIG` and `REHEARSAL_CONTEXT`.
    ///
    /// The error is one line naming the variable and the fix.
    pub fn from_nextest_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Cluster, String> {
        let required =
            |var: &str, why: &str| lookup(var).ok_or_else(|| format!("{var} is unset; {why}"));
        match lookup("REHEARSAL_CLUSTER").as_deref() {
            None | Some("embedded") => Ok(Cluster::Embedded),
            Some("kind") => {
                let name = lookup("REHEARSAL_KIND_CLUSTER").unwrap_or_else(|| "rehearsal".into());
                let exported = "run the cases with a bucket profile (e.g. `cargo nextest run -p rehearsal-scenarios --profile backup`), whose setup script `kind-cluster` exports the Kind cluster's kubeconfig once";
                let kubeconfig = required("REHEARSAL_KUBECONFIG", exported)?;
                let context = required("REHEARSAL_CONTEXT", exported)?;
                let state = lookup("REHEARSAL_KIND_STATE")
                    .map(PathBuf::from)
                    .or_else(|| {
                        std::path::Path::new(&kubeconfig)
                            .parent()
                            .map(PathBuf::from)
                    })
                    .unwrap_or_default();
                let mut options = crate::backend::kind::KindOptions::new(name, state);
                if context != options.context() {
                    return Err(format!(
                        "REHEARSAL_CONTEXT={context} is not the context of Kind cluster {} ({}); the harness never acts on another context",
                        options.cluster_name,
                        options.context()
                    ));
                }
                options.exported_kubeconfig = Some(kubeconfig.into());
                Ok(Cluster::Kind(options))
            }
            Some("existing") => Ok(Cluster::Existing {
                kubeconfig: required("REHEARSAL_KUBECONFIG", "export the kubeconfig path")?.into(),
                context: required(
                    "REHEARSAL_CONTEXT",
                    "the harness never acts on a context it was not told to use",
                )?,
            }),
            Some(other) => Err(format!(
                "REHEARSAL_CLUSTER={other:?} is not one of embedded, kind, existing"
            )),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The cluster the cases run on.
    pub cluster: Cluster,
    /// The cases to run, in the order their results are reported.
    pub cases: Vec<&'static Case>,
    /// `reports/` (the bundle goes into `<reports>/<run-id>/`).
    pub reports: PathBuf,
    /// This run's id ([`new_run_id`]): the bundle directory's name and the namespaces' run label.
    pub run_id: String,
    /// Keep a failed case's namespace and, on the embedded cluster, its cluster for inspection.
    pub keep_on_failure: bool,
    /// Cases run at once.
    pub parallel: usize,
    /// Deploy the reference operator with this mutant (self-test).
    pub mutant: Option<String>,
    /// Show progress bars (off when stderr is not a terminal, or in tests).
    pub progress: bool,
    /// Each case's ceiling (normally [`CASE_BOUND`]); a case over it fails naming its last step.
    pub case_bound: Duration,
    /// The operator the cluster is expected to run (`--operator-profile`); what it runs is
    /// read from it either way.
    pub operator_profile: Option<crate::deploy::profile::OperatorProfile>,
}

/// Why a run could not be carried out (a failed case is not an error: see [`RunOutcome`]).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The cluster could not be started, reached or prepared.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The bundle could not be written or finalized.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// A saved schedule could not be placed in this operator's run (`rehearse explore
    /// --regressions`).
    #[error("{0}")]
    Schedule(String),
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// `<reports>/<run-id>/`: the finalized bundle.
    pub bundle_dir: PathBuf,
    /// The finalized bundle's summary: each case's verdict, start and end, the journal anchor.
    pub summary: BundleSummary,
    /// Every case that ended, in the order of [`RunConfig::cases`]; an interrupted run lists
    /// only those that finished before the interrupt.
    pub results: Vec<CaseResult>,
    /// True when SIGINT or SIGTERM stopped the run before every case ended.
    pub interrupted: bool,
}

impl RunOutcome {
    /// True when every case passed (or was not applicable on this cluster) and the run was
    /// not interrupted.
    pub fn passed(&self) -> bool {
        !self.interrupted
            && self
                .results
                .iter()
                .all(|r| matches!(r.verdict, Verdict::Passed | Verdict::NotApplicable))
    }
}

/// A run id: UTC time plus a short random suffix, sortable and unique per run.
pub fn new_run_id() -> String {
    let now = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string();
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..6];
    format!("{now}-{suffix}")
}

/// The commit being qualified: the harness's own, recorded when it was built (`GITHUB_SHA` in
/// CI, else the repository's HEAD; see build.rs), so a bundle names the same commit wherever the
/// command runs — and `rehearse qualify` records the same one.
pub fn current_commit() -> String {
    crate::qualify::identity::HARNESS_COMMIT.to_string()
}

/// Starts the backend for `cluster` (with the reference operator deployed where the harness
/// deploys it).
pub async fn start_backend(
    cluster: &Cluster,
    mutant: Option<&str>,
) -> Result<Box<dyn Backend>, BackendError> {
    match cluster {
        Cluster::Embedded => {
            let b =
                crate::backend::embedded::Embedded::up(crate::backend::embedded::EmbeddedOptions {
                    deploy: EmbeddedDeploy::chosen(mutant.map(str::to_string))?.shared(),
                    ..Default::default()
                })
                .await?;
            Ok(Box::new(b))
        }
        // A test process of a nextest bucket run attaches through the kubeconfig the setup
        // script exported; `rehearse run` and `cluster up` create or reuse the cluster.
        Cluster::Kind(options) if options.exported_kubeconfig.is_some() => Ok(Box::new(
            crate::backend::kind::Kind::attach(options.clone()).await?,
        )),
        Cluster::Kind(options) => Ok(Box::new(
            crate::backend::kind::Kind::up(options.clone()).await?,
        )),
        Cluster::Existing {
            kubeconfig,
            context,
        } => {
            let b = crate::backend::existing::Existing::connect(kubeconfig, Some(context)).await?;
            ensure_reachable(&b.client(), kubeconfig, context).await?;
            Ok(Box::new(b))
        }
    }
}

/// Fails early, naming the server, when the cluster's API server does not answer.
async fn ensure_reachable(
    client: &kube::Client,
    kubeconfig: &std::path::Path,
    context: &str,
) -> Result<(), BackendError> {
    if let Err(e) = client.apiserver_version().await {
        let server = kube::config::Kubeconfig::read_from(kubeconfig)
            .ok()
            .and_then(|k| {
                let cluster = k
                    .contexts
                    .iter()
                    .find(|c| c.name == context)?
                    .context
                    .as_ref()?
                    .cluster
                    .clone();
                k.clusters
                    .iter()
                    .find(|c| c.name == cluster)?
                    .cluster
                    .as_ref()?
                    .server
                    .clone()
            })
            .unwrap_or_else(|| "(unknown server)".into());
        return Err(BackendError::Setup(format!(
            "the cluster of context {context} at {server} is unreachable ({e}); check that its API server is up and the kubeconfig points at it"
        )));
    }
    Ok(())
}

/// Runs `config`; an interrupt (Ctrl-C / SIGTERM) stops the cases, records them as
/// interrupted and still finalizes the bundle.
#[expect(
    clippy::too_many_lines,
    reason = "one run in order (shared cluster, operator read, case slots under the interrupt, finalize); the per-case job closes over the bundle, progress bar and cluster it shares with them"
)]
pub async fn run(config: RunConfig) -> Result<RunOutcome, RunError> {
    // First: from here on SIGINT and SIGTERM are recorded, never the process's end (a signal
    // that arrives while the cluster starts stops the run at its first chance).
    let mut interrupts = Interrupts::install().map_err(|e| {
        BackendError::Setup(format!("cannot install the SIGINT/SIGTERM handlers: {e}"))
    })?;
    let dir = Bundle::dir_for(&config.reports, &config.run_id);
    // A `harness-…` mutant weakens the harness's own gates; any other name is deployed with
    // the reference operator.
    let (operator_mutant, harness_mutant) = match config.mutant.as_deref() {
        Some(name) if crate::mutants::HarnessMutant::is_harness_name(name) => (
            None,
            Some(
                name.parse::<crate::mutants::HarnessMutant>()
                    .map_err(|e| BackendError::Setup(e.to_string()))?,
            ),
        ),
        other => (other.map(str::to_string), None),
    };
    let arch = crate::backend::Arch::host().as_str().to_string();
    let shared: Option<Arc<Box<dyn Backend>>> = match &config.cluster {
        Cluster::Embedded => None,
        other => Some(Arc::new(
            start_backend(other, operator_mutant.as_deref()).await?,
        )),
    };
    // The operator and its version as the cluster runs them, never a default; a cluster that
    // cannot be asked is named as such (its cases then fail on their own API calls).
    let detected = match &shared {
        Some(backend) => crate::deploy::profile::detect(backend.as_ref().as_ref()).await,
        None => crate::deploy::profile::detect_embedded().await,
    };
    let operator = match detected {
        Ok(found) => {
            crate::deploy::profile::check_expected(config.operator_profile, &found)
                .map_err(BackendError::Setup)?;
            crate::evidence::bundle::Operator {
                name: found.name,
                version: found.version,
            }
        }
        Err(e) => crate::deploy::profile::unread(&e.to_string()),
    };
    let operator_version = match &config.mutant {
        Some(m) => format!("{} (mutant {m})", operator.version),
        None => operator.version.clone(),
    };
    let bundle = Arc::new(Bundle::create(
        &dir,
        BundleMeta::new(
            &config.run_id,
            &current_commit(),
            &operator.name,
            &operator_version,
            &arch,
        ),
    )?);
    let interrupted = Arc::new(AtomicBool::new(false));
    let multi = if config.progress {
        MultiProgress::new()
    } else {
        MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden())
    };
    let style = ProgressStyle::with_template("{spinner} {prefix:.bold} {wide_msg} [{elapsed}]")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());

    let options = RunOptions {
        run_id: config.run_id.clone(),
        keep_on_failure: config.keep_on_failure,
        case_bound: config.case_bound,
        harness_mutant,
        expected_operator: config.operator_profile,
    };
    // Longest cases first (results go back into the cases' order below).
    let order = start_order(&config.cases);
    let jobs = order
        .into_iter()
        .map(|index| (index, config.cases[index]))
        .map(|(index, case)| {
            let bundle = bundle.clone();
            let shared = shared.clone();
            let options = options.clone();
            let cluster = config.cluster.clone();
            let mutant = operator_mutant.clone();
            let bar = multi.add(ProgressBar::new_spinner());
            bar.set_style(style.clone());
            bar.set_prefix(case.name);
            bar.set_message("waiting");
            async move {
                bar.enable_steady_tick(Duration::from_millis(120));
                bar.set_message("running");
                let result = match shared {
                    Some(backend) => {
                        cases::run_case(backend.as_ref().as_ref(), &bundle, case, &options).await
                    }
                    None => match start_backend(&cluster, mutant.as_deref()).await {
                        Ok(backend) => {
                            let r =
                                cases::run_case(backend.as_ref(), &bundle, case, &options).await;
                            let keep = options.keep_on_failure
                                && matches!(&r, Ok(res) if res.verdict == Verdict::Failed);
                            let _ = backend.teardown(keep).await;
                            r
                        }
                        Err(e) => {
                            let reason = format!("could not start the embedded cluster: {e}");
                            match bundle.case(case.name, case.bucket) {
                                Ok(rec) => rec
                                    .finish_with_reason(Verdict::Failed, Some(&reason))
                                    .map(|_| CaseResult {
                                        case: case.name,
                                        verdict: Verdict::Failed,
                                        reason: Some(reason),
                                        failed_checks: Vec::new(),
                                        duration: Duration::ZERO,
                                    }),
                                Err(e) => Err(e),
                            }
                        }
                    },
                };
                match &result {
                    Ok(r) => bar.finish_with_message(match &r.reason {
                        None => format!("{}", r.verdict),
                        Some(why) => format!("{}: {why}", r.verdict),
                    }),
                    Err(e) => bar.finish_with_message(format!("evidence error: {e}")),
                }
                result.map(|r| (index, r))
            }
        });
    // Unordered: a slot frees as soon as its case ends (an ordered buffer would hold a slot
    // for every finished case queued behind a slower earlier one). Results are put back in
    // the cases' order below.
    let mut stream = futures::stream::iter(jobs).buffer_unordered(config.parallel.max(1));
    let mut results = Vec::new();
    let mut first_error = None;
    loop {
        tokio::select! {
            next = stream.next() => match next {
                Some(Ok(r)) => {
                    // Without progress bars (stderr not a terminal: piped, CI) a line per case
                    // as it ends, so a piped run shows progress before the summary.
                    if !config.progress {
                        println!(
                            "[{}/{}] {:<12} {} {:.1}s",
                            results.len() + 1,
                            config.cases.len(),
                            r.1.verdict.as_str(),
                            r.1.case,
                            r.1.duration.as_secs_f64()
                        );
                    }
                    results.push(r);
                }
                Some(Err(e)) => { first_error.get_or_insert(e); }
                None => break,
            },
            _ = interrupts.recv() => {
                interrupted.store(true, Ordering::SeqCst);
                break;
            }
        }
    }
    // Dropping the stream drops running cases: their recorders record `interrupted` and their
    // backends end every process they started.
    drop(stream);
    results.sort_by_key(|(index, _)| *index);
    let results: Vec<CaseResult> = results.into_iter().map(|(_, r)| r).collect();
    // A shared cluster outlives the run: a Kind cluster is reused by the next run (and removed
    // with `rehearse cluster down --kind`); an existing one was never the harness's to delete.
    if let Some(backend) = shared
        && let Ok(backend) = Arc::try_unwrap(backend)
    {
        let _ = backend.teardown(true).await;
    }
    let interrupted = interrupted.load(Ordering::SeqCst);
    let bundle = Arc::try_unwrap(bundle).map_err(|_| BundleError::Io {
        path: dir.clone(),
        action: "finalize",
        source: std::io::Error::other("a case still holds the bundle"),
    })?;
    let summary = bundle.finalize(interrupted)?;
    if let Some(e) = first_error {
        return Err(e.into());
    }
    Ok(RunOutcome {
        bundle_dir: dir,
        summary,
        results,
        interrupted,
    })
}

/// SIGINT and SIGTERM handlers, installed when created: from then on neither signal ends the
/// process (also when it started with them ignored, as a job started from a script does —
/// installing a handler replaces the inherited disposition); [`Interrupts::recv`] reports them.
pub struct Interrupts {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Interrupts {
    /// Installs both handlers (needs a Tokio runtime).
    pub fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// The next signal received: `"SIGINT"` or `"SIGTERM"`.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "SIGINT",
            _ = self.term.recv() => "SIGTERM",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_costed_case_exists_and_runs_start_costliest_first() {
        for (name, _) in CASE_COSTS {
            assert!(
                cases::CASES.iter().any(|c| c.name == *name),
                "CASE_COSTS names {name}, which is not a case"
            );
        }
        let all: Vec<&Case> = cases::CASES.iter().collect();
        let order = start_order(&all);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..all.len()).collect::<Vec<_>>(), "a permutation");
        let costs: Vec<u32> = order.iter().map(|&i| case_cost(all[i].name)).collect();
        assert!(
            costs.windows(2).all(|w| w[0] >= w[1]),
            "costliest first: {costs:?}"
        );
        // Equal costs keep the cases' own order.
        assert!(
            order
                .windows(2)
                .filter(|w| case_cost(all[w[0]].name) == case_cost(all[w[1]].name))
                .all(|w| w[0] < w[1]),
            "{order:?}"
        );
        // A case the table does not list counts as the default.
        assert_eq!(case_cost("a_case_nobody_measured"), DEFAULT_COST);
    }
}
