//! The rollout bucket (CONTRACT C): candidates through the qualification procedure.

use rehearsal_scenarios::rehearse;

#[test]
fn unpullable_candidate() {
    rehearse("unpullable_candidate");
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
