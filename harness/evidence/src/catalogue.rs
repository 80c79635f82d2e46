//! The exploration's catalogue, one table: every operation `rehearse explore` runs (what it sets
//! up, the faults that apply to it, how the contract says it ends, which invariants judge it)
//! and every fault (what it changes).
//!
//! Everything else reads these rows: schedule ids and the matrix (the names), the runner (which
//! faults to place, which driver sets an operation up), the oracle (the stated endings and the
//! faults' classes), the contract check (which invariants judge which operation). Adding an
//! operation is one row in [`operations!`]'s invocation below; a driver is written only for a
//! new kind of [`Setup`]. Adding a fault is one row in [`faults!`]'s invocation, plus how the
//! runner injects it.
//!
//! The names are the serde, clap and schedule-id spelling alike (kebab-case of the variant).

use serde::{Deserialize, Serialize};

use crate::qualification::gates;

/// What a fault changes, which decides what the oracle may demand after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultClass {
    /// Changes neither the game, the repository nor the object under way (the operator's or the
    /// agent's process restarted: their progress is in the API server, the game is the same
    /// process): the run must end exactly as the unperturbed reference run did.
    Transparent,
    /// Leaves the game as it was (the agent held down): a capture it interrupts may fail, but is
    /// never `Invalidated`.
    KeepsSource,
    /// Changes the game, the pod, the object or the repository: more than one ending is allowed,
    /// and the invariants judge which.
    Changes,
}

/// One fault's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultRow {
    /// The fault.
    pub fault: Fault,
    /// Its name in schedule ids and the matrix.
    pub name: &'static str,
    /// What it changes.
    pub class: FaultClass,
}

macro_rules! faults {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $class:ident; )*) => {
        /// A fault a schedule places before one of the operator's writes.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
        #[serde(rename_all = "kebab-case")]
        pub enum Fault {
            $( $(#[$doc])* $variant, )*
        }

        /// Every fault's row, in matrix order.
        pub const FAULTS: &[FaultRow] = &[
            $( FaultRow { fault: Fault::$variant, name: $name, class: FaultClass::$class }, )*
        ];

        impl Fault {
            /// Every fault, in matrix order.
            pub const ALL: &[Fault] = &[ $( Fault::$variant, )* ];
        }
    };
}

faults! {
    /// The game container restarted in place (same pod, new container ID).
    GameRestart = "game-restart", Changes;
    /// The agent container restarted in place; the game is unchanged.
    AgentRestart = "agent-restart", Transparent;
    /// The agent container held down (stopped, in `CrashLoopBackOff`) across the point: from
    /// before the held write until that write was applied, then let up again.
    AgentDown = "agent-down", KeepsSource;
    /// The server's pod deleted and recreated by its StatefulSet (new pod UID).
    PodReplaced = "pod-replaced", Changes;
    /// The Backup deleted by a user.
    BackupDeleted = "backup-deleted", Changes;
    /// The operator killed without grace and started again.
    OperatorRestart = "operator-restart", Transparent;
    /// A stopped server started (`spec.suspend: false`), or an idle-asleep one woken, while its
    /// Backup is under way.
    ServerStarted = "server-started", Changes;
    /// The Restore deleted by a user.
    RestoreDeleted = "restore-deleted", Changes;
    /// The repository made unreachable: its Secret names a repository that does not exist.
    RepositoryUnreachable = "repository-unreachable", Changes;
    /// The repository refuses every call: its Secret's password is changed to a wrong one.
    RepositoryWrongPassword = "repository-wrong-password", Changes;
    /// The operator's write is refused with `409 Conflict`, as if another writer had just
    /// updated the object (its resourceVersion moves, its content does not): the operator must
    /// re-read and redo, ending as it would have.
    WriteConflict = "write-conflict", Transparent;
    /// The next watch event about the operation's object (its Backup or Restore) that the
    /// operator would receive is never delivered to it (its watch goes on; everyone else sees
    /// it): the operator must still converge — by a resync, a requeue or the next event —
    /// ending as it would have.
    DroppedEvent = "dropped-event", Transparent;
    /// The copy's last write to the repository (restic saving its snapshot, through the REST
    /// server) held until the game restarted in place (a running server) or the server was
    /// started (a stopped one), then let go: the copy's end spans a change of its source. Placed
    /// at the points up to the copy Job's creation, the ones that come before the copy exists.
    CopyHeldAtEnd = "copy-held-at-end", Changes;
    /// The operator killed without grace and started again onto a stale view: until its first
    /// write, its lists are answered as the cluster was just before its first write of the
    /// operation (the object created, none of its work on it yet) and its watches send
    /// nothing, as an API server whose watch cache lags behind storage; then its watches replay
    /// every change since. Reads of one object and everyone else see the present. The operator
    /// must catch up, ending as it would have.
    StaleView = "stale-view", Transparent;
    /// The module bundle registry, as the operator reaches it, serves the pinned manifest
    /// honestly but other bytes for its layer (a proxy in front of the registry; the harness
    /// reads the registry itself): the operator must hash the layer and refuse the bundle, so
    /// the qualification halts at its module bundle gate ([`Fault::decides`]). Placed at the
    /// points up to the operator's first read of the bundle (`get bundle <module>`, held by the
    /// registry's gate): after it the layer was already fetched.
    RegistryOtherBytes = "registry-other-bytes", Changes;
}

impl Fault {
    /// Its row.
    pub fn row(self) -> &'static FaultRow {
        FAULTS
            .iter()
            .find(|r| r.fault == self)
            .expect("faults! gives every fault a row")
    }

    /// Its name in schedule ids and the matrix.
    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    /// What it changes.
    pub fn class(self) -> FaultClass {
        self.row().class
    }

    /// The fault named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        FAULTS.iter().find(|r| r.name == name).map(|r| r.fault)
    }

    /// The one ending the contract allows once this fault landed, whatever the operation it
    /// applies to, when it decides one: other bytes for a pinned bundle's layer halt at the
    /// module bundle gate, the operator refusing the bundle.
    pub fn decides(self) -> Option<Ends> {
        match self {
            RegistryOtherBytes => Some(Ends::HaltedOnClone(gates::MODULE)),
            _ => None,
        }
    }
}

