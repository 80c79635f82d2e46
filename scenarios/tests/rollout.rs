//! The rollout bucket (CONTRACT C): candidates through the qualification procedure.

use rehearsal_scenarios::rehearse;

#[test]
fn unpullable_candidate() {
    rehearse("unpullable_candidate");
}

#[test]
fn restore_after_halted_canary() {
    rehearse("restore_after_halted_canary");
}

#[test]
fn candidate_module_digest_mismatch() {
    rehearse("candidate_module_digest_mismatch");
}

#[test]
fn candidate_module_layer_other_bytes() {
    rehearse("candidate_module_layer_other_bytes");
}

#[test]
fn http_only_candidate() {
    rehearse("http_only_candidate");
}

#[test]
fn format_change_compatible_rollback() {
    rehearse("format_change_compatible_rollback");
}

#[test]
fn format_change_restore_required_rollback() {
    rehearse("format_change_restore_required_rollback");
}

#[test]
fn member_tracking_default_version() {
    rehearse("member_tracking_default_version");
}

#[test]
fn extra_world_declared_on_template() {
    rehearse("extra_world_declared_on_template");
}

#[test]
fn halt_at_later_batch() {
    rehearse("halt_at_later_batch");
}

#[test]
fn failed_format_batch_restored_from_its_backups() {
    rehearse("failed_format_batch_restored_from_its_backups");
}

#[test]
fn batch_of_three_gated_together() {
    rehearse("batch_of_three_gated_together");
}

#[test]
fn batch_member_join_failure_put_back() {
    rehearse("batch_member_join_failure_put_back");
}

#[test]
fn format_batch_two_member_cannot_read_its_world() {
    rehearse("format_batch_two_member_cannot_read_its_world");
}

#[test]
fn candidate_refuses_login() {
    rehearse("candidate_refuses_login");
}

#[test]
fn candidate_stalls_configuration() {
    rehearse("candidate_stalls_configuration");
}
