//! The backup bucket (CONTRACT B1–B6). Each test is one case of `rehearsal::cases`.

use rehearsal_scenarios::rehearse;

#[test]
fn live_backup_same_pod_game_restart() {
    rehearse("live_backup_same_pod_game_restart");
}

#[test]
fn live_backup_agent_restart() {
    rehearse("live_backup_agent_restart");
}

#[test]
fn live_backup_agent_down() {
    rehearse("live_backup_agent_down");
}

#[test]
fn live_backup_pod_replaced_during_preparation() {
    rehearse("live_backup_pod_replaced_during_preparation");
}

#[test]
fn live_backup_job_create_conflicted() {
    rehearse("live_backup_job_create_conflicted");
}

#[test]
fn live_backup_operator_restarted_onto_stale_view() {
    rehearse("live_backup_operator_restarted_onto_stale_view");
}

#[test]
fn live_backup_source_event_withheld() {
    rehearse("live_backup_source_event_withheld");
}

#[test]
fn live_backup_game_not_running_yet() {
    rehearse("live_backup_game_not_running_yet");
}

#[test]
fn live_backup_older_agent_without_identity_route() {
    rehearse("live_backup_older_agent_without_identity_route");
}

#[test]
fn stopped_server_backups() {
    rehearse("stopped_server_backups");
}

#[test]
fn idle_asleep_stopped_server_backup() {
    rehearse("idle_asleep_stopped_server_backup");
}

#[test]
fn stopped_server_backup_started_mid_copy() {
    rehearse("stopped_server_backup_started_mid_copy");
}

#[test]
fn live_backup_restore_round_trip() {
    rehearse("live_backup_restore_round_trip");
}

#[test]
fn restore_fails_on_broken_repository() {
    rehearse("restore_fails_on_broken_repository");
}

#[test]
fn live_backup_operator_restart() {
    rehearse("live_backup_operator_restart");
}

#[test]
fn live_backup_deleted_mid_copy() {
    rehearse("live_backup_deleted_mid_copy");
}

#[test]
fn raw_copy_without_quiesce() {
    rehearse("raw_copy_without_quiesce");
}

#[test]
fn preparation_deadline_expires() {
    rehearse("preparation_deadline_expires");
}

#[test]
fn legacy_preparation_fails_conservatively() {
    rehearse("legacy_preparation_fails_conservatively");
}