impl Fault {
    /// Whether it can be placed before the `index`-th (from 0) of an operation's writes
    /// `labels` (its reference run's). `copy-held-at-end` waits for the copy's snapshot save
    /// after its point, so it is placed only at the points up to the copy Job's creation (the
    /// first `create jobs`): after it the snapshot may already be saved. `registry-other-bytes`
    /// up to the operator's first read of the bundle ([`BUNDLE_PULLED`]): after it the layer
    /// was fetched. `write-conflict` at every write (not at a registry read). Every other
    /// fault, at every point.
    pub fn placeable_at(self, labels: &[impl AsRef<str>], index: usize) -> bool {
        match self {
            CopyHeldAtEnd => labels
                .iter()
                .position(|l| l.as_ref() == COPY_JOB_CREATED)
                .is_some_and(|job| index <= job),
            RegistryOtherBytes => labels
                .iter()
                .position(|l| l.as_ref().starts_with(BUNDLE_PULLED))
                .is_some_and(|pulled| index <= pulled),
            // A registry read is no write: nothing there can be refused with a conflict.
            WriteConflict => labels
                .get(index)
                .is_some_and(|l| !l.as_ref().starts_with(BUNDLE_PULLED)),
            _ => index < labels.len(),
        }
    }
}

/// The label of the operator's write that creates an operation's copy (or restore) Job.
pub const COPY_JOB_CREATED: &str = "create jobs";

/// How the label of the operator reading a bundle's manifest from the module registry begins
/// (`get bundle fixture-game`): a point of the operations whose points include Modules, the
/// registry's gate holding the read as the API server holds a write.
pub const BUNDLE_PULLED: &str = "get bundle";

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The class of an optional fault: `None` (no fault landed) is as transparent as can be.
pub fn class_of(fault: Option<Fault>) -> FaultClass {
    fault.map_or(FaultClass::Transparent, Fault::class)
}

/// What the backed-up server is doing when its Backup is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Running: a quiesced live capture.
    Running,
    /// Running, copied raw (`spec.quiesce: false`): no agent call, no RCON command.
    RunningRaw,
    /// Suspended (`spec.suspend: true`, no pod).
    Suspended,
    /// Idle-asleep (idle enabled, `status.idle.asleep: true`, no pod).
    IdleAsleep,
    /// Not running yet: the Backup is created together with its server, before the game runs,
    /// so preparation must wait for a running game within its deadline.
    NotYetRunning,
    /// Running with an older agent that has no identity route: the Backup must fail at the
    /// preflight (`IdentityPreflightFailed`) and quiesce nothing.
    OldAgent,
    /// Running, with a Backup an older operator left mid-preparation (it had sent `save-off`;
    /// the record holds no incarnation fields) when this operator starts: it must end Failed,
    /// `LegacyPreparation`, and still pay the `save-on` owed.
    LegacyPreparation,
}

/// Which qualification a schedule runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// A good candidate (the compatible version): promoted in every batch.
    Good,
    /// An unpullable candidate: halted at the canary's image gate; then a Restore of the
    /// source from the qualification's backup must run to its end (a halt locks no server).
    Unpullable,
    /// A good candidate with its module bundle pinned to the digest its tag serves.
    Module,
    /// A good candidate whose bundle's tag was moved to other content after it was pinned.
    ModuleMoved,
}

/// What the driver sets up and runs for an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// A Backup of a server doing this.
    Backup(Source),
    /// A Restore of a stopped server's world and extra claims from its Backup.
    Restore,
    /// A qualification of this candidate on a fleet of two, in batches of one.
    Qualify(Variant),
}

/// How the contract says an operation ends, unperturbed or after a fault that does not narrow
/// it away (see [`Operation::allowed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    /// `Succeeded`, with this consistency (`None`: the object has none, a Restore).
    Succeeded(Option<&'static str>),
    /// `Failed` for this reason whatever the game does meanwhile: after no fault, a transparent
    /// one or one that keeps the source.
    Refused(&'static str),
    /// Promoted in every batch.
    Promoted,
    /// Halted at this gate on the canary clone, nothing promoted, with the operator's verdict the
    /// gate read.
    HaltedOnClone(&'static str),
}

/// Which invariants judge an operation's schedules (the names are listed with the invariants:
/// `invariants::judged_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judges {
    /// consistency, cleanup, drain, liveness, data, outcome.
    Backup,
    /// data, drain, liveness, outcome.
    Restore,
    /// qualification, outcome.
    Qualify,
    /// qualification, liveness (of the Restore after the halt), outcome.
    QualifyThenRestore,
}

/// One operation's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationRow {
    /// The operation.
    pub operation: Operation,
    /// Its name in schedule ids and the matrix.
    pub name: &'static str,
    /// What its driver sets up.
    pub setup: Setup,
    /// The faults that apply to it, in matrix order.
    pub faults: &'static [Fault],
    /// How the contract says it ends.
    pub ends: Ends,
    /// The invariants that judge it.
    pub judges: Judges,
}

macro_rules! operations {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal {
        setup: $setup:expr, faults: $faults:expr, ends: $ends:expr, judges: $judges:ident $(,)?
    } )*) => {
        /// The operations explore covers.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
        #[serde(rename_all = "kebab-case")]
        pub enum Operation {
            $( $(#[$doc])* $variant, )*
        }

        /// Every operation's row, in matrix order.
        pub const OPERATIONS: &[OperationRow] = &[
            $( OperationRow {
                operation: Operation::$variant,
                name: $name,
                setup: $setup,
                faults: $faults,
                ends: $ends,
                judges: Judges::$judges,
            }, )*
        ];

        impl Operation {
            /// Every operation, in matrix order.
            pub const ALL: &[Operation] = &[ $( Operation::$variant, )* ];
        }
    };
}

use Fault::*;

/// The faults of a backup of a running server.
const RUNNING_BACKUP: &[Fault] = &[
    GameRestart,
    AgentRestart,
    AgentDown,
    PodReplaced,
    BackupDeleted,
    OperatorRestart,
    RepositoryUnreachable,
    RepositoryWrongPassword,
    WriteConflict,
    DroppedEvent,
    CopyHeldAtEnd,
    StaleView,
];

/// The faults of a backup of a server without a pod: it is started, not restarted.
const STOPPED_BACKUP: &[Fault] = &[
    ServerStarted,
    BackupDeleted,
    OperatorRestart,
    RepositoryUnreachable,
    RepositoryWrongPassword,
    WriteConflict,
    DroppedEvent,
    CopyHeldAtEnd,
    StaleView,
];

operations! {
    /// A quiesced backup of a running server.
    Backup = "backup" {
        setup: Setup::Backup(Source::Running),
        faults: RUNNING_BACKUP,
        ends: Ends::Succeeded(Some("Quiesced")),
        judges: Backup,
    }
    /// A raw backup of a running server (`spec.quiesce: false`): consistency `Unquiesced`.
    RawBackup = "raw-backup" {
        setup: Setup::Backup(Source::RunningRaw),
        faults: RUNNING_BACKUP,
        ends: Ends::Succeeded(Some("Unquiesced")),
        judges: Backup,
    }
    /// A backup of a suspended server (no pod): consistency `Stopped`.
    StoppedBackup = "stopped-backup" {
        setup: Setup::Backup(Source::Suspended),
        faults: STOPPED_BACKUP,
        ends: Ends::Succeeded(Some("Stopped")),
        judges: Backup,
    }
    /// A backup of an idle-asleep server (no pod, idle intent kept): consistency `Stopped`.
    IdleBackup = "idle-backup" {
        setup: Setup::Backup(Source::IdleAsleep),
        faults: STOPPED_BACKUP,
        ends: Ends::Succeeded(Some("Stopped")),
        judges: Backup,
    }
    /// A quiesced backup created together with its server, before the game runs: preparation
    /// waits for the game within its persisted deadline (and so still ends `Quiesced`).
    EarlyBackup = "early-backup" {
        setup: Setup::Backup(Source::NotYetRunning),
        // Faults that need a running game have nothing to act on at the points before it runs:
        // the operator's restart (its deadline must hold), a deletion and the repository are
        // what can happen while preparation waits.
        faults: &[
            BackupDeleted,
            OperatorRestart,
            RepositoryWrongPassword,
            WriteConflict,
            DroppedEvent,
            CopyHeldAtEnd,
            StaleView,
        ],
        ends: Ends::Succeeded(Some("Quiesced")),
        judges: Backup,
    }
    /// A quiesced backup of a server whose agent is older, without the identity route: it must
    /// fail at the preflight (`IdentityPreflightFailed`) with nothing quiesced.
    OldAgentBackup = "old-agent-backup" {
        setup: Setup::Backup(Source::OldAgent),
        // The repository is never reached: each fails before a copy exists.
        faults: &[
            GameRestart,
            AgentRestart,
            AgentDown,
            PodReplaced,
            BackupDeleted,
            OperatorRestart,
            WriteConflict,
            DroppedEvent,
            StaleView,
        ],
        ends: Ends::Refused("IdentityPreflightFailed"),
        judges: Backup,
    }
    /// A Backup an older operator left mid-preparation (the game quiesced, no incarnation
    /// fields) met by this operator when it starts: Failed, `LegacyPreparation`, cleanup paid.
    LegacyBackup = "legacy-backup" {
        setup: Setup::Backup(Source::LegacyPreparation),
        // Not deleted: the older operator's record carries no finalizer of this one, so a
        // deletion before this operator's first write removes the only record of what is owed,
        // which no operator could then pay.
        faults: &[
            GameRestart,
            AgentRestart,
            AgentDown,
            PodReplaced,
            OperatorRestart,
            WriteConflict,
            DroppedEvent,
            StaleView,
        ],
        ends: Ends::Refused("LegacyPreparation"),
        judges: Backup,
    }
    /// A restore of a stopped server's world and extra claims from its Backup.
    Restore = "restore" {
        setup: Setup::Restore,
        faults: &[
            RestoreDeleted,
            OperatorRestart,
            RepositoryUnreachable,
            RepositoryWrongPassword,
            WriteConflict,
            DroppedEvent,
            StaleView,
        ],
        ends: Ends::Succeeded(None),
        judges: Restore,
    }
    /// A qualification of a good candidate on a fleet of two, promoted in batches of one.
    Qualify = "qualify" {
        setup: Setup::Qualify(Variant::Good),
        // Faults on the source member and the operator, which change no member's pod or claims
        // by themselves (what the qualification invariant compares).
        faults: &[GameRestart, AgentRestart, OperatorRestart, WriteConflict, StaleView],
        ends: Ends::Promoted,
        judges: Qualify,
    }
    /// A qualification of an unpullable candidate (halted at the canary's image gate), then a
    /// Restore of the source from the qualification's backup.
    QualifyUnpullable = "qualify-unpullable" {
        setup: Setup::Qualify(Variant::Unpullable),
        // The variants differ from `qualify` before its points (the candidate, the module
        // gate), so the operator's restart is what they add at each point. (After an
        // unpullable candidate's halt the source is stopped for its restore: no agent to
        // restart.)
        faults: &[OperatorRestart, WriteConflict, StaleView],
        ends: Ends::HaltedOnClone(gates::IMAGE),
        judges: QualifyThenRestore,
    }
    /// A qualification of a good candidate whose module bundle is served as pinned.
    QualifyModule = "qualify-module" {
        setup: Setup::Qualify(Variant::Module),
        // And the registry serving other bytes for the pinned layer (the ending it decides:
        // halted at the module bundle gate).
        faults: &[OperatorRestart, WriteConflict, StaleView, RegistryOtherBytes],
        ends: Ends::Promoted,
        judges: Qualify,
    }
    /// A qualification of a good candidate whose bundle's tag was moved after it was pinned.
    QualifyModuleMoved = "qualify-module-moved" {
        setup: Setup::Qualify(Variant::ModuleMoved),
        faults: &[OperatorRestart, WriteConflict, StaleView],
        ends: Ends::HaltedOnClone(gates::MODULE),
        judges: Qualify,
    }
}

/// What the contract allows after a perturbation, when it narrows the endings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// Exactly this ending.
    Only(Ends),
    /// Any ending but consistency `Invalidated` (the source did not change).
    NotInvalidated,
}

impl Operation {
    /// Its row.
    pub fn row(self) -> &'static OperationRow {
        OPERATIONS
            .iter()
            .find(|r| r.operation == self)
            .expect("operations! gives every operation a row")
    }

    /// Its name in schedule ids and the matrix.
    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    /// The operation named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        OPERATIONS
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.operation)
    }

    /// The faults that apply to it, in matrix order.
    pub fn faults(self) -> &'static [Fault] {
        self.row().faults
    }

    /// What its driver sets up.
    pub fn setup(self) -> Setup {
        self.row().setup
    }

    /// What happens to the source while its copy's end is held (`copy-held-at-end`): the game
    /// restarts in place when it runs (or will: an early backup), the server is started when it
    /// is stopped; `None` for an operation without a copy of a server.
    pub fn while_copy_held(self) -> Option<Fault> {
        match self.setup() {
            Setup::Backup(Source::Running | Source::RunningRaw | Source::NotYetRunning) => {
                Some(GameRestart)
            }
            Setup::Backup(Source::Suspended | Source::IdleAsleep) => Some(ServerStarted),
            _ => None,
        }
    }

    /// What `fault` does to this operation's source: `copy-held-at-end` amounts to what happens
    /// while the copy is held ([`Self::while_copy_held`]), every other fault to itself.
    pub fn effect(self, fault: Fault) -> Fault {
        match fault {
            CopyHeldAtEnd => self.while_copy_held().unwrap_or(fault),
            _ => fault,
        }
    }

    /// The ending(s) the contract allows once `fault` landed (`None`: unperturbed), when it
    /// narrows them:
    /// - unperturbed or after a transparent fault, the stated ending;
    /// - a refusal also after a fault that keeps the source (the refusal does not depend on the
    ///   game);
    /// - otherwise, after a fault that keeps the source, anything but `Invalidated`;
    /// - after a fault that decides the ending ([`Fault::decides`]), that ending;
    /// - after a fault that changes something, nothing stated (the invariants judge it).
    pub fn allowed(self, fault: Option<Fault>) -> Option<Allowed> {
        if let Some(ends) = fault.and_then(Fault::decides) {
            return Some(Allowed::Only(ends));
        }
        let ends = self.row().ends;
        match (class_of(fault), ends) {
            (FaultClass::Transparent, _) | (FaultClass::KeepsSource, Ends::Refused(_)) => {
                Some(Allowed::Only(ends))
            }
            (FaultClass::KeepsSource, _) => Some(Allowed::NotInvalidated),
            (FaultClass::Changes, _) => None,
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_spelling_and_unique() {
        for row in OPERATIONS {
            assert_eq!(
                serde_json::to_value(row.operation).unwrap(),
                serde_json::json!(row.name)
            );
            assert_eq!(Operation::parse(row.name), Some(row.operation));
        }
        for row in FAULTS {
            assert_eq!(
                serde_json::to_value(row.fault).unwrap(),
                serde_json::json!(row.name)
            );
            assert_eq!(Fault::parse(row.name), Some(row.fault));
        }
        assert_eq!(Operation::parse("nope"), None);
        assert_eq!(Fault::parse("nope"), None);
    }

    #[test]
    fn a_refusal_holds_after_a_fault_that_keeps_the_source() {
        let refused = Operation::OldAgentBackup;
        assert_eq!(
            refused.allowed(Some(AgentDown)),
            Some(Allowed::Only(Ends::Refused("IdentityPreflightFailed")))
        );
        assert_eq!(
            Operation::Backup.allowed(Some(AgentDown)),
            Some(Allowed::NotInvalidated)
        );
        assert_eq!(
            Operation::Backup.allowed(Some(OperatorRestart)),
            Some(Allowed::Only(Ends::Succeeded(Some("Quiesced"))))
        );
        assert_eq!(
            Operation::Backup.allowed(None),
            Some(Allowed::Only(Ends::Succeeded(Some("Quiesced"))))
        );
        assert_eq!(refused.allowed(Some(GameRestart)), None);
        assert_eq!(
            Operation::QualifyModule.allowed(Some(RegistryOtherBytes)),
            Some(Allowed::Only(Ends::HaltedOnClone(gates::MODULE)))
        );
        assert_eq!(
            Operation::QualifyModule.allowed(None),
            Some(Allowed::Only(Ends::Promoted))
        );
        assert_eq!(Operation::Restore.allowed(Some(RestoreDeleted)), None);
    }

    #[test]
    fn other_layer_bytes_are_placed_only_before_the_operator_judges_the_module() {
        let labels = [
            "patch backups qualify-mc-a",
            "get bundle fixture-game",
            "patch modules/status fixture-game",
            "patch gameservers mc-a-canary",
        ];
        let placeable: Vec<bool> = (0..=labels.len())
            .map(|i| RegistryOtherBytes.placeable_at(&labels, i))
            .collect();
        assert_eq!(placeable, [true, true, false, false, false]);
        assert!(
            !RegistryOtherBytes.placeable_at(&["create jobs"], 0),
            "no bundle pulled: nowhere to place it"
        );
        let conflicts: Vec<bool> = (0..=labels.len())
            .map(|i| WriteConflict.placeable_at(&labels, i))
            .collect();
        assert_eq!(
            conflicts,
            [true, false, true, true, false],
            "a read is no write"
        );
        for row in OPERATIONS {
            assert_eq!(
                row.faults.contains(&RegistryOtherBytes),
                row.setup == Setup::Qualify(Variant::Module),
                "{}: other layer bytes apply to the qualification of a pinned, unmoved bundle",
                row.name
            );
        }
        assert_eq!(GameRestart.decides(), None);
    }

    #[test]
    fn a_copy_held_at_its_end_is_placed_only_before_the_copy_exists() {
        let labels = [
            "patch backups",
            "patch backups/status",
            "create jobs",
            "create jobs",
        ];
        let placeable: Vec<bool> = (0..=labels.len())
            .map(|i| CopyHeldAtEnd.placeable_at(&labels, i))
            .collect();
        assert_eq!(placeable, [true, true, true, false, false]);
        assert!(
            !CopyHeldAtEnd.placeable_at(&["patch backups"], 0),
            "no copy Job"
        );
        assert!(GameRestart.placeable_at(&labels, 3));
        assert_eq!(
            Operation::StoppedBackup.effect(CopyHeldAtEnd),
            ServerStarted
        );
        assert_eq!(Operation::Backup.effect(CopyHeldAtEnd), GameRestart);
        assert_eq!(Operation::Backup.effect(AgentDown), AgentDown);
        assert!(!GameRestart.placeable_at(&labels, 4));
        for row in OPERATIONS {
            assert_eq!(
                row.faults.contains(&CopyHeldAtEnd),
                row.operation.while_copy_held().is_some(),
                "{}: copy-held-at-end applies exactly where something happens while it is held",
                row.name
            );
        }
    }
}
